"""Bench: a shot message's arrival → the 获 call's note-on at a separate recorder, live over JACK.

``yuexuan play --auto --cues lishou --osc PORT --shots-log FILE`` runs over a private JACK dummy
server (64-frame periods, synchronous; tests/jack_support.py) to a separate recording process, on
a copy of cues/dashe.toml with a large roster (``--pairs`` more pairs of 士 in 众耦, so that every
shot is a legitimate arrow: 四矢 each). This process sends ``--shots`` shot messages over OSC at
``--rate`` a second, each a 贯 on the archer's own 干 (so each sounds the 获者's call), and stamps
each send on the monotonic clock, which the recorder shares. For every shot, the latency is the
arrival at the recorder of the first note-on of its 获 call (the 宫; its channel and key from the
compiled call, as the player takes it) less the send; side by side, from the same run, the arrival
error of every note of 貍首 itself against the timeline (anchor from ``--report``), and the
player's own shot → call-sent lag (``judging.call_lag_ms`` in the report). Target: p99 ≤ 10 ms.
The sending thread asks for SCHED_FIFO (a scorer's desk that stamps a send and is then held up by
other processes would count its own delay against the player); the player runs as ``play`` does.
The judge judges all shots so far again at each shot (yuexuan/live/judge.py), so the figures by
hundreds of shots show what that costs.

    .venv/bin/python bench/bench_live_judge.py [--shots 300] [--rate 4] [--pairs 36]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import mido
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from jack_support import Recorder, diagnosis, jack_server, log_mark  # noqa: E402

from yuexuan.compiler import compile_file  # noqa: E402
from yuexuan.formats.midimessages import timeline_messages  # noqa: E402
from yuexuan.live import calls as live_calls  # noqa: E402
from yuexuan.live.queue_items import Kind  # noqa: E402

FROM_S = 11.0             # 貍首 from just before the first shooting 节 (selection s)
TARGET_P99_MS = 10.0


def big_sheet(folder: Path, pairs: int) -> Path:
    """cues/dashe.toml with ``pairs`` more pairs of 士 in the 众耦 group (they shoot in 貍首)."""
    extra = "".join(
        f'\n[[pair]]\nid = "众耦{k}"\ngroup = "众耦"\nupper = {{ name = "士{k}上", rank = "士" }}\n'
        f'lower = {{ name = "士{k}下", rank = "士" }}\nhits = ["", "", ""]\n'
        for k in range(2, pairs + 2))
    path = folder / "dashe_big.toml"
    path.write_text((ROOT / "cues" / "dashe.toml").read_text(encoding="utf-8") + extra,
                    encoding="utf-8")
    return path


def shots_of(ceremony, n: int) -> list:
    """``n`` shot messages (archer rank role target result pair): the 士 of pairs of 士, each
    arrow a 贯 on the 干, every archer's first arrow, then every archer's second …: at the bench's
    rate an archer's arrows in the schedule's order would come 0.5 s apart, and a shot identical
    to one within 0.5 s is a duplicate, not judged (docs/play.md)."""
    shi_pairs = {b.pair for b in ceremony.beats if b.shoot} - {
        b.pair for b in ceremony.beats if b.shoot and b.rank != "士"}
    beats = [b for b in ceremony.beats if b.shoot and b.pair in shi_pairs]
    order = sorted(range(len(beats)), key=lambda k: (beats[k].arrow or 0, k))
    out = [[b.archer, b.rank, b.role, "干", "贯", b.pair] for b in (beats[k] for k in order)]
    if len(out) < n:
        raise SystemExit(f"only {len(out)} arrows of 士 in the roster; give more --pairs")
    return out[:n]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_cue(port: int, timeout: float) -> float:
    """The monotonic arrival of the player's first /yuexuan/cue (the show has started)."""
    from pythonosc.dispatcher import Dispatcher
    from pythonosc.osc_server import BlockingOSCUDPServer

    got = []
    d = Dispatcher()
    d.map("/yuexuan/cue", lambda *a: got.append(time.monotonic()))
    server = BlockingOSCUDPServer(("127.0.0.1", port), d)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                     daemon=True).start()
    end = time.monotonic() + timeout
    while not got and time.monotonic() < end:
        time.sleep(0.002)
    server.shutdown()
    server.server_close()
    if not got:
        raise SystemExit("the player sent no /yuexuan/cue")
    return got[0]


def realtime_sender(priority: int = 5) -> bool:
    """Ask SCHED_FIFO for this (sending) thread, as the scorer's desk would run: a send stamped
    and then held up by other processes would count against the player. False where refused."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except (AttributeError, PermissionError, OSError):
        return False


def percentiles(ms: np.ndarray) -> str:
    p50, p99 = np.percentile(ms, [50, 99])
    return f"p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {ms.max():.3f} ms"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shots", type=int, default=300)
    ap.add_argument("--rate", type=float, default=4.0, help="shots a second")
    ap.add_argument("--pairs", type=int, default=36, help="pairs of 士 added to the roster")
    a = ap.parse_args(argv)
    from pythonosc.udp_client import SimpleUDPClient

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        sheet = big_sheet(tmp, a.pairs)
        ceremony = compile_file(sheet)
        lishou = compile_file(sheet, ["lishou"])
        shots = shots_of(ceremony, a.shots)
        until = FROM_S + 2.0 + a.shots / a.rate + 3.0
        messages = timeline_messages(lishou)
        huo = live_calls.call_templates(lishou, messages)[live_calls.huo_key("干")]
        call_key = next(e.key for e in huo if e.kind == Kind.ON)      # (channel, note) of the 宫
        played = live_calls.without_calls(
            messages, live_calls.compiled_calls(lishou, live_calls.live_cues(lishou)))
        expected = [m for m in played if m.cue is not None and m.message.type == "note_on"
                    and m.message.velocity > 0 and FROM_S <= m.onset_s < until]
        osc_port, inbox = free_port(), free_port()
        with jack_server(sync=True) as env:
            mark = log_mark(env)
            rec = Recorder(env, "bench-rec", tmp / "rec.jsonl")
            sent = []
            try:
                play = subprocess.Popen(
                    [sys.executable, "-m", "yuexuan", "play", str(sheet), "--api", "jack",
                     "--port", "bench-rec", "--auto", "--cues", "lishou", "--from", str(FROM_S),
                     "--until", f"{until:.3f}", "--osc", str(osc_port),
                     "--osc-out", f"127.0.0.1:{inbox}", "--shots-log", str(tmp / "log.csv"),
                     "--report", str(tmp / "r.json")],
                    env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE, text=True)
                start = wait_for_cue(inbox, 60) + 1.0
                sender_rt = realtime_sender()
                client = SimpleUDPClient("127.0.0.1", osc_port)
                for i, args in enumerate(shots):
                    time.sleep(max(0.0, start + i / a.rate - time.monotonic()))
                    sent.append(time.monotonic())
                    client.send_message("/yuexuan/shot", args)
                _, err = play.communicate(timeout=until + 60)
            finally:
                rows = rec.stop()
            diag = diagnosis(env, mark)
        if play.returncode != 0:
            raise SystemExit(f"play failed ({play.returncode}): {err}")
        report = json.loads((tmp / "r.json").read_text())
        logged = (tmp / "log.csv").read_text(encoding="utf-8").count("\n") - 1
    anchor = report["anchors"][0]["anchor_monotonic"]
    msgs = [(t, mido.Message.from_bytes(d)) for t, d in rows]
    ons = [(t, m) for t, m in msgs if m.type == "note_on" and m.velocity > 0]
    calls = np.array([t for t, m in ons if (m.channel, m.note) == call_key
                      and m.velocity == huo[[e.kind for e in huo].index(Kind.ON)].data[2]])
    sent = np.array(sent)
    # each shot's call: the first 宫 note-on at or after its send (calls come in shot order)
    idx = np.searchsorted(calls, sent)
    found = idx < len(calls)
    latency_ms = (calls[idx[found]] - sent[found]) * 1e3
    unique = len(set(idx[found].tolist())) == int(found.sum())
    # the music of the same run: each note's arrival less its due time (pairs by channel, key,
    # velocity in time order)
    want, got = {}, {}
    for m in expected:
        want.setdefault((m.message.channel, m.message.note, m.message.velocity), []).append(
            anchor + m.time_s)
    for t, m in ons:
        if (m.channel, m.note) != call_key:
            got.setdefault((m.channel, m.note, m.velocity), []).append(t)
    same = [k for k in want if len(got.get(k, ())) == len(want[k])]
    missing = sum(len(v) for v in want.values()) - sum(len(got.get(k, ())) for k in want)
    note_err_ms = np.abs(np.concatenate([np.sort(got[k]) - np.sort(want[k]) for k in same])) * 1e3
    lag = np.array(report["judging"]["call_lag_ms"])
    print(f"{len(shots)} shots at {a.rate:g}/s over {len(shots) / a.rate:.0f} s, roster "
          f"{len({s[0] for s in shots})} archers of 士 ({a.pairs} pairs added); {logged} logged; "
          f"{int(found.sum())} calls heard ({'one per shot' if unique else 'NOT one per shot'}); "
          f"sender {'SCHED_FIFO' if sender_rt else 'a normal thread'}")
    print(f"shot message → 获 call note-on at the recorder: {percentiles(latency_ms)}")
    print(f"  the player's own shot arrival → call sent:   {percentiles(lag)}")
    print(f"  first 50 shots p99 {np.percentile(latency_ms[:50], 99):.3f} ms, last 50 "
          f"p99 {np.percentile(latency_ms[-50:], 99):.3f} ms (the judge re-judges all shots)")
    print(f"the music of the same run ({len(expected)} note-ons of 貍首, {missing} missing): "
          f"arrival error {percentiles(note_err_ms)}")
    p99 = float(np.percentile(latency_ms, 99))
    print(f"ratio call p99 / note p99: {p99 / max(np.percentile(note_err_ms, 99), 1e-6):.2f}; "
          f"call p99 {'meets' if p99 <= TARGET_P99_MS else 'MISSES'} the {TARGET_P99_MS:g} ms target")
    print(f"{diag}")
    print("SUMMARY " + json.dumps({
        "bench": "live_judge", "shots": len(shots), "calls": int(found.sum()),
        "call_p50_ms": float(np.percentile(latency_ms, 50)), "call_p99_ms": p99,
        "call_max_ms": float(latency_ms.max()),
        "note_p50_ms": float(np.percentile(note_err_ms, 50)),
        "note_p99_ms": float(np.percentile(note_err_ms, 99)), "notes_missing": missing}))
    return 0 if p99 <= TARGET_P99_MS and found.all() and unique else 1


if __name__ == "__main__":
    sys.exit(main())

"""``yuexuan play --osc``: shots reported over OSC from this process, judged live, heard on a
separate JACK recorder, logged, and checked against ``yuexuan check`` on the written log.

The show's clock is learnt from its own ``--osc-out`` notifications: the ``/yuexuan/cue`` of
貍首 arrives when the cue starts playing at ``--from`` (timeline 11 s of the selection), so the
monotonic instant of selection time ``t`` is ``cue arrival + (t − 11)``. Expected strokes and
calls come from the compiled timeline itself.
"""

from __future__ import annotations

import csv
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import mido
import pytest
from pythonosc.udp_client import SimpleUDPClient

from jack_support import Recorder, diagnosis, log_mark
from osc_support import OscInbox, free_udp_port
from cli_support import default_sigint
from yuexuan.live import osc
from yuexuan.formats.midimessages import assign_tracks

ROOT = Path(__file__).resolve().parent.parent
DASHE = ROOT / "cues" / "dashe.toml"
FROM_S, UNTIL_S = 11.0, 31.0       # 貍首 from just before the 上耦's first shooting stroke


def _play(env, osc_port, out_port, log, report, *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "yuexuan", "play", str(DASHE), "--api", "jack", "--cues", "lishou",
         "--from", str(FROM_S), "--auto", "--osc", str(osc_port), "--osc-out",
         f"127.0.0.1:{out_port}", "--shots-log", str(log), "--report", str(report), *extra],
        env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)


def _check_csv(log: Path) -> tuple[list, subprocess.CompletedProcess]:
    done = subprocess.run([sys.executable, "-m", "yuexuan", "check", str(DASHE), str(log),
                           "--format", "csv"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return list(csv.DictReader(done.stdout.splitlines())), done


def _wait_until(t: float) -> None:
    while (left := t - time.monotonic()) > 0:
        time.sleep(min(left, 0.05) if left > 0.003 else 0)


# (archer, loose offset from its stroke in s, result, target, expected reason); the looses go
# out at their instants, timed by their arrival, except the one marked "given", which names its
# time (the ceremony's seconds, an OSC double) and goes out at the stroke
ARROWS = [
    ("上耦上射", 0.0, "贯", "干", "释"),          # on the stroke, pierced: released
    ("上耦下射", 0.25, "贯", "干", "不鼓不释"),   # 250 ms after the stroke: refused
    ("上耦上射", -0.25, "贯", "干", "不鼓不释"),  # 250 ms before it
    ("上耦下射", 0.0, "不中", "", "不中"),        # a miss: no call
    ("上耦上射", 0.03, "贯", "干", "释"),          # given: 30 ms late, inside ±70 ms
    ("上耦下射", 0.0, "扬触", "干", "不贯不释"),  # a near-miss of a 士: no call
]
GIVEN = 4                       # the arrow whose loose names its time
ARRIVAL_SLACK_S = 0.06          # a loose timed by arrival lands within this of when it was sent
BAD = [("/yuexuan/shoot", ["上耦上射"]),                          # wrong address
       ("/yuexuan/shot", [1, 2, 3, 4, 5]),                         # wrong types
       ("/yuexuan/loose", ["王五"]),                                # unknown archer
       ("/yuexuan/shot", ["上耦上射", "士", "上射", "干", "射中"]),  # unknown result
       ("/yuexuan/loose", ["上耦上射", "soon"])]                    # a time that is no number


def test_osc_shots_judged_heard_logged(jack_sync, lishou, ceremony, tmp_path):
    env, diag = jack_sync
    shift = next(c.start for c in ceremony.cues if c.id == "lishou")   # selection → ceremony
    strokes = [b for b in lishou.beats if b.shoot and b.pair == "上耦" and b.time >= FROM_S + 1]
    inbox, osc_port = OscInbox(), free_udp_port()
    rec = Recorder(env, "rec", tmp_path / "rec.jsonl")
    log, report = tmp_path / "shots.csv", tmp_path / "r.json"
    sent = []                       # (monotonic send time of the shot, arrow)
    try:
        play = _play(env, osc_port, inbox.port, log, report, "--port", "rec",
                     "--until", str(UNTIL_S))
        cue_at, _, cue_args = inbox.wait_for("/yuexuan/cue", 20)
        assert cue_args == ["lishou", "貍首"]
        anchor = cue_at - FROM_S                      # monotonic instant of selection 0
        client = SimpleUDPClient("127.0.0.1", osc_port)
        for k, ((archer, dt, result, target, _), beat) in enumerate(zip(ARROWS, strokes)):
            assert beat.archer == archer
            if k == GIVEN:
                _wait_until(anchor + beat.time)
                client.send(osc.message("/yuexuan/loose", [archer, osc.Double(
                    beat.time + shift + dt)]))
            else:
                _wait_until(anchor + beat.time + dt)
                client.send_message("/yuexuan/loose", [archer])
            if len(sent) == 2:                        # bad messages mid-round
                for address, args in BAD:
                    client.send_message(address, args)
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(
                    b"not osc at all", ("127.0.0.1", osc_port))
            _wait_until(anchor + beat.time + dt + 1.0)
            sent.append((time.monotonic(), archer))
            client.send_message("/yuexuan/shot", [archer, "士", archer[-2:], target, result,
                                                  "上耦", 3])
        out, err = play.communicate(timeout=60)
    finally:
        msgs = [(t, mido.Message.from_bytes(d)) for t, d in rec.stop()]
        inbox.close()
    assert play.returncode == 0, err
    summary = json.loads(report.read_text())["judging"]

    # every shot judged, its verdict sent; the same verdicts from check on the written log
    verdicts = inbox.of("/yuexuan/verdict")
    assert [v[2][0] for v in verdicts] == list(range(1, len(ARROWS) + 1)), diag()
    assert [v[2][7] for v in verdicts] == [a[4] for a in ARROWS], (verdicts, diag())
    checked, done = _check_csv(log)
    assert [r["reason"] for r in checked] == [a[4] for a in ARROWS]
    # the cue's end closes the round: the 释获者's announcement, the one check makes of the log
    (final,) = [m[2] for m in inbox.of("/yuexuan/tally") if m[2][4] == 1]
    assert f"round 3: 右 {final[1]} 算, 左 {final[2]} 算 — {final[3]}" in done.stderr
    assert final[1:4] == [2, 0, "右贤于左一纯"] and "round 3 ends" in out
    assert [r["released"] for r in checked] == ["true" if a[4] == "释" else "false" for a in ARROWS]
    for v, r in zip(verdicts, checked):
        assert float(r["time"]) == pytest.approx(v[2][3], abs=1e-6)
    # the judged time is the loose's (not the shot's, a second later), on the ceremony's clock:
    # its arrival near when it was sent, or exactly the time it named
    offsets = [float(r["time"]) - (b.time + shift) for b, r in zip(strokes, checked)]
    for k, ((archer, dt, *_), off) in enumerate(zip(ARROWS, offsets)):
        slack = 1e-6 if k == GIVEN else ARRIVAL_SLACK_S
        assert off == pytest.approx(dt, abs=slack), (offsets, diag())
    # the bad messages were reported, and the show went on (shots after them judged, rc 0)
    assert len(summary["bad_messages"]) == len(BAD) + 1, summary["bad_messages"]
    assert "unknown archer" in json.dumps(summary["bad_messages"], ensure_ascii=False)

    # heard: one 获 call (宫 loud, then 商 soft) per hit, from the shot's arrival, within 1 s
    huo = [n for n in lishou.notes if n.instrument == "获者·干"]        # the hits are on the 干
    gong, shang = huo[0], huo[1]
    channel = next(t.channel for t in assign_tracks(lishou) if t.name == "获者·干")
    ons = [(t, m) for t, m in msgs if m.type == "note_on" and m.velocity and m.channel == channel]
    gongs = [t for t, m in ons if (m.note, m.velocity) == (gong.midi, gong.velocity)]
    shangs = [t for t, m in ons if (m.note, m.velocity) == (shang.midi, shang.velocity)]
    hits = [t for t, (archer, dt, result, *_) in zip([s[0] for s in sent], ARROWS)
            if result == "贯"]
    assert len(gongs) == len(hits) == len(shangs), (gongs, hits, diag())
    lag_ms = [round(1000 * (g - t), 2) for t, g in zip(hits, gongs)]
    print(f"shot sent → 获 call's 宫 on the recorder: {lag_ms} ms; the player's own "
          f"arrival → first call message sent: {summary['call_lag_ms']} ms; {diag()}")
    for t_shot, t_gong, t_shang in zip(hits, gongs, shangs):
        assert 0 <= t_gong - t_shot < 1.0
        assert t_shang - t_gong == pytest.approx(shang.time - gong.time, abs=0.01)
    # no compiled 获 call of the round: every call heard is one of the live hits' (counted above);
    # the compiled ones would have fallen 1.5 s after each planned stroke in the window
    compiled = [anchor + n.time for n in huo if FROM_S <= n.time < UNTIL_S and n.velocity == gong.velocity]
    assert compiled, "the window should hold compiled calls to leave out"
    assert all(min(abs(t - c) for t in gongs) > 0.1 for c in compiled if c < hits[-1] - 2)

    # the beats went out as /yuexuan/beat on the strokes of the window
    beats = inbox.of("/yuexuan/beat")
    planned = [b for b in lishou.beats if FROM_S <= b.time < UNTIL_S]
    assert [m[2][2] for m in beats] == [b.jie for b in planned]
    assert all(abs(m[0] - (anchor + b.time)) < 0.05 for m, b in zip(beats, planned))




def test_sigkill_keeps_every_verdict_sent(jack_async, tmp_path):
    """SIGKILL mid-round: every shot whose /yuexuan/verdict had arrived is in the log, and check
    reads the log (a last line cut short is dropped with a warning)."""
    env = jack_async
    inbox, osc_port = OscInbox(), free_udp_port()
    log, report = tmp_path / "shots.csv", tmp_path / "r.json"
    play = _play(env, osc_port, inbox.port, log, report)
    try:
        inbox.wait_for("/yuexuan/cue", 20)
        client = SimpleUDPClient("127.0.0.1", osc_port)
        archers = ["上耦上射", "上耦下射", "次耦上射", "次耦下射"]
        k = 0
        while len(inbox.of("/yuexuan/verdict")) < 12:
            a = archers[k % 4]
            client.send_message("/yuexuan/loose", [a])
            client.send_message("/yuexuan/shot", [a, "士", a[-2:], "干", "贯",
                                                  a[:2], 3])
            k += 1
            time.sleep(0.01)
            assert k < 400, "verdicts do not come"
        play.send_signal(signal.SIGKILL)
        play.wait(10)
        time.sleep(0.2)                       # the last datagrams in flight
    finally:
        if play.poll() is None:
            play.kill()
        inbox.close()
    assert play.returncode == -signal.SIGKILL
    verdicts = inbox.of("/yuexuan/verdict")
    rows, done = _check_csv(log)
    assert len(rows) >= len(verdicts) >= 12
    for v in verdicts:
        number, archer, _, time_s = v[2][:4]
        row = rows[number - 1]
        assert row["archer"] == archer and float(row["time"]) == pytest.approx(time_s, abs=1e-6)
        assert row["reason"] == v[2][7]                 # check's verdict is the one sent


def test_osc_control_go_hold_stop_panic(jack_sync, tmp_path):
    """/yuexuan/go, hold (twice: hold, resume), stop and panic do what the keys do; --osc-out
    sends a /yuexuan/cue at each cue start."""
    env, diag = jack_sync
    inbox, osc_port = OscInbox(), free_udp_port()
    rec = Recorder(env, "rec", tmp_path / "rec.jsonl")
    lines: list = []
    try:
        play = subprocess.Popen(
            [sys.executable, "-m", "yuexuan", "play", str(DASHE), "--api", "jack", "--port", "rec",
             "--cues", "sixia_bin,sixia_gong", "--osc", f"127.0.0.1:{osc_port}", "--osc-out",
             f"127.0.0.1:{inbox.port}"],
            env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
        threading.Thread(target=lambda: lines.extend(line.rstrip() for line in play.stdout),
                         daemon=True).start()

        def expect(pattern, timeout=10.0):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if any(line.startswith(pattern) for line in lines):
                    return
                time.sleep(0.01)
            raise AssertionError(f"no line {pattern!r}: {lines}; {diag()}")

        client = SimpleUDPClient("127.0.0.1", osc_port)
        expect("waiting", 20)
        client.send_message("/yuexuan/go", [])
        expect("playing sixia_bin")
        time.sleep(1.0)
        client.send_message("/yuexuan/hold", [])
        expect("held")
        client.send_message("/yuexuan/hold", [])
        expect("» resumed")
        client.send_message("/yuexuan/stop", [])
        expect("stopping sixia_bin")
        expect("waiting sixia_bin", 15)
        client.send_message("/yuexuan/go", [])
        expect("playing sixia_gong")
        time.sleep(1.0)
        panic_at = time.monotonic()
        client.send_message("/yuexuan/panic", [])
        play.wait(15)
    finally:
        if play.poll() is None:
            play.kill()
        msgs = [(t, mido.Message.from_bytes(d)) for t, d in rec.stop()]
        inbox.close()
    assert play.returncode == 0, play.stderr.read()
    assert any("PANIC" in line for line in lines)
    assert [m[2] for m in inbox.of("/yuexuan/cue")] == [["sixia_bin", "肆夏"],
                                                         ["sixia_gong", "肆夏"]]
    ons = [t for t, m in msgs if m.type == "note_on" and m.velocity]
    assert ons and not [t for t in ons if t > panic_at + 0.1]


@pytest.fixture
def jack_sync(jack):
    """The session's synchronous server (tests/conftest.py) and what its log says of this test."""
    mark = log_mark(jack)
    return jack, (lambda: diagnosis(jack, mark))

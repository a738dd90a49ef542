"""``yuexuan play`` over JACK (dummy backend, 64-frame periods), heard by a separate process.

The recorder (tests/jack_support.py) stamps each arriving message with the monotonic clock,
which both processes share; ``yuexuan play --report`` says which monotonic instant it mapped
timeline 0 to. Expected notes come from the compiled Timeline itself.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import rtmidi
from jack_support import (
    PERIOD_FRAMES,
    RATE_HZ,
    JackServer,
    MidiDump,
    Recorder,
    diagnosis,
    log_mark,
    worst_late_s,
)
from play_support import (
    ACTIVE_SENSING,
    Play,
    as_messages,
    assert_nothing_left_sounding,
    first_note_on,
    note_ons,
    resets_before,
    sounding_after,
)

from yuexuan.compiler import compile_file
from yuexuan.live import delivery
from yuexuan.live import timecode as sync
from yuexuan.timeline import save_json, select

ROOT = Path(__file__).resolve().parent.parent
DASHE = ROOT / "cues" / "dashe.toml"
FROM_S, UNTIL_S = 40.0, 55.0          # a 15 s slice of the 224 s 貍首 cue


@pytest.fixture
def jack_diag(jack):
    """``jack_diag()``: the server's mode and the xruns it logged during this test."""
    mark = log_mark(jack)
    return lambda: diagnosis(jack, mark)


@pytest.fixture
def jack_late(jack):
    """``jack_late()``: how late (s) the server's latest cycle began during this test, by its log:
    a single event's bound widens by it (a message sent on time is stamped at the cycle that
    takes it)."""
    mark = log_mark(jack)
    return lambda: worst_late_s(jack, mark)


def _errors_ms(notes, ons, anchor, diag=lambda: ""):
    """Arrival − due (ms) per expected note, pairing by key and velocity in time order."""
    want, got = {}, {}
    for n in notes:
        want.setdefault((n.midi, n.velocity), []).append(anchor + n.time)
    for t, m in ons:
        got.setdefault((m.note, m.velocity), []).append(t)
    counts = {k: (len(got.get(k, [])), len(want.get(k, []))) for k in set(got) | set(want)}
    wrong = {k: c for k, c in sorted(counts.items()) if c[0] != c[1]}
    assert not wrong, (f"note-ons received vs expected per (key, velocity): {wrong} "
                       f"({sum(max(0, w - g) for g, w in wrong.values())} missing of "
                       f"{len(notes)}); {diag()}")
    return np.concatenate([np.sort(got[k]) - np.sort(want[k]) for k in want]) * 1e3


def test_lishou_slice_arrives_complete_and_on_time(jack, jack_diag, lishou, tmp_path):
    """Every note of a 15 s slice of 貍首 arrives, tuned first, on time.

    On time here means: median arrival error ≤ 3 ms and p95 ≤ 20 ms. The Done-when target, p95 ≤
    3 ms over the whole cue, is a timing target and lives in the benchmark (``bench/bench_live.py
    --jack-cue lishou``, figures in the README): on this shared VM the host now and then stalls
    the dummy JACK server itself (in one quiet hour the same slice gave p95 1.2 ms, then 5.5 ms
    with jackd logging 369 cycles late by more than a period and the player's own p99 at 6 ms),
    which no player can make up for."""
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    try:
        play = Play(jack, "--port", "rec", "--cues", "lishou", "--from", str(FROM_S),
                    "--until", str(UNTIL_S), "--auto", report=tmp_path / "r.json")
        rc, err, report = play.finish(60)
    finally:
        msgs = as_messages(rec.stop())
    assert rc == 0, err
    (anchor_row,) = report["anchors"]
    anchor = anchor_row["anchor_monotonic"]
    expected = [n for n in lishou.notes if FROM_S <= n.time < UNTIL_S]
    assert len(expected) > 100
    ons = note_ons(msgs)
    err_ms = _errors_ms(expected, ons, anchor, jack_diag)
    p95 = np.percentile(np.abs(err_ms), 95)
    figures = (f"lishou {FROM_S}-{UNTIL_S} s over JACK/64: {len(err_ms)} notes, arrival error "
               f"p50 {np.percentile(err_ms, 50):.3f} ms, p95 {p95:.3f} ms, "
               f"max {err_ms.max():.3f} ms; player's own p99 {report['timing_ms']['p99']:.3f} ms"
               f"; {jack_diag()}")
    print(figures)
    assert np.percentile(np.abs(err_ms), 50) <= 3.0 and p95 <= 20.0, figures
    first_on = ons[0][0]
    tuning = [t for t, m in msgs if m.type == "sysex" and list(m.data[:4]) == [0x7F, 0x7F, 8, 2]]
    assert tuning and max(tuning) < first_on           # MTS tuning before the first note
    # a killed run may have left any channel sounding: CC 123 (all notes off) and CC 120 (all
    # sound off) on all 16 channels, before the first note
    resets = {(m.control, m.channel) for t, m in msgs
              if m.type == "control_change" and m.value == 0 and t < first_on}
    assert resets >= {(cc, ch) for cc in (123, 120) for ch in range(16)}, sorted(resets)
    assert_nothing_left_sounding(msgs)


def test_sighup_mid_cue_leaves_nothing_sounding(jack, tmp_path):
    """SIGHUP (the operator's terminal or SSH session closed) ends the show as Ctrl-C does
    (SIGINT, SIGTERM: tests/test_kill_commands.py; SIGQUIT: the foot-switch test below)."""
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    try:
        play = Play(jack, "--port", "rec", "--cues", "lishou", "--from", "40", "--auto",
                    "--pitch-bend", report=tmp_path / "r.json")
        play.expect(r"^playing lishou")
        time.sleep(1.5)
        sent = time.monotonic()
        play.proc.send_signal(signal.SIGHUP)
        rc, err, report = play.finish(15)
    finally:
        msgs = as_messages(rec.stop())
    assert rc == 130 and "interrupted; all notes off" in err
    assert not [m for t, m in msgs if m.type == "note_on" and m.velocity and t > sent + 0.05]
    assert len(note_ons(msgs)) > 10
    assert_nothing_left_sounding(msgs)
    # --pitch-bend: no MTS tuning, a bend on the channel just before each pitched note
    assert not [m for _, m in msgs if m.type == "sysex"]
    last_bend = {}
    bent = 0
    for t, m in msgs:
        if m.type == "pitchwheel":
            last_bend[m.channel] = t
        elif m.type == "note_on" and m.velocity and m.channel in last_bend:
            bent += abs(t - last_bend[m.channel]) < 0.002
    assert bent > 5


def test_operator_go_soft_stop_go_panic(jack, jack_diag, tmp_path):
    tl = compile_file(DASHE, ["sixia_bin", "sixia_gong"])
    first, second = tl.cues
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    try:
        play = Play(jack, "--port", "rec", "--cues", "sixia_bin,sixia_gong",
                    report=tmp_path / "r.json")
        play.expect(r"^waiting")
        play.say("go")
        play.expect(r"^playing sixia_bin")
        time.sleep(2.0)                 # the stop then ends it at 5.8 s: 12 notes to time
        stop_said = play.say("stop")
        play.expect(r"^waiting", 10)
        play.say("go")
        play.expect(r"^playing sixia_gong")
        time.sleep(1.0)
        panic_said = play.say("panic")
        rc, err, report = play.finish(15)
    finally:
        msgs = as_messages(rec.stop())
    assert rc == 0, err
    a1, a2 = (r["anchor_monotonic"] for r in report["anchors"])
    assert [r["cues"] for r in report["anchors"]] == [["sixia_bin"], ["sixia_gong"]]
    # soft stop: the first cue ends at the first phrase start after the stop, every note before
    # it arrives, none after it
    boundary = min(p for p in first.phrases if p > stop_said - a1)
    go2 = a2 + second.start                                    # when the second cue began
    ons1 = [(t, m) for t, m in note_ons(msgs) if t < go2 - 0.001]
    err = _errors_ms([n for n in tl.notes if n.cue == first.id and n.time < boundary], ons1, a1,
                     jack_diag)
    # secondary timing check (the Done-when p95 ≤ 3 ms is test_lishou_slice's): 10 ms bounds a
    # scheduler regression; over at least 10 notes, so that one late cycle is not the p95
    # (with 3 notes it was their max: [12.07, 8.43, 1.01] ms failed once on a loaded VM)
    assert len(err) >= 10
    assert np.percentile(np.abs(err), 95) <= 10.0, f"errors {np.round(err, 2)} ms; {jack_diag()}"
    last_release = max(t for t, m in msgs if m.type == "note_off" and t < go2 - 0.001)
    assert last_release - a1 <= boundary + 0.003
    # GO: the second cue's notes at their times from its GO; panic silences it at once
    ons2 = [(t, m) for t, m in note_ons(msgs) if t >= go2 - 0.001]
    expected2 = [n for n in tl.notes if n.cue == second.id and a2 + n.time < panic_said]
    assert ons2 and len(ons2) >= len(expected2) - 2
    assert not [t for t, _ in ons2 if t > panic_said + 0.05]
    assert_nothing_left_sounding(msgs)


def test_foot_switch_go_msc_stop_and_sync_out(jack, jack_diag, jack_late, tmp_path, monkeypatch):
    tl = compile_file(DASHE, ["sixia_bin", "sixia_gong"])
    monkeypatch.setenv("JACK_DEFAULT_SERVER", jack["JACK_DEFAULT_SERVER"])
    monkeypatch.setenv("JACK_NO_START_SERVER", "1")
    pedal = rtmidi.MidiOut(rtmidi.API_UNIX_JACK, name="pedal")
    pedal.open_virtual_port("out")
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    try:
        play = Play(jack, "--port", "rec", "--cues", "sixia_bin,sixia_gong", "--control",
                    "pedal", "--msc", "1", "--clock", "--bpm", "90", "--mtc",
                    report=tmp_path / "r.json")
        play.expect(r"^waiting")
        pedal.send_message([0xB0, 64, 127])                        # sustain pedal down: GO
        play.expect(r"^playing sixia_bin")
        time.sleep(1.5)
        pedal.send_message(sync.msc_message("stop", 1).bytes())    # MSC STOP: soft stop
        play.expect(r"MIDI stop: soft stop", 5)
        play.expect(r"^waiting", 10)
        time.sleep(0.3)
        play.proc.send_signal(signal.SIGQUIT)          # Ctrl-\\: ends the show as Ctrl-C does
        rc, err, report = play.finish(15)
    finally:
        msgs = as_messages(rec.stop())
        pedal.close_port()
        pedal.delete()
    assert rc == 130, err
    anchor = report["anchors"][0]["anchor_monotonic"]
    show0 = anchor + tl.cues[0].start                     # the show clock starts at the GO
    msc = [(t, sync.parse_msc(m, 1)) for t, m in msgs if m.type == "sysex" and
           sync.parse_msc(m, 1)]
    assert [c for _, c in msc] == [("go", "1")], f"MSC received: {msc}; {jack_diag()}"
    # one message, so a bound of a few JACK periods (3 ms typical)
    assert abs(msc[0][0] - show0) < 0.010 + jack_late(), (
        f"MSC GO {1e3 * (msc[0][0] - show0):.2f} ms from the show start; {jack_diag()}")
    # MIDI clock: start, then 24 pulses a beat at 90 BPM, stop at the end
    kinds = [m.type for _, m in msgs if m.type in ("start", "stop", "clock")]
    assert kinds[0] == "start" and kinds[-1] == "stop", (
        f"clock messages begin {kinds[:2]}, end {kinds[-2:]}; {jack_diag()}")
    pulses = np.array([t for t, m in msgs if m.type == "clock"])
    k = np.arange(len(pulses))
    late = pulses - (show0 + k * 60 / 90 / 24)        # each pulse against its own deadline
    # never early; late by at most 50 ms at p95 (3 ms typical; 29 ms seen once on a busy VM)
    # (the show's own dispatch timing, in the message: whether a late burst left the scheduler
    # late, or left it on time and arrived late)
    assert len(pulses) > 50 and np.all(late > -0.0005) and np.percentile(late, 95) < 0.050, (
        f"{len(pulses)} pulses, late min {late.min() * 1e3:.2f} ms, p95 "
        f"{np.percentile(late, 95) * 1e3:.2f} ms; the show's dispatch {report['timing_ms']}, "
        f"realtime {report['realtime']}; {jack_diag()}")
    # MTC: every complete quarter-frame cycle decodes to the show time it was sent at
    qf = [(t, m.frame_type, m.frame_value) for t, m in msgs if m.type == "quarter_frame"]
    cycles = [qf[i:i + 8] for i in range(len(qf) - 7) if qf[i][1] == 0]
    cycles = [c for c in cycles if [p for _, p, _ in c] == list(range(8))]
    assert len(cycles) > 20, f"{len(cycles)} complete MTC cycles of {len(qf)} quarter frames"
    off = []
    for c in cycles:
        v = [val for _, _, val in c]
        seconds = (v[6] | (v[7] & 1) << 4) * 3600 + (v[4] | v[5] << 4) * 60 + (
            v[2] | v[3] << 4) + (v[0] | v[1] << 4) / 25
        assert v[7] >> 1 == 1                               # 25 fps
        off.append(c[0][0] - show0 - seconds)
    off = np.abs(off)
    # decoded right: a cycle one frame off would be 40 ms out; median within a JACK period or two
    assert np.percentile(off, 50) < 0.003 and off.max() < 0.030 + jack_late(), (
        f"MTC cycle offsets p50 {np.percentile(off, 50) * 1e3:.2f} ms, max {off.max() * 1e3:.2f} ms; "
        f"{jack_diag()}")
    assert_nothing_left_sounding(msgs)


def test_clock_follows_each_cues_beat_from_a_saved_timeline(jack, jack_diag, jack_late, tmp_path):
    """The live MIDI clock takes each cue's beat_s from the timeline: with 貍首's edited from
    1.0 to 0.75 s in a saved timeline, its pulses arrive 0.75/24 s apart, while 去侯 before it
    keeps its own 0.5 s beat (24 pulses a quarter note)."""
    tl = compile_file(DASHE)
    saved = tmp_path / "edited.json"
    save_json(tl, saved)
    doc = json.loads(saved.read_text(encoding="utf-8"))
    (edited,) = [c for c in doc["cues"] if c["id"] == "lishou"]
    assert edited["beat_s"] == 1.0
    edited["beat_s"] = 0.75
    saved.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    # --cues cuts the two cues out of the saved timeline: time 0 is then 去侯's start (README)
    cues = {c.id: c for c in select(tl, ["round3_quhou", "lishou"]).cues}
    before, lishou = cues["round3_quhou"], cues["lishou"]
    assert before.start == 0.0 and before.beat_s == 0.5 and before.end < lishou.start
    lo, hi = before.start, lishou.start + 3.5         # 去侯, the pause, 貍首's first 3.5 s
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    try:
        play = Play(jack, "--port", "rec", "--cues", "round3_quhou,lishou", "--from", str(lo),
                    "--until", str(hi), "--auto", "--clock", report=tmp_path / "r.json",
                    sheet=saved)
        rc, err, report = play.finish(60)
    finally:
        msgs = as_messages(rec.stop())
    assert rc == 0, err
    (anchor_row,) = report["anchors"]
    # --auto: timeline time t is due at anchor + t; each pulse in timeline seconds
    pulses = np.array([t for t, m in msgs if m.type == "clock"]) - anchor_row["anchor_monotonic"]
    for start, end, beat_s in ((before.start, lishou.start, 0.5), (lishou.start, None, 0.75)):
        inside = pulses[(pulses >= start - 0.0005) & (pulses < (end or np.inf) - 0.0005)]
        period = beat_s / sync.PPQN
        late = inside - (start + np.arange(len(inside)) * period)   # pulse k against k·period
        mean_gap = (inside[-1] - inside[0]) / (len(inside) - 1)
        gap = np.median(np.diff(inside))
        figures = (f"{len(inside)} pulses from {start:.2f} s: mean gap {mean_gap * 1e3:.3f} ms, "
                   f"median gap {gap * 1e3:.3f} ms, want {period * 1e3:.3f} ms; late min "
                   f"{late.min() * 1e3:.2f} ms, median {np.median(late) * 1e3:.2f} ms; "
                   f"{jack_diag()}")
        print(figures)
        if end is not None:                                  # every pulse up to the next cue
            assert len(inside) == int(np.ceil((end - start) / period - 1e-9)), figures
        assert len(inside) > 50 and abs(mean_gap - period) < 0.0002, figures
        assert abs(gap - period) < 0.0015, figures          # within a JACK period (1.33 ms)
        assert late.min() > -0.0005 and np.median(late) < 0.003, figures
    # the first pulse alone: the pulses' median lateness bound (3 ms) plus one JACK period, by which
    # the dummy server may deliver a single event late when the host stalls a cycle (seen: 3.26 ms
    # with 19 cycles late by more than a period under load)
    assert pulses[0] == pytest.approx(before.start, abs=0.003 + PERIOD_FRAMES / RATE_HZ + jack_late())


def test_port_lost_and_back(jack, tmp_path):
    """The destination (JACK's own jack_midi_dump) goes away while notes sound, and one of that
    name comes back: play says so and counts what it could not send; the returned destination
    gets All Notes Off and All Sound Off on every channel first, so the notes that were sounding
    at the loss are released there, then the tuning, before any new note; at the end nothing is
    left sounding."""
    first = MidiDump.started(jack, "rec")
    second = None
    try:
        play = Play(jack, "--port", "rec", "--cues", "lishou", "--from", "40", "--until", "50",
                    "--auto", report=tmp_path / "r.json")
        play.expect(r"^playing lishou")
        # the destination goes while notes sound (as its own record shows)
        assert first.wait_for(lambda m: len(note_ons_of(m)) > 10 and sounding_after(b for _, b in m), 8)
        at_loss = [b for _, b in first.stop()]
        play.expect(r"has gone", 5)
        time.sleep(1.0)                 # the destination stays away a second: notes fall due
        second = MidiDump.started(jack, "rec")
        play.expect(r"is back", 5)
        rc, err, report = play.finish(30)
        second.wait_for(lambda m: [b for _, b in m].count(bytes([ACTIVE_SENSING])) >= 2, 3)
    finally:
        later = [b for _, b in second.stop()] if second else []
        first.stop()
    assert rc == 0, err
    assert report["dropped"] > 0 and "dropped while the port was gone" in err
    sounding = sounding_after(at_loss)
    assert sounding, "no note was sounding when the destination went"
    # first the resets on all 16 channels, then the tuning, before any note (a note could once
    # slip out between the reconnection and the setup: the port is now held until the show has
    # re-sent it). The recorder keeps 127 messages of a cycle: of this burst of some 160 it may
    # lose the setup's tail, never its head.
    resets = {(cc, ch) for cc in (123, 120) for ch in range(16)}
    assert resets_before(later, len(resets)) == resets and later[len(resets)][0] == 0xF0, \
        (later[:40], second.errors, second.overflows, play.seen, err)
    first_on = first_note_on(later)
    assert first_on is not None
    released = {ch for cc, ch in resets_before(later, first_on) if cc == 123}
    assert {ch for ch, _ in sounding} <= released, (dict(sounding), sorted(released))
    assert not sounding_after(later)
    assert report["delivery"]["confirmed"]


def note_ons_of(msgs):
    """The note-ons among a MidiDump's ``(frame, bytes)`` messages."""
    return [b for _, b in msgs if b[0] & 0xF0 == 0x90 and len(b) == 3 and b[2] > 0]


def test_list_ports_and_missing_port(jack, tmp_path):
    rec = Recorder(jack, "recorder-x", tmp_path / "x.jsonl")
    try:
        listing = subprocess.run([sys.executable, "-m", "yuexuan", "play", "--list-ports",
                                  "--api", "jack"], env=jack, cwd=ROOT, capture_output=True,
                                 text=True, timeout=30)
        missing = subprocess.run([sys.executable, "-m", "yuexuan", "play", str(DASHE), "--api",
                                  "jack", "--port", "nosuch", "--auto"], env=jack, cwd=ROOT,
                                 capture_output=True, text=True, timeout=30)
    finally:
        rec.stop()
    assert listing.returncode == 0 and "recorder-x:in" in listing.stdout
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        missing.stderr.strip()] and "no MIDI output port contains 'nosuch'" in missing.stderr


def test_jack_server_killed_and_back(jack_restartable, tmp_path, monkeypatch):
    """jackd killed mid-cue (SIGTERM here: a SIGKILLed jackd may leave JACK's shared metadata
    database locked, and the next servers on the machine, other tests' too, then took over 10 s to
    start; libjack tells its clients the same way, by the socket closing): play says so within
    1 s and plays on by the clock (the notes due meanwhile counted); a server of that name
    started again gets new clients, and the recorder (a new one: the old one died with its
    server) gets the tuning and the notes within 2 s; the foot switch's input is re-created too."""
    server = jack_restartable
    for k in ("JACK_DEFAULT_SERVER", "JACK_NO_START_SERVER"):
        monkeypatch.setenv(k, server.env[k])
    pedal = rtmidi.MidiOut(rtmidi.API_UNIX_JACK, name="pedal")
    pedal.open_virtual_port("out")
    rec = Recorder(server.env, "rec", tmp_path / "a.jsonl")
    second = None
    try:
        play = Play(server.env, "--port", "rec", "--cues", "lishou", "--from", "40", "--auto",
                    "--control", "pedal", report=tmp_path / "r.json")
        play.expect(r"^playing lishou")
        time.sleep(0.5)
        killed = server.kill(signal.SIGTERM)
        play.expect(r"JACK server has shut down", 5)
        noticed = time.monotonic()
        pedal.delete()          # while no server runs: a dead client deleted later crashes libjack
        pedal = None
        first = as_messages(rec.stop())
        launched = time.monotonic()
        up = server.start()             # when the server answered (play may have found it first)
        for attempt in range(3):        # the test's recorder (not play) may lose the race with
            try:                        # the server's first clients: "Cannot open rec client"
                second = Recorder(server.env, "rec", tmp_path / f"b{attempt}.jsonl")
                break
            except RuntimeError:
                if attempt == 2:
                    raise
                time.sleep(0.2)
        pedal = rtmidi.MidiOut(rtmidi.API_UNIX_JACK, name="pedal")
        pedal.open_virtual_port("out")
        play.expect(r"JACK server is back", 5)
        play.expect(r"is back; output resumed", 5)
        for _ in range(15):     # the control input comes back with the port (polled every 0.5 s)
            pedal.send_message([0xB0, 64, 127])             # GO: --auto has no cue left
            try:
                play.expect(r"MIDI go: no cue left", 0.2)
                break
            except AssertionError:
                pedal.send_message([0xB0, 64, 0])
        else:
            raise AssertionError(f"the foot switch never reached play again; saw {play.seen}")
        # the notes are asserted within 2 s of the server's return: the show runs that long (the
        # foot switch can be back before the first note after the return: failed 2 in 3 so)
        time.sleep(max(0.0, up + 2.2 - time.monotonic()))
        play.proc.send_signal(signal.SIGINT)
        rc, err, report = play.finish(15)
    finally:
        later = as_messages(second.stop()) if second else []
        rec.kill()
        if pedal is not None:
            pedal.delete()
    assert rc == 130, err
    assert note_ons(first)
    assert noticed - killed < 1.0, f"noticed {noticed - killed:.2f} s after the kill"
    (outage,) = report["jack_server_outages"]
    assert outage["lost_monotonic"] - killed < 1.0 and outage["back_monotonic"] > launched
    assert report["notes_dropped"] > 0                # the show clock ran on through the outage
    # the resets first, then the tuning and the notes, all within 2 s of the server's return
    assert later and later[0][1].type == "control_change", [m.type for _, m in later[:5]]
    tuning = next(t for t, m in later if m.type == "sysex")
    ons = note_ons(later)
    assert ons and tuning < ons[0][0], [m.type for _, m in later]
    figures = (f"killed→noticed {noticed - killed:.3f} s; server up→tuning {tuning - up:.3f} s, "
               f"→first note {ons[0][0] - up:.3f} s; {report['notes_dropped']} notes not sent")
    print(figures)
    assert tuning - up <= 2.0 and ons[0][0] - up <= 2.0, figures
    assert_nothing_left_sounding(later)


def test_the_witness_waits_for_a_port_listed_late(jack, monkeypatch):
    """A port opened a moment after the witness looks for it (a loaded server lists a new port
    late) is found, and a marker sent through it is confirmed; a port that never comes is given
    up after the bound, not waited for."""
    seed = int(os.environ.get("YUEXUAN_TEST_SEED", random.randrange(1 << 32)))
    late_s = random.Random(seed).uniform(0.02, 0.3)
    monkeypatch.setenv("JACK_DEFAULT_SERVER", jack["JACK_DEFAULT_SERVER"])
    monkeypatch.setenv("JACK_NO_START_SERVER", "1")
    out = rtmidi.MidiOut(rtmidi.API_UNIX_JACK, name="late")
    witness = delivery.Witness(rtmidi.MidiIn(rtmidi.API_UNIX_JACK, name="late-witness"))
    token = f"late-{secrets.token_hex(4)}"
    opener = threading.Timer(late_s, out.open_virtual_port, [token])
    try:
        opener.start()
        t0 = time.monotonic()
        found = witness.attach(token, within_s=late_s + 0.5)
        waited_s = time.monotonic() - t0
        opener.join()
        assert found and waited_s >= late_s - 0.005, (seed, late_s, waited_s)
        result = delivery.confirm(out.send_message, witness)
        assert result.confirmed, (seed, result)
        t0 = time.monotonic()
        assert not witness.attach(f"never-{secrets.token_hex(4)}", within_s=0.1)
        assert 0.1 <= time.monotonic() - t0 < 0.5
    finally:
        opener.cancel()
        witness.close()
        out.close_port()
        out.delete()

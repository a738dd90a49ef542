"""``play --hits-midi PORT``: a hit sensor on each 侯, over JACK from a virtual sender.

This process opens a JACK MIDI output (``pads:out``, an e-drum trigger module's stand-in) and a
JACK recorder runs beside the player (tests/jack_support.py). The player runs 貍首 from just
before the 上耦's first shooting stroke with ``--hits-midi pads --osc --osc-out --shots-log``; the
show's clock is learnt from its ``/yuexuan/cue`` notification (sent when 貍首 starts at
``--from``) and made exact afterwards by the ``--report`` anchor. Each pad note is then checked
against the timeline's strokes and the courtyard's distances, independently of yuexuan.live.hits:
the archer is the one whose stroke the hit less the flight lies nearest, the judged time his loose
(sent over OSC) or the hit less the flight, 贯 on the pad's 侯; ``yuexuan check`` on the log gives
the live verdicts; each called hit sounds the 获 call within 1 s; a scorer's ``/yuexuan/correct``
(the sensor's 贯 was a 扬触) rewrites the log, and check agrees.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import rtmidi
from cli_support import default_sigint
from jack_support import Recorder, diagnosis, log_mark, worst_late_s
from osc_support import OscInbox, free_udp_port
from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.udp_client import SimpleUDPClient

from yuexuan.compiler import compile_file
from yuexuan.rite import courtyard

ROOT = Path(__file__).resolve().parent.parent
DASHE = ROOT / "cues" / "dashe.toml"
FROM_S, UNTIL_S = 11.0, 24.0          # 貍首 (selection s): the 上耦's first two shooting 节
PADS = {"大侯": 36, "参": 38, "干": 40}   # cues/dashe.toml [hits_midi]
SPEED_M_S = 60.0                       # its arrow_speed_m_s


def _loose(archer: str, time_s: float):
    """/yuexuan/loose archer time, the time an OSC double (a float32 is 0.1 ms coarse here)."""
    b = OscMessageBuilder("/yuexuan/loose")
    b.add_arg(archer, OscMessageBuilder.ARG_TYPE_STRING)
    b.add_arg(float(time_s), OscMessageBuilder.ARG_TYPE_DOUBLE)
    return b.build()


def test_pads_on_the_targets_are_judged_as_the_schedule_says(jack, tmp_path, monkeypatch):
    monkeypatch.setenv("JACK_DEFAULT_SERVER", jack["JACK_DEFAULT_SERVER"])   # the pads' client
    monkeypatch.setenv("JACK_NO_START_SERVER", "1")
    ceremony = compile_file(DASHE)
    shift = ceremony.cue("lishou").start                # selection s → the ceremony's
    yard = courtyard.load()
    flight = {t.name: t.distance_bu * yard.bu_m / SPEED_M_S for t in yard.targets}
    strokes = {(b.archer, b.arrow): b.time - shift for b in ceremony.beats if b.shoot}
    up, down = "上耦上射", "上耦下射"
    mark = log_mark(jack)
    pads = rtmidi.MidiOut(rtmidi.API_UNIX_JACK, name="pads")
    pads.open_virtual_port("out")
    inbox = OscInbox()
    osc_port = free_udp_port()
    log, report = tmp_path / "live.csv", tmp_path / "r.json"
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    sent = []                                           # (what, monotonic when sent)
    try:
        play = subprocess.Popen(
            [sys.executable, "-m", "yuexuan", "play", str(DASHE), "--api", "jack", "--port", "rec",
             "--auto", "--cues", "lishou", "--from", str(FROM_S), "--until", str(UNTIL_S),
             "--osc", str(osc_port), "--osc-out", f"127.0.0.1:{inbox.port}",
             "--shots-log", str(log), "--hits-midi", "pads", "--report", str(report)],
            env=jack, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
        cue_at, _, _ = inbox.wait_for("/yuexuan/cue", 30)
        origin = cue_at - FROM_S                        # ≈ monotonic of selection time 0
        osc = SimpleUDPClient("127.0.0.1", osc_port)

        def at(t_s: float):
            time.sleep(max(0.0, origin + t_s - time.monotonic()))

        def pad(target: str, t_s: float, label: str):
            at(t_s)
            pads.send_message([0x99, PADS[target], 100])      # channel 10, as drum modules send
            sent.append((label, time.monotonic()))
            pads.send_message([0x89, PADS[target], 0])        # its note-off: ignored

        pad("干", 11.6, "before any turn")                    # nobody has loosed yet
        pad("干", strokes[(up, 1)] + flight["干"] + 0.01, "up1")          # no loose: the flight back
        at(strokes[(down, 1)] + 0.1)
        osc.send(_loose(down, strokes[(down, 1)] + shift))
        pad("干", strokes[(down, 1)] + 1.5, "down1")                       # the loose is judged
        at(strokes[(up, 2)] + 0.3)
        osc.send(_loose(up, strokes[(up, 2)] + shift + 0.25))
        pad("干", strokes[(up, 2)] + 1.4, "up2")                           # 250 ms off the drum
        pad("参", strokes[(down, 2)] + flight["参"], "down2")              # a 士 on the 参
        pads.send_message([0x99, 42, 100])                                 # an unmapped pad
        # the scorer at the 干 saw the first arrow only graze (扬触): he corrects the sensor's 贯
        osc.send_message("/yuexuan/correct", [up, 1, "扬触"])
        _, err = play.communicate(timeout=60)
    finally:
        calls = rec.stop()
        inbox.close()
        pads.close_port()
        pads.delete()                                   # leave the JACK graph
    assert play.returncode == 0, err
    diag = diagnosis(jack, mark)
    rep = json.loads(report.read_text())
    (anchor,) = (a["anchor_monotonic"] for a in rep["anchors"])
    rows = list(csv.DictReader(io.StringIO(log.read_text(encoding="utf-8"), newline="")))
    hit_s = {label: mono - anchor + shift for label, mono in sent}   # the ceremony's seconds

    assert [(r["archer"], r["target"], r["result"], r["round"]) for r in rows] == [
        (up, "干", "扬触", "3"), (down, "干", "贯", "3"), (up, "干", "贯", "3"), (down, "参", "贯", "3")
    ], (rows, err, diag)
    times = [float(r["time"]) for r in rows]
    # a pad's message stamped as it came, within 15 ms and as much more as the server's latest
    # cycle began late (its log)
    slack_s = 0.015 + worst_late_s(jack, mark)
    assert abs(times[0] - (hit_s["up1"] - flight["干"])) < slack_s, (times, hit_s, diag)
    assert times[1] == round(strokes[(down, 1)] + shift, 6)
    assert times[2] == round(strokes[(up, 2)] + shift + 0.25, 6)
    assert abs(times[3] - (hit_s["down2"] - flight["参"])) < slack_s, (times, hit_s, diag)
    assert [r["reason"] for r in rows] == ["不贯不释", "释", "不鼓不释", "非其侯"]
    assert any("no archer's turn" in b["why"] for b in rep["judging"]["bad_messages"])
    # check on the written log: the same verdicts
    out = subprocess.run([sys.executable, "-m", "yuexuan", "check", str(DASHE), str(log),
                          "--format", "csv"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    again = list(csv.DictReader(io.StringIO(out.stdout, newline="")))
    assert [{k: r[k] for k in ("time", "archer", "nearest_beat", "offset", "released", "reason")}
            for r in again] == \
        [{k: r[k] for k in ("time", "archer", "nearest_beat", "offset", "released", "reason")}
         for r in rows]
    # the 获者 calls the three hits on the 干 (a 士's 参 is 非其侯: no call), each within 1 s
    lags = rep["judging"]["call_lag_ms"]
    assert len(lags) == 3 and max(lags) < 1000, (lags, diag)
    assert len(calls) > 0


# -- without JACK: the schedule's turn, the note map ---------------------------------------------

def test_whose_turn_is_the_stroke_nearest_the_loose_before_the_hit():
    from yuexuan.live.hits import read_hit, shooting_strokes, whose_turn
    from yuexuan.rite.cuesheet_hits import HitsMidi

    tl = compile_file(DASHE)
    strokes = shooting_strokes(tl.beats, ["lishou"])
    shoot = [b for b in tl.beats if b.shoot and b.cue == "lishou"]
    assert len(strokes.beats) == len(shoot) == 64 and strokes.reach_s == 2.0
    b = shoot[5]
    assert whose_turn(strokes, b.time + 0.9, b.time + 2.0) is b          # nearest the loose
    assert whose_turn(strokes, b.time + 1.1, b.time + 2.5) is shoot[6]
    assert whose_turn(strokes, b.time + 1.1, b.time + 1.5) is b          # shoot[6] is later
    assert whose_turn(strokes, shoot[0].time - 0.5, shoot[0].time - 0.2) is None   # none yet
    assert whose_turn(strokes, shoot[-1].time + 30, shoot[-1].time + 31) is None   # all done
    sensor = HitsMidi({36: "大侯", 40: "干"}, channel=9)
    assert read_hit([0x99, 40, 90], sensor).target == "干"
    for other in ([0x99, 40, 0], [0x89, 40, 64], [0x90, 40, 90], [0x99, 41, 90], [0xB9, 40, 90]):
        assert read_hit(other, sensor) is None, other


@pytest.mark.parametrize("table,says", [
    ('notes = { 128 = "干" }', "expected a MIDI note number 0–127"),
    ('notes = { x = "干" }', "expected a MIDI note number 0–127"),
    ('notes = { 36 = "鹄" }', "unknown 侯 '鹄'"),
    ("notes = {}", "expected at least one note"),
    ('notes = { 36 = "干" }\nchannel = 17', "too large"),
    ('notes = { 36 = "干" }\narrow_speed_m_s = 0', "too small"),
    ('notes = { 36 = "干" }\nspeed = 3', "unknown key"),
])
def test_a_bad_hits_midi_table_is_one_line(tmp_path, table, says):
    text = (DASHE.read_text(encoding="utf-8")
            .replace('notes = { 36 = 1, 38 = 2, 40 = 3 }     # the rite\'s 侯 in order (大侯 参 干 for an 诸侯); '
                     'or by name\narrow_speed_m_s = 60.0', table))
    sheet = tmp_path / "sheet.toml"
    sheet.write_text(text, encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "yuexuan", "compile", str(sheet), "-o",
                          str(tmp_path / "x.mid")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"{sheet}:" in out.stderr and "hits_midi" in out.stderr and says in out.stderr


def test_hits_midi_needs_the_map(tmp_path):
    saved = tmp_path / "d.json"
    subprocess.run([sys.executable, "-m", "yuexuan", "compile", str(DASHE), "-o",
                    str(tmp_path / "d.mid"), "--timeline", str(saved)], check=True, cwd=ROOT,
                   capture_output=True)
    out = subprocess.run([sys.executable, "-m", "yuexuan", "play", str(saved), "--hits-midi", "x"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and out.stderr.strip() == (
        f"yuexuan play: {saved}: --hits-midi: needs a cue sheet (.toml) with a [hits_midi] table "
        "(a saved timeline has no note map)")

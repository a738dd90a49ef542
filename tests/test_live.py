"""Live driver, in process: scheduler, programme split, show commands, sync codes, operator screen.

The over-the-wire checks (JACK, a separate recording process) are in test_live_jack.py.
"""

from __future__ import annotations

import threading
import time

import mido
import numpy as np
import pytest

from yuexuan.midi import live, operator, sync
from yuexuan.errors import UserError
from yuexuan.midi.scheduler import Scheduler, summarise
from yuexuan.timeline import Ceremony, Cue, Note, Timeline


# -- a small hand-made timeline: two cues, the first open-ended with 1 s phrases ---------------
def _timeline() -> Timeline:
    a = Cue("a", "肆夏", "奏", 0.0, 4.0, ("笙钟",), True, "「奏肆夏」", starts_when="宾升",
            ends_when="主人答拜", open_ended=True, phrases=(0.0, 1.0, 2.0, 3.0))
    b = Cue("b", "鹿鸣", "歌", 5.0, 7.0, ("瑟",), False, "「乃歌鹿鸣三终」",
            starts_when="工升自西阶", phrases=(5.0, 6.0))
    notes = [Note(0.25 * i, 0.2, "笙钟", "a", 60 + i % 5, 261.6, 80) for i in range(16)]
    notes += [Note(5.0 + 0.25 * i, 0.2, "瑟", "b", 50 + i % 3, 146.8, 70) for i in range(8)]
    notes.append(Note(0.0, 3.5, "笙钟", "a", 48, 130.8, 90))          # a long drone
    notes.sort(key=lambda n: (n.time, n.instrument))
    return Timeline(Ceremony("大射仪", "诸侯", "轩县", 256.0), (a, b), tuple(notes), ())


def _messages(tl: Timeline) -> list:
    """What midi.timeline_messages yields: setup first, then time-sorted note messages."""
    ch = {"笙钟": 0, "瑟": 1}
    out = [(0.0, "笙钟", mido.Message("sysex", data=[0x7F, 0x7F, 0x08, 0x02, 0, 0])),
           (0.0, "笙钟", mido.Message("program_change", channel=0, program=14)),
           (0.0, "瑟", mido.Message("program_change", channel=1, program=107))]
    ev = []
    for n in tl.notes:
        ev.append((n.time, 1, mido.Message("note_on", channel=ch[n.instrument], note=n.midi,
                                           velocity=n.velocity), n.instrument))
        ev.append((n.time + n.duration, 0, mido.Message("note_off", channel=ch[n.instrument],
                                                        note=n.midi), n.instrument))
    ev.sort(key=lambda e: (e[0], e[1]))
    return out + [(t, name, m) for t, _, m, name in ev]


class Sink:
    """A send function recording (monotonic s, bytes)."""

    def __init__(self):
        self.rows = []
        self.lock = threading.Lock()

    def __call__(self, data) -> bool:
        with self.lock:
            self.rows.append((time.monotonic(), tuple(data)))
        return True

    def msgs(self):
        with self.lock:
            return [(t, mido.Message.from_bytes(list(d))) for t, d in self.rows]


def _balanced(msgs) -> bool:
    """Every note-on closed by a note-off on the same channel and key."""
    open_ = {}
    for _, m in msgs:
        if m.type == "note_on" and m.velocity > 0:
            open_[(m.channel, m.note)] = open_.get((m.channel, m.note), 0) + 1
        elif m.type in ("note_on", "note_off"):
            open_[(m.channel, m.note)] = open_.get((m.channel, m.note), 0) - 1
    return all(v <= 0 for v in open_.values()) and any(
        m.type == "note_on" for _, m in msgs)


def _show(sink, cue_ids=None, **opts):
    tl = _timeline()
    prog = live.build_program(tl, _messages(tl), cue_ids)
    return tl, live.Show(prog, sink, live.ShowOptions(lead_s=0.05, **opts))


# -- scheduler -------------------------------------------------------------------------------
def test_scheduler_dispatches_in_deadline_order_never_early():
    seen = []
    sched = Scheduler(lambda p: seen.append((time.monotonic(), p)) or True)
    t0 = time.monotonic() + 0.05
    offsets = np.random.default_rng(1).uniform(0, 0.3, 200)
    sched.add_many((t0 + o, i) for i, o in enumerate(offsets))
    sched.start()
    assert sched.wait_idle(5)
    sched.close()
    order = [p for _, p in seen]
    assert order == list(np.argsort(offsets, kind="stable"))
    early = [t - (t0 + offsets[p]) for t, p in seen]
    assert min(early) >= 0.0            # never before its deadline
    assert sched.stats.summary().count == 200


def test_scheduler_cancel_removes_only_matching():
    seen = []
    sched = Scheduler(lambda p: seen.append(p) or True)
    t0 = time.monotonic() + 0.1
    sched.add_many((t0 + 0.001 * i, i) for i in range(50))
    gone = sched.cancel(lambda p: p % 2 == 0)
    sched.start()
    sched.wait_idle(5)
    sched.close()
    assert [p for _, p in gone] == list(range(0, 50, 2))
    assert seen == list(range(1, 50, 2))


def test_summary_percentiles_in_ms():
    s = summarise(np.array([0.001] * 98 + [0.002, 0.010]))
    assert s.count == 100 and s.p50_ms == pytest.approx(1.0) and s.max_ms == pytest.approx(10.0)


# -- the programme ---------------------------------------------------------------------------
def test_program_keeps_every_note_in_its_cue_and_setup_first():
    tl = _timeline()
    prog = live.build_program(tl, _messages(tl))
    assert len(prog.setup) == 3 and prog.setup[0][0] == 0xF0
    for cue in tl.cues:
        ons = sorted((e.t, e.data[1]) for e in prog.events[cue.id] if e.kind == live.ON)
        assert ons == sorted((n.time, n.midi) for n in tl.notes if n.cue == cue.id)
        offs = [e for e in prog.events[cue.id] if e.kind == live.OFF]
        assert len(offs) == len(ons)
    assert prog.channels == (0, 1)


def test_program_window_keeps_note_offs_of_kept_notes_only():
    tl = _timeline()
    prog = live.build_program(tl, _messages(tl), ["a"], from_s=1.0, until_s=2.0)
    ons = [e.t for e in prog.events["a"] if e.kind == live.ON]
    assert ons == [1.0, 1.25, 1.5, 1.75]
    assert sum(e.kind == live.OFF for e in prog.events["a"]) == 4
    assert list(prog.events) == ["a"]


def test_program_rejects_unknown_cue_and_empty_window():
    tl = _timeline()
    with pytest.raises(UserError, match="no cue 'zz'"):
        live.build_program(tl, _messages(tl), ["zz"])
    with pytest.raises(UserError, match="after --from"):
        live.build_program(tl, _messages(tl), None, from_s=3.0, until_s=2.0)


# -- the show --------------------------------------------------------------------------------
def test_auto_plays_every_note_at_its_timeline_time_and_ends_silent():
    sink = Sink()
    tl, show = _show(sink, auto=True)
    show.start()
    assert show.done.wait(15)
    show.shutdown()
    msgs = sink.msgs()
    (cues, anchor), = show.anchors
    ons = [(t - anchor, m.note) for t, m in msgs if m.type == "note_on" and m.velocity > 0]
    want = sorted((n.time, n.midi) for n in tl.notes)
    got = sorted(ons, key=lambda o: (round(o[0], 2), o[1]))
    assert [k for _, k in got] == [k for _, k in want]
    err = np.array([t for t, _ in got]) - np.array([t for t, _ in want])
    assert np.all(err >= 0) and np.median(err) < 0.005
    assert _balanced(msgs)
    assert [m.control for _, m in msgs if m.type == "control_change"] == [123, 123]


def test_go_soft_stop_ends_at_next_phrase_then_go_starts_next_cue():
    sink = Sink()
    tl, show = _show(sink)
    show.start()
    assert show.status().state == "waiting"
    assert show.go() == "GO a"
    time.sleep(1.3)                          # inside phrase 2 (1.0–2.0 s)
    text = show.soft_stop()
    assert "2.00" in text and show.status().state == "stopping"
    time.sleep(1.0)
    assert show.status().state == "waiting"
    (_, anchor_a), = show.anchors
    msgs = sink.msgs()
    ons_a = [t - anchor_a for t, m in msgs if m.type == "note_on" and m.velocity > 0]
    assert max(ons_a) == pytest.approx(1.75, abs=0.02)      # nothing from the 2.0 s phrase on
    last_off = max(t - anchor_a for t, m in msgs if m.type == "note_off")
    assert last_off == pytest.approx(2.0, abs=0.02)        # the drone released at the boundary
    assert _balanced(msgs)
    assert show.go() == "GO b"
    assert show.done.wait(5)
    show.shutdown()
    cues_b, anchor_b = show.anchors[-1]
    assert cues_b == ("b",)
    ons_b = sorted(t - anchor_b for t, m in sink.msgs()[len(msgs):]
                   if m.type == "note_on" and m.velocity > 0)
    assert np.allclose(ons_b, [5.0 + 0.25 * i for i in range(8)], atol=0.02)
    assert _balanced(sink.msgs())


def test_hold_releases_notes_and_resume_shifts_the_rest_by_the_hold():
    sink = Sink()
    tl, show = _show(sink, ["a"], auto=True)
    show.start()
    time.sleep(0.05 + 0.6)
    assert show.hold() == "held"
    held_at = time.monotonic()
    n_held = len(sink.msgs())
    time.sleep(0.5)
    assert len(sink.msgs()) == n_held                       # silence while held
    assert show.resume() == "resumed"
    hold_s = time.monotonic() - held_at
    assert show.done.wait(15)
    show.shutdown()
    msgs = sink.msgs()
    assert _balanced(msgs[:n_held])                         # hold released what sounded
    anchor0, anchor1 = show.anchors[0][1], show.anchors[1][1]
    assert anchor1 - anchor0 == pytest.approx(hold_s, abs=0.01)
    ons = sorted(t - anchor1 for t, m in msgs[n_held:] if m.type == "note_on" and m.velocity)
    later = sorted(n.time for n in tl.notes if n.time > 0.7 and n.cue == "a")
    assert np.allclose(ons, later, atol=0.02)


def test_panic_silences_everything_now():
    sink = Sink()
    tl, show = _show(sink)
    show.start()
    show.go()
    time.sleep(0.6)
    n_before = len(sink.msgs())
    assert show.panic().startswith("PANIC")
    after = sink.msgs()[n_before:]
    assert {m.channel for _, m in after if m.type == "control_change" and m.control == 123} == {0, 1}
    assert _balanced(sink.msgs())
    time.sleep(0.5)
    assert not [m for _, m in sink.msgs()[n_before:] if m.type == "note_on"]
    assert show.status().state == "stopped"
    show.shutdown()


def test_incoming_midi_triggers_and_msc():
    sink = Sink()
    tl, show = _show(sink, msc_device=3)
    go, stop = sync.parse_trigger("cc:64"), sync.parse_trigger("note:36@10")
    show.start()
    assert show.midi_in(mido.Message("control_change", control=64, value=10).bytes(), go,
                        stop) is None                       # pedal half-way: nothing
    assert show.midi_in(mido.Message("control_change", control=64, value=127).bytes(), go,
                        stop) == "GO a"
    time.sleep(0.3)
    assert show.midi_in(mido.Message("note_on", channel=9, note=36, velocity=90).bytes(), go,
                        stop).startswith("soft stop")
    time.sleep(1.0)
    assert show.status().state == "waiting"
    other = sync.msc_message("go", 5, 2).bytes()
    assert show.midi_in(other, go, stop) is None            # another device's GO
    assert show.midi_in(sync.msc_message("go", 0x7F, 2).bytes(), go, stop) == "GO b"
    time.sleep(0.2)
    assert show.midi_in(sync.msc_message("all_off", 3).bytes(), go, stop).startswith("PANIC")
    show.shutdown()
    gos = [m for _, m in sink.msgs() if m.type == "sysex" and sync.parse_msc(m, 3)]
    assert [sync.parse_msc(m, 3) for m in gos] == [("go", "1"), ("go", "2")]
    assert _balanced(sink.msgs())


def test_lost_port_drops_then_resends_setup_on_return():
    ok = {"v": True}
    sink = Sink()

    def send(data):
        return sink(data) if ok["v"] else False

    tl, show = _show(send, ["a"], auto=True)
    show.start()
    time.sleep(0.4)
    ok["v"] = False
    show.port_changed("lost")
    time.sleep(0.4)
    n = len(sink.msgs())
    # the port lets messages through again only inside port_changed, under the show's lock: the
    # setup (tuning, programs) goes out before any scheduled note
    show.port_changed("back", resume=lambda: ok.update(v=True))
    resent = [m for _, m in sink.msgs()[n:n + 5]]
    assert resent[0].type == "sysex" and resent[1].type == "program_change"
    assert show.dropped > 0
    assert show.done.wait(15)
    show.shutdown()
    assert "gone" in " ".join(show.status().notices)


# -- sync codes ------------------------------------------------------------------------------
def _decode_mtc(pieces: list[int], fps: int) -> float:
    """Independent MTC decoder: eight quarter-frame data bytes (pieces 0..7) → seconds."""
    nib = [b & 0x0F for b in pieces]
    assert [b >> 4 for b in pieces] == list(range(8))
    ff = nib[0] | nib[1] << 4
    ss = nib[2] | nib[3] << 4
    mm = nib[4] | nib[5] << 4
    hh = nib[6] | (nib[7] & 1) << 4
    rate = nib[7] >> 1
    assert rate == {24: 0, 25: 1, 30: 3}[fps]
    return hh * 3600 + mm * 60 + ss + ff / fps


@pytest.mark.parametrize("fps", [24, 25, 30])
def test_mtc_quarter_frames_decode_to_their_due_time(fps):
    for start in (0.0, 59.96, 3599.5, 7 * 3600 + 123.4):
        k = sync.mtc_first_index(start, fps)
        assert k % 8 == 0 and sync.mtc_index_time(k, fps) >= start - 1e-9
        data = [sync.mtc_quarter_frame(k + i, fps).bytes()[1] for i in range(8)]
        assert _decode_mtc(data, fps) == pytest.approx(sync.mtc_index_time(k, fps))


def test_mtc_full_frame_and_clock_times():
    m = sync.mtc_full_frame(3723.5, 25)
    assert m.bytes() == [0xF0, 0x7F, 0x7F, 0x01, 0x01, (1 << 5) | 1, 2, 3, 12, 0xF7]
    t = sync.clock_times(10.0, 12.0, 120.0)
    assert len(t) == 96 and np.allclose(np.diff(t), 60 / 120 / 24)
    with pytest.raises(UserError):
        sync.clock_period_s(0)


def test_msc_round_trip_and_trigger_parsing():
    m = sync.msc_message("stop", 1, 12)
    assert m.bytes() == [0xF0, 0x7F, 0x01, 0x02, 0x01, 0x02, 0x31, 0x32, 0xF7]
    assert sync.parse_msc(m, 1) == ("stop", "12")
    assert sync.parse_msc(m, 2) is None
    assert sync.parse_msc(mido.Message("sysex", data=[0x7E, 0x7F, 0x06, 0x01])) is None
    assert sync.parse_trigger("cc:64@2") == sync.Trigger("cc", 64, 1)
    for bad in ("cc:200", "pedal", "note:60@17"):
        with pytest.raises(UserError):
            sync.parse_trigger(bad)


# -- operator screen -------------------------------------------------------------------------
def test_status_screen_names_the_moment_and_the_next_cue():
    sink = Sink()
    tl, show = _show(sink)
    show.start()
    text = operator.render(show.status())
    assert "WAITING" in text and "NEXT  a" in text and "GO when 宾升" in text
    show.go()
    time.sleep(0.2)
    text = operator.render(show.status())
    assert "NOW   a  奏肆夏" in text and "「奏肆夏」" in text
    assert "乐阕) when 主人答拜" in text and "NEXT  b" in text and "GO when 工升自西阶" in text
    show.soft_stop()
    assert "乐阕 at 00:01.0" in operator.render(show.status())
    show.shutdown()


def test_keys_and_lines_map_to_commands():
    assert [operator.command_for_key(k) for k in " gshp!qx"] == [
        "go", "go", "stop", "toggle-hold", "panic", "panic", "quit", None]
    assert operator.command_for_line("stop\n") == "stop"
    assert operator.command_for_line("\n") == "go"
    assert operator.command_for_line("resume") == "resume"
    assert operator.command_for_line("bogus") is None


# -- user mistakes: one line on stderr, exit 2, before any port is opened ---------------------
@pytest.mark.parametrize("args, says", [
    (["nosuch.toml"], "nosuch.toml"),
    (["cues/dashe.toml", "--cues", "lishou,zz"], "zz"),
    (["cues/dashe.toml", "--cues", "lishou", "--from", "50", "--until", "40"], "--until"),
    (["cues/dashe.toml", "--go-midi", "pedal"], "--go-midi"),
    (["cues/dashe.toml", "--msc", "300"], "--msc"),
    ([], "CUES"),
])
def test_play_user_errors(args, says):
    import subprocess
    import sys
    from pathlib import Path
    p = subprocess.run([sys.executable, "-m", "yuexuan", "play", *args], capture_output=True,
                       text=True, timeout=60, cwd=Path(__file__).resolve().parent.parent,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("yuexuan play: ") and says in lines[0]
    assert "Traceback" not in p.stderr


def test_clock_stops_on_hold_and_continues_on_resume():
    sink = Sink()
    tl, show = _show(sink, ["a"], auto=True, clock_bpm=120.0, mtc_fps=25)
    show.start()
    time.sleep(0.6)
    show.hold()
    n_hold = len(sink.rows)
    time.sleep(0.3)
    assert len(sink.rows) == n_hold                   # no pulses, no quarter frames while held
    show.resume()
    time.sleep(0.4)
    show.shutdown()
    kinds = [d[0] for _, d in sink.rows if d[0] in (0xFA, 0xFB, 0xFC)]
    assert kinds == [0xFA, 0xFC, 0xFB, 0xFC]          # start, hold, resume, end
    pulses = np.array([t for t, d in sink.rows if d == (0xF8,)])
    gaps = np.diff(pulses)
    assert np.median(gaps) == pytest.approx(60 / 120 / 24, abs=5e-4)
    assert gaps.max() > 0.3                           # the hold
    # MTC re-locates after the hold: a full frame for the show time it froze at
    fulls = [mido.Message.from_bytes(list(d)) for _, d in sink.rows
             if d[:5] == (0xF0, 0x7F, 0x7F, 0x01, 0x01)]
    assert len(fulls) == 2
    ss, ff = fulls[1].data[6], fulls[1].data[7]
    assert ss + ff / 25 == pytest.approx(0.6, abs=0.1)

"""Live judging in process: OSC parsing and listening (real UDP), the ceremony clock, the live
calls taken from the compiled timeline, the show's position through a hold, and the hub's order
(call, log on disk, then verdict sent). Over JACK with a recorder: test_live_judge_jack.py."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import mido
import pytest
from clock_support import VirtualClock
from osc_support import ToOne
from pythonosc.udp_client import SimpleUDPClient

from yuexuan.compiler import compile_file
from yuexuan.compiler.builder import CALL_DELAY_S, CALL_LEN_S
from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.formats.midimessages import assign_tracks, timeline_messages
from yuexuan.live import calls as live_calls
from yuexuan.live import judging, operator, osc
from yuexuan.live import show as live
from yuexuan.live.judge import Judge, round_rosters
from yuexuan.live.program import build_program
from yuexuan.live.queue_items import Kind
from yuexuan.scoring.logwrite import ShotLogWriter
from yuexuan.scoring.rules import rules_for
from yuexuan.scoring.shots import read_shots
from yuexuan.timeline import at_ceremony_times

ROOT = Path(__file__).resolve().parent.parent
DASHE = ROOT / "cues" / "dashe.toml"
T = 1.0                                     # an arrival time for parse, monotonic s


# -- OSC in -------------------------------------------------------------------------------------
def test_parse_loose_shot_and_commands():
    assert osc.parse("/yuexuan/loose", ("宾",), T) == osc.Loose("宾", None, T)
    assert osc.parse("/yuexuan/loose", ("宾", 1100), T) == osc.Loose("宾", 1100.0, T)
    shot = osc.parse("/yuexuan/shot", ("公", "公", "下射", "参", "贯", "公耦", 2), T)
    assert shot.fields == {"archer": "公", "rank": "公", "role": "下射", "target": "参",
                           "result": "贯", "pair": "公耦", "round": 2}
    assert osc.parse("/yuexuan/shot", ("士乙", "士", "上射", "", "不中"), T).fields["target"] == ""
    assert [osc.parse(f"/yuexuan/{w}", (), T).name for w in ("go", "stop", "hold", "resume",
                                                               "panic")] == \
        ["go", "stop", "toggle-hold", "resume", "panic"]


@pytest.mark.parametrize("address, args, says", [
    ("/yuexuan/shoot", ("宾",), "unknown address"),
    ("/other/loose", ("宾",), "unknown address"),
    ("/yuexuan/loose", (), "expected archer"),
    ("/yuexuan/loose", (3,), "expected archer"),
    ("/yuexuan/loose", ("宾", "now"), "not a finite number"),
    ("/yuexuan/loose", ("宾", float("nan")), "not a finite number"),
    ("/yuexuan/shot", ("宾", "宾", "上射", "大侯"), "expected archer rank role target result"),
    ("/yuexuan/shot", ("宾", "宾", "上射", "大侯", 1), "expected archer rank role target result"),
    ("/yuexuan/shot", ("宾", "宾", "上射", "大侯", "贯", 7), "pair 7 is not a string"),
    ("/yuexuan/shot", ("宾", "宾", "上射", "大侯", "贯", "公耦", "3"), "round '3' is not an int"),
])
def test_parse_bad_messages_say_what_is_wrong(address, args, says):
    bad = osc.parse(address, args, T)
    assert isinstance(bad, osc.Bad) and says in bad.why and bad.why.startswith(address)


def test_host_port():
    assert osc.host_port("9000", "--osc") == ("127.0.0.1", 9000)
    assert osc.host_port("0.0.0.0:9000", "--osc") == ("0.0.0.0", 9000)
    for text in ("x", "70000", "h:0"):
        with pytest.raises(UserError, match="port must be"):
            osc.host_port(text, "--osc")
    with pytest.raises(UserError, match="HOST:PORT"):
        osc.host_port("9000", "--osc-out", need_host=True)


def test_listener_delivers_every_datagram_and_survives_bad_ones():
    got, done = [], threading.Event()

    def deliver(record):
        got.append(record)
        if isinstance(record, osc.Shot) and record.fields["archer"] == "boom":
            raise RuntimeError("handler failed")
        if isinstance(record, osc.Command):
            done.set()

    listener = osc.OscListener("127.0.0.1", 0, ToOne(deliver))
    listener.start()
    try:
        host, port = listener.address
        before = time.monotonic()
        client = SimpleUDPClient(host, port)
        client.send_message("/yuexuan/loose", ["宾"])
        raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        raw.sendto(b"garbage", (host, port))
        raw.sendto(b"/yuexuan/shot\x00\x00\x00,s\x00\x00\xff\xfe\x00\x00", (host, port))  # not UTF-8
        raw.close()
        client.send_message("/yuexuan/shot", ["boom", "士", "上射", "干", "贯"])
        client.send_message("/yuexuan/go", [])
        assert done.wait(5)
    finally:
        listener.close()
    kinds = [type(r).__name__ for r in got]
    assert kinds == ["Loose", "Bad", "Bad", "Shot", "Bad", "Command"], got
    assert "not an OSC message (7 bytes" in got[1].why
    assert "does not parse" in got[2].why
    assert "handler failed" in got[4].why                     # reported, the listener goes on
    assert all(before <= r.arrival <= time.monotonic() for r in got)


class Counting:
    """A receiver that counts what each of its handlers was given."""

    def __init__(self, last: str):
        self.calls, self.last, self.done = [], last, threading.Event()

    def __getattr__(self, name):
        if not name.startswith("on_"):
            raise AttributeError(name)

        def handler(record):
            self.calls.append((name, record))
            if getattr(record, "name", None) == self.last:
                self.done.set()
        return handler


def test_each_address_has_one_handler_and_each_message_is_handled_once():
    """Every address the listener knows reaches one handler of its receiver (the hub's), once a
    message: no second dispatch after the first."""
    import random

    want = {"/yuexuan/loose": "on_loose", "/yuexuan/shot": "on_shot",
            "/yuexuan/correct": "on_correction", **{f"/yuexuan/{w}": "on_command" for w in osc.COMMANDS}}
    assert set(osc.ROUTES) == set(want) == set(osc.MESSAGES)
    handlers = {name for name in dir(judging.Hub) if name.startswith("on_")}
    assert handlers == {*want.values(), "on_bad"}
    args = {"/yuexuan/loose": ["宾"], "/yuexuan/shot": ["宾", "宾", "上射", "大侯", "贯"],
            "/yuexuan/correct": ["宾", 1, "贯"]}
    seed = random.randrange(1 << 32)
    sent = [a for a in want if a != "/yuexuan/panic"] * 2 + ["/yuexuan/nothing"]
    random.Random(seed).shuffle(sent)
    sent.append("/yuexuan/panic")                       # the last: the handler then says done
    receiver = Counting(last="panic")
    listener = osc.OscListener("127.0.0.1", 0, receiver)
    listener.start()
    try:
        client = SimpleUDPClient(*listener.address)
        for address in sent:
            client.send_message(address, args.get(address, []))
        assert receiver.done.wait(5), f"seed {seed}"
    finally:
        listener.close()
    assert [name for name, _ in receiver.calls] == [want.get(a, "on_bad") for a in sent], f"seed {seed}"


def test_listener_takes_a_future_bundle_at_once_and_refuses_address_patterns():
    """python-osc's dispatcher would sleep until a bundle's future timetag and hand /yuexuan/*
    to every handler (go, stop and panic at once): neither happens."""
    from pythonosc.osc_bundle_builder import OscBundleBuilder
    from pythonosc.osc_message_builder import build_msg

    got, done = [], threading.Event()

    def deliver(record):
        got.append(record)
        if isinstance(record, osc.Command):
            done.set()

    listener = osc.OscListener("127.0.0.1", 0, ToOne(deliver))
    listener.start()
    try:
        host, port = listener.address
        bundle = OscBundleBuilder(time.time() + 60.0)       # a minute ahead: not waited for
        bundle.add_content(build_msg("/yuexuan/loose", ["宾"]))
        bundle.add_content(build_msg("/yuexuan/shot", ["宾", "宾", "上射", "大侯", "贯"]))
        raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        raw.sendto(bundle.build().dgram, (host, port))
        raw.sendto(build_msg("/yuexuan/*", []).dgram, (host, port))
        raw.sendto(build_msg("/yuexuan/go", []).dgram, (host, port))
        raw.close()
        assert done.wait(5)
    finally:
        listener.close()
    assert [type(r).__name__ for r in got] == ["Loose", "Shot", "Bad", "Command"], got
    assert got[0].arrival == got[1].arrival                  # one datagram, one arrival stamp
    assert got[2].why.startswith("/yuexuan/*: unknown address (an address pattern")


def test_listener_port_in_use_is_a_user_error():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        with pytest.raises(UserError, match="cannot listen"):
            osc.OscListener("127.0.0.1", s.getsockname()[1], ToOne(print))


# -- the ceremony's seconds, the calls --------------------------------------------------------------
@pytest.mark.parametrize("compact", [False, True])
def test_the_hub_puts_the_selection_on_the_whole_ceremony(lishou, ceremony, compact):
    """The show plays a --cues selection from 0; the hub takes the whole ceremony's seconds (the
    judge's, the log's) from the one timeline played, which records its place in the ceremony."""
    whole = [b.time for b in ceremony.beats if b.cue == "lishou"]
    first = whole[0] - ceremony.cue("lishou").start          # the first stroke, s into 貍首
    hub = judging.Hub(None, FakeShow([], t=lishou.beats[0].time), lishou, {})
    assert hub.timeline_at(T) == pytest.approx(whole[0], abs=1e-9)
    two = compile_file(DASHE, ["sixia_bin", "lishou"], compact=compact)
    start = two.cue("lishou").start
    assert (start == pytest.approx(two.cue("sixia_bin").end + ceremony.ceremony.gap_s) if compact
            else start == pytest.approx(ceremony.cue("lishou").start))
    for t, want in ((start + first, whole[0]), (1.0, ceremony.cue("sixia_bin").start + 1.0)):
        hub = judging.Hub(None, FakeShow([], t=t), two, {})
        assert hub.timeline_at(T) == pytest.approx(want, abs=1e-9)


def test_live_call_is_the_first_compiled_call_and_compiled_calls_are_left_out(lishou):
    messages = timeline_messages(lishou)
    calls = live_calls.call_templates(lishou, messages)
    huo = [n for n in lishou.notes if n.instrument == "获者·干"]
    channel = next(t.channel for t in assign_tracks(lishou) if t.name == "获者·干")
    ons = [e for e in calls["获·干"] if e.kind == Kind.ON]
    offs = [e for e in calls["获·干"] if e.kind == Kind.OFF]
    got = [(round(e.dt, 9), mido.Message.from_bytes(list(e.data))) for e in ons]
    # 举旌以宫 (loud) now, 偃旌以商 (soft) as far after it as the compiler puts it
    assert [(m.channel, m.note, m.velocity) for _, m in got] == \
        [(channel, huo[0].midi, huo[0].velocity), (channel, huo[1].midi, huo[1].velocity)]
    assert huo[0].velocity > huo[1].velocity
    assert [dt for dt, _ in got] == pytest.approx([0.0, CALL_DELAY_S[1] - CALL_DELAY_S[0]])
    assert sorted(e.dt for e in offs) == pytest.approx(
        [CALL_LEN_S[0], CALL_DELAY_S[1] - CALL_DELAY_S[0] + CALL_LEN_S[1]])
    assert set(calls) >= {"获·大侯", "获·参", "获·干", "留", "扬", "方"}
    # each 侯's 获 is its own 获者's: the track (channel) of 获者·大侯, 获者·参, 获者·干
    tracks = {t.name: t.channel for t in assign_tracks(lishou)}
    for hou in ("大侯", "参", "干"):
        first_on = next(e for e in calls[f"获·{hou}"] if e.kind == Kind.ON)
        assert first_on.key[0] == tracks[f"获者·{hou}"], hou
    # the shooting cue's compiled 获 and 大射正 calls are gone from what is played, nothing else
    kept = live_calls.without_calls(messages, live_calls.compiled_calls(
        lishou, live_calls.live_cues(lishou)))
    callers = [n for n in lishou.notes if n.instrument in ("获者·大侯", "获者·参", "获者·干", "大射正")]
    assert callers and len(messages) - len(kept) == 2 * len(callers)
    program = build_program(lishou, kept)
    assert not [e for e in program.events["lishou"] if e.kind == Kind.ON
                and e.key[0] == channel and e.key[1] in (huo[0].midi, huo[1].midi)
                and mido.Message.from_bytes(list(e.data)).velocity in (100, 60)]


# -- the show's position, live calls on its send path (on virtual time: tests/clock_support.py) ---
class Sink:
    def __init__(self, clock):
        self.clock = clock
        self.rows, self.lock = [], threading.Lock()

    def __call__(self, data) -> bool:
        with self.lock:
            self.rows.append((self.clock(), tuple(data)))
        return True


def _small_show(lishou, sink, **hooks):
    program = build_program(lishou, timeline_messages(lishou), None, 11.0, 16.0)
    show = live.Show(program, sink, live.ShowOptions(auto=True, from_s=11.0, until_s=16.0),
                     beats=lishou.beats, clock=sink.clock, subscribers=live.Subscribers(**hooks))
    sink.clock.attach(show)
    return show


def test_position_runs_with_the_show_and_stands_still_while_held(lishou):
    clock = VirtualClock()
    sink, beats = Sink(clock), []
    show = _small_show(lishou, sink, on_beat=lambda b: beats.append((clock(), b)))
    assert show.timeline_s(clock()) is None            # before the start
    show.start()
    try:
        (_, anchor), = show.anchors
        now = clock()
        assert show.timeline_s(now) == pytest.approx(now - anchor)
        assert show.timeline_s(now) == pytest.approx(11.0 - show.options.lead_s, abs=0.05)
        clock.advance(1.0)
        show.hold()
        frozen = show.timeline_s(clock())
        clock.advance(0.3)
        assert show.timeline_s(clock()) == frozen      # held: time stands still
        show.resume()
        assert show.timeline_s(clock()) == pytest.approx(frozen, abs=0.01)
        assert clock.run(show.done.is_set, 10)
        ended = show.timeline_s(clock())                # the run has ended: it stands
        assert ended >= 16.0 and show.timeline_s(clock() + 60) == ended
    finally:
        show.shutdown()
    # the 射节 strokes of the window went to on_beat at their times, after the hold too
    want = [b for b in lishou.beats if 11.0 <= b.time < 16.0]
    assert [b for _, b in beats] == want
    anchor = show.anchors[-1][1]
    assert all(abs(t - (anchor + b.time)) < 0.02 for t, b in beats if t > anchor + frozen)


def test_a_call_sounds_now_and_panic_releases_it(lishou):
    clock = VirtualClock()
    sink = Sink(clock)
    show = _small_show(lishou, sink)
    calls = live_calls.call_templates(lishou, timeline_messages(lishou))
    show.start()
    try:
        n = len(sink.rows)
        asked = clock()
        assert show.sound_call(calls["获·干"])
        first_t, first = sink.rows[n]
        assert first == calls["获·干"][0].data and first_t - asked < 0.005
        clock.advance(0.2)
        show.panic()
        clock.advance(1.3)                  # the 商 would have come 1.1 s after the 宫
    finally:
        show.shutdown()
    sent = [d for _, d in sink.rows[n:]]
    assert calls["获·干"][0].data in sent
    shang = [e for e in calls["获·干"] if e.kind == Kind.ON][1]
    assert shang.data not in sent                                 # dropped by PANIC
    off = (0x80 | first[0] & 0x0F, first[1], 0)
    assert off in sent                                            # the 宫 released


# -- the hub ---------------------------------------------------------------------------------------
class FakeShow:
    def __init__(self, order, t=1215.3 - 1202.3):
        self.order, self.t, self.calls = order, t, []

    def timeline_s(self, at):
        return self.t

    def sound_call(self, events):
        self.order.append("call")
        self.calls.append(events)
        return True

    def now(self):
        return time.monotonic()


class FakeOut:
    def __init__(self, order):
        self.order, self.sent = order, []

    def verdict(self, row, v):
        self.order.append("verdict")
        self.sent.append((row, v))

    def tally(self, t, final):
        self.order.append("tally")


class SpyLog(ShotLogWriter):
    def __init__(self, path, order):
        super().__init__(path)
        self.order = order

    def write(self, row):
        super().write(row)
        self.order.append("log")


def _hub(tmp_path, ceremony, lishou, order, show=None):
    """A hub on the one timeline played (貍首 alone), judging at the ceremony's seconds as play
    does (``at_ceremony_times``): its 射节 strokes and roster are the whole ceremony's."""
    at_ceremony = at_ceremony_times(lishou)
    assert at_ceremony.beats == tuple(b for b in ceremony.beats if b.cue == "lishou")
    rules = rules_for(at_ceremony, DataSource())
    calls = live_calls.call_templates(lishou, timeline_messages(lishou))
    log = SpyLog(tmp_path / "shots.csv", order)
    out = FakeOut(order)
    show = show or FakeShow(order)
    return judging.Hub(Judge(rules, round_rosters(at_ceremony)), show, lishou, calls, log,
                       out), show, out


def test_round_two_is_announced_after_its_last_cue_not_after_the_sanou(tmp_path, ceremony):
    # round 2 is shot in two cues (the 三耦's, then the 公's and the rest's): the 释获者 announces
    # it once, when the second ends; round 1 and round 3 each close with their one cue
    shooting = [c for c in ceremony.cues if c.kind in live_calls.SHOOTING_KINDS]
    assert [(c.id, c.round) for c in shooting] == [
        ("round1", 1), ("round2_sanou", 2), ("round2_rest", 2), ("lishou", 3)]
    assert judging.round_closing_cues(ceremony) == {"round1", "round2_rest", "lishou"}
    sanou, rest = ceremony.cue("round2_sanou"), ceremony.cue("round2_rest")
    order = []
    hub = judging.Hub(Judge(rules_for(ceremony, DataSource()), round_rosters(ceremony)),
                      FakeShow(order, t=(sanou.start + sanou.end) / 2),
                      ceremony, {}, None, FakeOut(order),
                      closers=judging.round_closing_cues(ceremony))
    hub.on_shot(osc.Shot({"archer": "上耦上射", "rank": "士", "role": "上射", "target": "干",
                          "result": "贯", "pair": "上耦", "round": 2}, T))
    hub.cue_ended(sanou)
    assert hub.round_ends == []                      # the 公 and the rest have yet to shoot
    hub.show.t = (rest.start + rest.end) / 2
    hub.on_shot(osc.Shot({"archer": "公", "rank": "公", "role": "下射", "target": "大侯",
                          "result": "贯", "pair": "公耦", "round": 2}, T))
    hub.cue_ended(rest)
    assert [tuple(e) for e in hub.round_ends] == [(2, 1, 1, "左右钧")]
    # a saved timeline of no rounds: every shooting cue closes what was judged in it (as before)
    old = judging.Hub(Judge(rules_for(ceremony, DataSource()), None), FakeShow([], t=sanou.start + 1),
                      ceremony, {}, None, None)
    old.on_shot(osc.Shot({"archer": "上耦上射", "rank": "士", "role": "上射", "target": "干",
                          "result": "贯", "pair": "上耦", "round": 2}, T))
    old.cue_ended(sanou)
    assert [e.round for e in old.round_ends] == [2]


def test_hub_calls_then_logs_then_tells(tmp_path, ceremony, lishou):
    order = []
    hub, show, out = _hub(tmp_path, ceremony, lishou, order)
    hub.on_loose(osc.Loose("上耦上射", None, T))
    hub.on_shot(osc.Shot({"archer": "上耦上射", "rank": "士", "role": "上射", "target": "干",
                          "result": "贯", "pair": "上耦", "round": 3}, T))
    assert order == ["call", "log", "verdict", "tally"]
    assert show.calls == [hub.calls["获·干"]]
    row, v = out.sent[0]
    assert (row, v["reason"], v["time"]) == (1, "释", pytest.approx(1215.3))
    logged = read_shots(tmp_path / "shots.csv")                 # check's reader takes the log
    assert logged.archers == ["上耦上射"] and logged.time[0] == pytest.approx(1215.3)
    # the 公's 留: the 大射正 calls; a miss of anyone else: no call
    hub.on_shot(osc.Shot({"archer": "公", "rank": "公", "role": "下射", "target": "",
                          "result": "留", "pair": "公耦"}, T))
    hub.on_shot(osc.Shot({"archer": "宾", "rank": "宾", "role": "上射", "target": "",
                          "result": "不中", "pair": "公耦"}, T))
    assert show.calls[1:] == [hub.calls["留"]]
    assert [ln.split(":")[0] for ln in hub.said if ln.startswith("shot")] == \
        ["shot 1", "shot 2", "shot 3"]
    # the shooting cue's end announces the round (its roster had not loosed every arrow)
    hub.cue_ended(lishou.cues[0])
    assert [tuple(e) for e in hub.round_ends] == [(3, 1, 0, "右贤于左一奇")]
    assert hub.said[-1].startswith("round 3 ends: 右 1 算, 左 0 算 — 右贤于左一奇")
    assert order[-1] == "tally"
    screen = hub.screen()             # the latest verdicts, then each round's tally
    assert screen[-1] == "round 3 ends: 右 1 算, 左 0 算 — 右贤于左一奇"
    assert [ln[:6] for ln in screen[:3]] == ["shot 1", "shot 2", "shot 3"]


def test_a_correction_is_judged_again_and_the_log_rewritten(tmp_path, ceremony, lishou):
    order = []
    hub, show, out = _hub(tmp_path, ceremony, lishou, order)
    shot = {"archer": "上耦上射", "rank": "士", "role": "上射", "target": "干", "result": "贯",
            "pair": "上耦"}
    hub.on_shot(osc.Shot(shot, T))
    hub.on_shot(osc.Shot({**shot, "archer": "上耦下射", "role": "下射"}, T))
    fix = osc.parse("/yuexuan/correct", ("上耦上射", 1, "扬触"), T)
    assert isinstance(fix, osc.Correction)
    hub.on_correction(fix)
    hub.on_correction(osc.parse("/yuexuan/correct", ("上耦上射", 2, "扬触"), T))     # no 2nd arrow
    assert len(show.calls) == 2                                # no call for a correction
    assert out.sent[-1][0] == 1 and out.sent[-1][1]["reason"] == "不贯不释"
    logged = read_shots(tmp_path / "shots.csv")
    assert len(logged) == 2 and logged.result.tolist()[0] == 2          # RESULTS[2] = 扬触
    assert "not an arrow 2" in hub.bad[-1]["why"] or "arrow 2" in hub.bad[-1]["why"]
    assert hub.final_lines() == ["round 3: 右 0 算, 左 1 算 — 左贤于右一奇"]


def test_hub_reports_bad_messages_and_goes_on(tmp_path, ceremony, lishou):
    order = []
    hub, show, out = _hub(tmp_path, ceremony, lishou, order)
    hub.on_bad(osc.Bad("/yuexuan/x: unknown address", T))
    hub.on_loose(osc.Loose("王五", None, T))
    hub.on_shot(osc.Shot({"archer": "宾", "rank": "王", "role": "上射", "target": "大侯",
                          "result": "贯"}, T))
    hub.on_shot(osc.Shot({"archer": "宾", "rank": "宾", "role": "上射", "target": "大侯",
                          "result": "贯", "pair": "公耦"}, T))
    whys = [b["why"] for b in hub.bad]
    assert len(whys) == 3 and "unknown archer" in whys[1] and "rank" in whys[2]
    assert order == ["call", "log", "verdict", "tally"]         # the good shot still judged
    summary = hub.summary()
    assert len(summary["shots"]) == 1 and len(summary["bad_messages"]) == 3
    waiting = FakeShow(order)
    waiting.timeline_s = lambda at: None                        # before the show starts
    (tmp_path / "b").mkdir()
    hub2, _, _ = _hub(tmp_path / "b", ceremony, lishou, [], waiting)
    hub2.on_shot(osc.Shot({"archer": "宾", "rank": "宾", "role": "上射", "target": "大侯",
                           "result": "贯"}, T))
    assert "has not started" in hub2.bad[0]["why"] and not hub2.judged


def test_screen_shows_the_latest_verdicts(lishou):
    status = operator.Status("playing", lishou.cues[0], 12.0, None, None, True, "rec", True, 5,
                             0, (), 0)
    text = operator.render(status, judged=("shot 1: 1215.300 s 上耦上射 … 算 释",
                                          "round 3: 右 1 算, 左 0 算 — 右贤于左一奇"))
    assert "右贤于左一奇" in text and text.index("shot 1") < text.index("out: rec")


# -- user mistakes: one line on stderr, exit 2, before any MIDI port is opened -----------------
@pytest.mark.parametrize("extra, says", [
    (["--shots-log", "x.csv"], "--shots-log needs"),
    (["--osc", "99999"], "port must be 1..65535"),
    (["--osc", "9000", "--osc-out", "9001"], "expected HOST:PORT"),
    (["--osc", "{free}", "--shots-log", "{dir}"], "cannot open the shot log"),
    (["--osc", "{busy}"], "cannot listen for OSC"),
    (["--osc", "{free}", "--tolerance", "-1"], "--tolerance"),
    (["--osc", "0.0.0.0:{free}"], "needs --osc-allow"),                # the venue's network
    (["--osc", "{free}", "--shots-log", "{dir}/s.csv", "--shots-log-reserve", str(2 ** 60)],
     "cannot reserve"),
])
def test_live_judging_user_errors(extra, says, tmp_path):
    import subprocess
    import sys
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as free:
        free.bind(("127.0.0.1", 0))
        free_port = free.getsockname()[1]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
        busy.bind(("127.0.0.1", 0))
        extra = [a.format(dir=tmp_path, busy=busy.getsockname()[1], free=free_port)
                 for a in extra]
        p = subprocess.run([sys.executable, "-m", "yuexuan", "play", str(DASHE), "--cues",
                            "lishou", "--api", "jack", *extra], capture_output=True, text=True,
                           timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL,
                           env={**os.environ, "JACK_NO_START_SERVER": "1",
                                "JACK_DEFAULT_SERVER": "yx-none"})
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert lines[0].startswith("yuexuan play: ") and says in lines[0]

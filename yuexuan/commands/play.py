"""``yuexuan play CUES``: drive a live rig over MIDI from the compiled timeline (see docs/play.md)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import queue
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yuexuan import atomic
from yuexuan.commands import play_judging
from yuexuan.commands.common import add_selection_argument, data_source, load_timeline
from yuexuan.errors import UserError
from yuexuan.live import calls as live_calls
from yuexuan.live import jack_server, operator, osc, process, rtmidi_clients, timecode
from yuexuan.live import show as show_mod
from yuexuan.live.judged_show import JudgedShow
from yuexuan.live.midi_in import Input
from yuexuan.live.midi_out import Output
from yuexuan.live.program import build_program
from yuexuan.live.terminal import Terminal
from yuexuan.scoring import rules as rules_mod

if TYPE_CHECKING:
    from yuexuan.live.gate import Gate
    from yuexuan.live.judge import Judge
    from yuexuan.live.judging import Hub
    from yuexuan.live.program import Program
    from yuexuan.live.scheduler import TimingSummary
    from yuexuan.rite.cuesheet_hits import HitsMidi
    from yuexuan.scoring.logwrite import ShotLogWriter
    from yuexuan.timeline import Timeline


PORT_POLL_S = 0.5       # how often the output port is looked for (loss and return)
SERVER_POLL_S = 0.1     # while the port (or the JACK server) is gone: how often it is looked
                        # for; a server's shutdown is said within this (ServerWatch.retry_s
                        # bounds how often a new client is tried)
SCREEN_S = 0.2          # status screen refresh period
RT_PRIORITY = 5         # SCHED_FIFO priority of the scheduler thread: below JACK's (10+)
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("cues_file", metavar="CUES", nargs="?",
                   help="cue sheet (TOML) or a saved timeline (.json)")
    p.add_argument("--port", metavar="NAME",
                   help="send to the first MIDI destination whose name contains NAME "
                        "(default: open a virtual port 'yuexuan:out')")
    p.add_argument("--api", choices=sorted(rtmidi_clients.APIS), default="alsa",
                   help="MIDI backend (default alsa)")
    p.add_argument("--list-ports", action="store_true", help="list MIDI ports and exit")
    add_selection_argument(p, "play only these cues")
    p.add_argument("--from", dest="from_s", metavar="TIME",
                   help="start part-way (a rehearsal): timeline seconds of the selection, or a "
                        "cue id with an offset in seconds from its start (lishou, lishou+30)")
    p.add_argument("--until", dest="until_s", metavar="TIME",
                   help="start no note at or after TIME (seconds, or CUE[+S] as for --from)")
    p.add_argument("--auto", action="store_true",
                   help="no operator: play the selection as compiled (open-ended cues take "
                        "their default lengths)")
    p.add_argument("--clock", action="store_true",
                   help="send MIDI clock (24 ppqn, start/stop) at each cue's own beat (its beat_s)")
    p.add_argument("--bpm", type=float, metavar="BPM",
                   help="with --clock: a fixed clock tempo in quarter notes a minute instead")
    p.add_argument("--mtc", action="store_true", help="send MIDI Time Code quarter frames")
    p.add_argument("--mtc-fps", type=int, default=25, choices=sorted(timecode.MTC_RATES),
                   help="MTC frame rate (default 25)")
    p.add_argument("--msc", type=int, metavar="DEVICE",
                   help="send an MSC GO (lighting) to DEVICE (0-127) at each cue start; "
                        "accept MSC GO/STOP for it")
    p.add_argument("--pitch-bend", action="store_true",
                   help="tune by pitch bend instead of MTS SysEx")
    p.add_argument("--control", metavar="NAME",
                   help="MIDI input (foot switch, show controller) whose name contains NAME")
    p.add_argument("--go-midi", default="cc:64", metavar="note:N|cc:N",
                   help="incoming MIDI that means GO (default cc:64, a sustain pedal)")
    p.add_argument("--stop-midi", default="cc:67", metavar="note:N|cc:N",
                   help="incoming MIDI that means soft stop (default cc:67)")
    p.add_argument("--no-realtime", action="store_true",
                   help="keep the scheduler a normal thread (by default it asks for SCHED_FIFO "
                        f"priority {RT_PRIORITY} and stays normal where that is not allowed)")
    p.add_argument("--report", metavar="FILE.json",
                   help="write the run's timing report and cue anchors as JSON")
    play_judging.add_arguments(p)
    p.add_argument("--hits-midi", metavar="PORT",
                   help="a hit sensor: the MIDI input whose name contains PORT sends a note per hit "
                        "on a 侯 (the cue sheet's [hits_midi] note map); judged live like --osc "
                        "shots (see docs/play.md)")
    rules_mod.add_arguments(p)


def program_for(args: argparse.Namespace,
                judged: bool = False) -> tuple[Program, Timeline, dict[str, Any]]:
    """The compiled, windowed programme for ``args`` (timeline → MIDI messages → cues), the
    timeline, and the live calls (:func:`live_calls.call_templates`; {} unless ``judged``). When
    shots are judged live the compiled 获 and 大射正 calls of the shooting cues are left out."""
    from yuexuan.formats.midimessages import timeline_messages
    tl = load_timeline(args, "play", data_source(args))     # with --cues: cut, from time 0
    try:
        messages = timeline_messages(tl, pitch_bend=args.pitch_bend)
    except ValueError as exc:       # a saved timeline's notes that no MIDI can carry (hz ≤ 0 …)
        if not args.cues_file.lower().endswith(".json"):
            raise
        raise UserError(f"not a playable timeline ({exc})", file=args.cues_file) from None
    calls: dict[str, Any] = {}
    if judged:
        calls = live_calls.call_templates(tl, messages)
        messages = live_calls.without_calls(
            messages, live_calls.compiled_calls(tl, live_calls.live_cues(tl)))
    return build_program(tl, messages, None, args.from_s, args.until_s), tl, calls


def _print_ports(api: str) -> None:
    found = rtmidi_clients.list_ports(api)
    for kind in ("outputs", "inputs"):
        print(f"{api} MIDI {kind}:")
        for name in found[kind] or ["(none)"]:
            print(f"  {name}")


@dataclass(frozen=True)
class _Plan:
    """What ``play`` will do: every option checked, the programme compiled; no port open yet."""
    program: Program                    # the windowed MIDI programme
    timeline: Timeline                  # the timeline played
    calls: dict[str, Any]               # the live calls' templates ({} unless judged)
    options: show_mod.ShowOptions
    go_trigger: timecode.Trigger        # --go-midi
    stop_trigger: timecode.Trigger      # --stop-midi
    listen: tuple[str, int] | None      # --osc's (host, port)
    gate: Gate | None                   # --osc's allow-lists and rate limit
    log_reserve_bytes: int | None       # --shots-log's reserve
    notify: osc.OscOut | None           # --osc-out
    sensor_map: HitsMidi | None         # --hits-midi's note map
    judge: Judge | None                 # when shots are judged live (--osc, --hits-midi)


@dataclass
class _Rig:
    """The show's open pieces, filled in as they open (:func:`_open_rig`)."""
    commands: queue.Queue[str] = field(default_factory=queue.Queue)  # keys', OSC's, MIDI's
    ended: queue.Queue[Any] = field(default_factory=queue.Queue)     # cues ended, for the hub
    log: ShotLogWriter | None = None    # --shots-log
    listener: osc.OscListener | None = None
    out: Output | None = None
    show: JudgedShow | None = None
    hub: Hub | None = None              # when shots are judged live
    term: Terminal | None = None

    def to_hub(self, record: Any) -> None:
        """An OSC record to the hub (the listener starts once there is one)."""
        if self.hub is not None:
            self.hub.deliver(record)


def _plan(args: argparse.Namespace) -> _Plan:
    """Check the options (one line each, in this order) and compile; opens nothing."""
    if not args.cues_file:
        raise UserError("a cue sheet is needed (or --list-ports)", key="CUES")
    if args.msc is not None and not 0 <= args.msc <= 127:
        raise UserError(f"MSC device id must be 0..127, got {args.msc}", key="--msc")
    go_trigger = timecode.parse_trigger(args.go_midi, "--go-midi")
    stop_trigger = timecode.parse_trigger(args.stop_midi, "--stop-midi")
    clock_beat_s = timecode.beat_s_of_bpm(args.bpm) if args.clock and args.bpm is not None else None
    judged = bool(args.osc or args.hits_midi)
    if args.shots_log and not judged:
        raise UserError("--shots-log needs shots to judge (--osc or --hits-midi)",
                        key="--shots-log")
    listen, gate = play_judging.listen_plan(args)
    sensor_map = None
    if args.hits_midi:                   # the sensor's note map, checked before any port opens
        from yuexuan.rite import cuesheet_hits
        sensor_map = cuesheet_hits.read(args.cues_file)
    notify = (osc.OscOut(*osc.host_port(args.osc_out, "--osc-out", need_host=True))
              if args.osc_out else None)
    program, timeline, calls = program_for(args, judged)
    if sensor_map is not None and timeline.rite is not None:     # its 侯 by name, as the rite has them
        sensor_map = sensor_map.for_hou(timeline.rite.hou_names)[0]
    judge = play_judging.live_judge(args, timeline) if judged else None
    reserve = play_judging.reserve_bytes(args, judge)
    options = show_mod.ShowOptions(auto=args.auto, from_s=program.from_s, until_s=program.until_s,
                                   clock=args.clock, clock_beat_s=clock_beat_s,
                                   mtc_fps=args.mtc_fps if args.mtc else None, msc_device=args.msc,
                                   rt_priority=None if args.no_realtime else RT_PRIORITY)
    return _Plan(program, timeline, calls, options, go_trigger, stop_trigger, listen, gate,
                 reserve, notify, sensor_map, judge)


def _input_priority(args: argparse.Namespace) -> int | None:
    """SCHED_FIFO priority of the OSC and hit-sensor threads: one below the scheduler's."""
    return None if args.no_realtime else RT_PRIORITY - 1


def _open_rig(args: argparse.Namespace, plan: _Plan, rig: _Rig,
              stack: contextlib.ExitStack) -> None:
    """Open the rig into ``rig``, each piece's close pushed on ``stack`` as it opens, so that any
    exit closes what was opened in reverse order: the hit sensor and the OSC listener stop first,
    the show shuts down (nothing left sounding), its last screen, then the port and the log. The
    log and the OSC port open before the MIDI port, so that their mistakes come before it."""
    rig.log = play_judging.shots_log(args, plan.log_reserve_bytes)
    if rig.log is not None:
        stack.callback(rig.log.close)
    if plan.listen is not None:          # bound now, started once the hub is there
        rig.listener = osc.OscListener(*plan.listen, rig.to_hub, _input_priority(args), plan.gate)
        stack.callback(rig.listener.close)
    out = rig.out = Output(args.api, args.port)
    stack.callback(lambda: out.close(again=rig.show.releases() if rig.show is not None else ()))
    stack.callback(_last_screen, rig)    # after the show's shutdown
    show = rig.show = _show(plan, out, rig.ended)
    stack.callback(show.shutdown)
    if args.control:
        control = Input(args.api, args.control, lambda data: show.midi_in(
            data, plan.go_trigger, plan.stop_trigger))
        stack.callback(control.close)
        out.follow(control)                 # re-created with a JACK server that returns
    if plan.judge is not None:
        from yuexuan.live.judging import Hub, round_closing_cues
        rig.hub = Hub(plan.judge, show, plan.timeline, plan.calls, rig.log, plan.notify,
                      rig.commands.put, round_closing_cues(plan.timeline), rig.listener)
    if rig.listener is not None:
        rig.listener.start()
        stack.callback(rig.listener.stop)
    if plan.sensor_map is not None:     # --hits-midi
        from yuexuan.live import hits
        assert rig.hub is not None          # --hits-midi judges: the hub is there
        _, sensor = hits.open_sensor(args.api, args.hits_midi, rig.hub, plan.sensor_map,
                                     plan.timeline, _input_priority(args))
        stack.callback(sensor.close)
        out.follow(sensor)
    listening = None if rig.listener is None else "{}:{}".format(*rig.listener.address)
    rig.term = Terminal(rig.commands, listening)


def _show(plan: _Plan, out: Output, ended: queue.Queue[Any]) -> JudgedShow:
    """The show on ``out``, telling --osc-out of each cue and beat, and the hub (through
    ``ended``) of each cue's end when shots are judged live."""
    hooks: dict[str, Any] = {}          # on_cue, on_beat, on_cue_end: each called with a Cue or Beat
    if plan.notify is not None:
        hooks.update(on_cue=plan.notify.cue, on_beat=plan.notify.beat)
    if plan.judge is not None:
        hooks["on_cue_end"] = ended.put
    return JudgedShow(plan.program, out.send, plan.options, port_name=out.port_name or "",
                      beats=plan.timeline.beats, **hooks)


def _last_screen(rig: _Rig) -> None:
    """The terminal's last screen (or last lines), then the terminal as it was."""
    if rig.term is not None and rig.show is not None:
        with contextlib.suppress(OSError):          # the terminal may have gone (SIGHUP)
            rig.term.show(rig.show.status(), rig.hub)
        rig.term.close()


def run(args: argparse.Namespace) -> int:
    if args.list_ports:
        _print_ports(args.api)
        return 0
    plan = _plan(args)
    rig = _Rig()
    interrupted = False
    with contextlib.ExitStack() as stack:
        process.settings(stack, quiet_root_logger=plan.listen is not None)
        rig_stack = stack.enter_context(contextlib.ExitStack())
        stack.callback(process.ignore_stop_signals)        # the first thing done on the way out
        try:
            _open_rig(args, plan, rig, rig_stack)
            _drive(rig)
        except KeyboardInterrupt:
            if rig.show is None:                    # before there was a show: as any command
                raise
            interrupted = True
    return _finish(args, plan, rig, interrupted)


def _drive(rig: _Rig) -> None:
    """Start the show; until it is done (or quit): run the operator's commands, tell the hub of
    ended cues, look for the output port (lost, back) and redraw the screen."""
    show, out, term = rig.show, rig.out, rig.term
    assert show is not None and out is not None and term is not None     # _open_rig's
    show.start()
    last_poll = time.monotonic()
    last_quit = float("-inf")
    next_draw = 0.0
    while not show.done.is_set():
        if show.error is not None:
            raise RuntimeError(f"scheduler failed: {show.error!r}") from show.error
        try:
            cmd = rig.commands.get(timeout=0.02)
        except queue.Empty:
            cmd = None
        if cmd == "quit":                   # asked twice: one stray key never ends a show
            if time.monotonic() - last_quit <= operator.QUIT_WITHIN_S:
                break
            last_quit = time.monotonic()
            show.notice(f"quit? press q again within {operator.QUIT_WITHIN_S:.0f} s to end the show")
        elif cmd:
            show.notice(show.command(cmd))
        _cues_ended(rig.ended, rig.hub)
        now = time.monotonic()
        if now >= last_poll + (PORT_POLL_S if out.connected and not out.server_down
                               else SERVER_POLL_S):
            last_poll = now
            change = out.check()
            if change:
                show.port_changed(change, out.resume)
        if now >= next_draw or cmd:
            next_draw = now + (SCREEN_S if term.tty else 0.05)
            if rig.hub is not None:
                rig.hub.poll(now)               # refusals, drops: on the screen within 1 s
            term.show(show.status(), rig.hub)


def _finish(args: argparse.Namespace, plan: _Plan, rig: _Rig, interrupted: bool) -> int:
    """The run's summary and the judging's last lines on stderr, ``--report``; the exit status."""
    show, out, hub = rig.show, rig.out, rig.hub
    assert show is not None and out is not None         # run() comes here only with a show
    summary = show.stats.summary()
    lines = [summary.line() + (f"; {out.dropped} dropped while the port was gone"
                               if out.dropped else "")
             + (f"; {show.notes_dropped} notes not sent" if show.notes_dropped else "")
             + (f"; the JACK server went away {len(out.server_outages())} times"
                if out.server_outages() else "")
             + ("" if show.realtime else "; scheduler ran without realtime priority")]
    _cues_ended(rig.ended, hub)
    lines.extend(hub.final_lines() if hub is not None else ())
    undelivered = out.delivery.line() if out.delivery is not None else None
    if undelivered:
        lines.append(f"yuexuan play: {undelivered}")
    if args.report:             # first: after SIGHUP the terminal that stderr writes to is gone
        report = _report(show, summary)
        report["jack_server_outages"] = list(jack_server.outages_report(out.server_outages()))
        report["delivery"] = None if out.delivery is None else dataclasses.asdict(out.delivery)
        if hub is not None:
            report["judging"] = hub.summary()
        if plan.notify is not None:
            report["osc_out_failed"] = plan.notify.failed
        atomic.write_text(args.report, json.dumps(report, ensure_ascii=False, indent=1))
    if interrupted:
        lines.append("yuexuan play: interrupted; all notes off")
    process.tell(lines)
    return 130 if interrupted else 0



def _cues_ended(ended: queue.Queue[Any], hub: Hub | None) -> None:
    """Tell the hub of the cues that ended (a round's announcement when its cue ends). The
    scheduler thread queues them: it holds the show's lock, which the hub's shots take after
    their own."""
    while hub is not None and not ended.empty():
        hub.cue_ended(ended.get())


def _report(show: JudgedShow, summary: TimingSummary) -> dict[str, Any]:
    return {"timing_ms": {"count": summary.count, "p50": summary.p50_ms, "p95": summary.p95_ms,
                          "p99": summary.p99_ms, "max": summary.max_ms},
            "anchors": [{"cues": list(c), "anchor_monotonic": a} for c, a in show.anchors],
            "sent": show.sent, "dropped": show.dropped, "notes_dropped": show.notes_dropped,
            "realtime": show.realtime}

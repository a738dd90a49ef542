"""``yuexuan play CUES``: drive a live rig over MIDI from the compiled timeline (see docs/play.md)."""

from __future__ import annotations

import json
import logging
import os
import queue
import select
import signal
import sys
import threading
import time

from yuexuan import atomic
from yuexuan.scoring import rules as rules_mod
from yuexuan.live import show as show_mod
from yuexuan.live import calls as live_calls
from yuexuan.live import operator
from yuexuan.live import osc
from yuexuan.live import ports
from yuexuan.live import timecode
from yuexuan.live.judged_show import JudgedShow
from yuexuan.live.program import build_program
from yuexuan.commands.common import add_selection_argument, data_source, load_timeline
from yuexuan.errors import UserError


PORT_POLL_S = 0.5       # how often the output port is looked for (loss and return)
SCREEN_S = 0.2          # status screen refresh period
RT_PRIORITY = 5         # SCHED_FIFO priority of the scheduler thread: below JACK's (10+)
LIVE_JUDGING_OPTIONS = (   # (flag, metavar, help) of live judging (docs/play.md, "Live judging")
    ("--osc", "[HOST:]PORT", "listen for OSC over UDP (default host 127.0.0.1): shots judged live "
     "(/yuexuan/loose, /yuexuan/shot, /yuexuan/correct) and show control (/yuexuan/go, stop, "
     "hold, resume, panic); "
     "see docs/play.md"),
    ("--osc-out", "HOST:PORT", "send OSC there: /yuexuan/cue, /yuexuan/beat, /yuexuan/verdict, "
     "/yuexuan/tally"),
    ("--shots-log", "FILE", "append every shot judged live to FILE (check --format csv columns, "
     "one fsynced row a shot)"),
)


def add_arguments(p) -> None:
    p.add_argument("cues_file", metavar="CUES", nargs="?",
                   help="cue sheet (TOML) or a saved timeline (.json)")
    p.add_argument("--port", metavar="NAME",
                   help="send to the first MIDI destination whose name contains NAME "
                        "(default: open a virtual port 'yuexuan:out')")
    p.add_argument("--api", choices=sorted(ports.APIS), default="alsa",
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
    for flag, metavar, text in LIVE_JUDGING_OPTIONS:
        p.add_argument(flag, metavar=metavar, help=text)
    p.add_argument("--hits-midi", metavar="PORT",
                   help="a hit sensor: the MIDI input whose name contains PORT sends a note per hit "
                        "on a 侯 (the cue sheet's [hits_midi] note map); judged live like --osc "
                        "shots (see docs/play.md)")
    rules_mod.add_arguments(p)


def program_for(args, judged: bool = False):
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
    calls = {}
    if judged:
        calls = live_calls.call_templates(tl, messages)
        messages = live_calls.without_calls(
            messages, live_calls.compiled_calls(tl, live_calls.live_cues(tl)))
    return build_program(tl, messages, None, args.from_s, args.until_s), tl, calls


def _live_judge(args, timeline):
    """For live judging: the Judge of the one timeline played, at the whole ceremony's seconds
    (a shot log's, :func:`yuexuan.timeline.at_ceremony_times`), with ``check``'s rules."""
    from yuexuan.live.judge import Judge, round_rosters
    from yuexuan.timeline import at_ceremony_times

    ceremony = at_ceremony_times(timeline)
    rules = rules_mod.rules_from_args(args, ceremony, data_source(args))
    judge = Judge(rules, round_rosters(ceremony))
    # numpy's first calls in the judge take ~20 ms: spent here on a throwaway, not on the first hit
    Judge(rules, None).shot({"archer": "-", "rank": "士", "role": "上射", "target": "干",
                             "result": "贯"}, 0.0)
    return judge


def _shots_log(args):
    """``--shots-log``'s writer (None without it); a repaired file is said on stderr."""
    if not args.shots_log:
        return None
    from yuexuan.scoring.logwrite import ShotLogWriter

    log = ShotLogWriter(args.shots_log)
    if log.repaired:
        print(f"yuexuan play: {args.shots_log}: {log.repaired}", file=sys.stderr)
    return log


def _print_ports(api: str) -> None:
    found = ports.list_ports(api)
    for kind in ("outputs", "inputs"):
        print(f"{api} MIDI {kind}:")
        for name in found[kind] or ["(none)"]:
            print(f"  {name}")


class _Terminal:
    """Raw key input and a redrawn status screen on a TTY; lines in, lines out otherwise."""

    def __init__(self, commands: queue.Queue):
        self.commands = commands
        self.tty = sys.stdin.isatty() and sys.stdout.isatty()
        self._saved = None
        self._stop = threading.Event()
        self._last = None
        self._notices_seen = 0
        self._said_seen = 0
        if self.tty:
            import termios
            import tty
            self._saved = termios.tcgetattr(sys.stdin.fileno())
            tty.setcbreak(sys.stdin.fileno())
            sys.stdout.write("\x1b[?25l")
        threading.Thread(target=self._read, daemon=True, name="yuexuan-keys").start()

    def _read(self) -> None:
        fd = sys.stdin.fileno()
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.1)
            except (OSError, ValueError):
                return
            if not ready:
                continue
            if self.tty:
                key = os.read(fd, 1).decode("utf-8", "replace")
                cmd = operator.command_for_key(key)
            else:
                line = sys.stdin.readline()
                if not line:
                    return              # end of input: keep playing (auto) or until signalled
                cmd = operator.command_for_line(line)
            if cmd:
                self.commands.put(cmd)

    def show(self, status, hub=None) -> None:
        """Draw the screen (with the hub's latest verdicts), or print what changed, one a line."""
        if self.tty:
            judged = tuple(hub.screen()) if hub is not None else ()
            sys.stdout.write("\x1b[H\x1b[2J" + operator.render(status, judged=judged) + "\n")
            sys.stdout.flush()
            return
        said = hub.said[self._said_seen:] if hub is not None else []
        self._said_seen += len(said)
        for line in said:
            print(line, flush=True)
        key = (status.state, status.cue.id if status.cue else None)
        if key != self._last:
            self._last = key
            print(f"{status.state}" + (f" {key[1]}" if key[1] else ""), flush=True)
        fresh = status.notice_count - self._notices_seen
        for n in status.notices[-fresh:] if fresh > 0 else ():
            print(f"» {n}", flush=True)
        self._notices_seen = status.notice_count

    def close(self) -> None:
        self._stop.set()
        if self._saved is not None:
            import termios
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved)
            sys.stdout.write("\x1b[?25h\n")
            sys.stdout.flush()


def _on_term(signum, frame):
    raise KeyboardInterrupt


def run(args) -> int:
    if args.list_ports:
        _print_ports(args.api)
        return 0
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
    listen = osc.host_port(args.osc, "--osc") if args.osc else None
    if args.hits_midi:                   # the sensor's note map, checked before any port opens
        from yuexuan.rite import cuesheet_hits
        sensor_map = cuesheet_hits.read(args.cues_file)
    notify = (osc.OscOut(*osc.host_port(args.osc_out, "--osc-out", need_host=True))
              if args.osc_out else None)
    program, timeline, calls = program_for(args, judged)
    judge = _live_judge(args, timeline) if judged else None
    options = show_mod.ShowOptions(auto=args.auto, from_s=program.from_s, until_s=program.until_s,
                               clock=args.clock, clock_beat_s=clock_beat_s,
                               mtc_fps=args.mtc_fps if args.mtc else None, msc_device=args.msc,
                               rt_priority=None if args.no_realtime else RT_PRIORITY)
    sys.setswitchinterval(0.0005)        # let the scheduler thread take the GIL promptly
    hub = listener = None
    log = _shots_log(args)               # the log and the OSC port before the MIDI port
    try:
        if listen is not None:           # started once the hub is there
            # python-osc logs odd datagrams with logging.warning on the root logger, which would
            # print over the operator's screen (an argument of an unknown type is dropped, and
            # the message then reported as bad for its count)
            logging.getLogger().addHandler(logging.NullHandler())
            listener = osc.OscListener(*listen, lambda record: hub.deliver(record),  # below
                                       None if args.no_realtime else RT_PRIORITY - 1)  # the schedule
        out = ports.Output(args.api, args.port)
    except BaseException:
        for opened in (log, listener):
            if opened is not None:
                opened.close()
        raise
    hooks = {} if notify is None else {"on_cue": notify.cue, "on_beat": notify.beat}
    ended: queue.Queue = queue.Queue()      # cues ended, for the hub (on the main thread)
    if judged:
        hooks["on_cue_end"] = ended.put
    show = JudgedShow(program, out.send, options, port_name=out.port_name, beats=timeline.beats,
                    **hooks)
    control = hits_port = None
    commands: queue.Queue = queue.Queue()
    term = None
    old_term = signal.signal(signal.SIGTERM, _on_term)
    interrupted = False
    try:
        if args.control:
            control = ports.Input(args.api, args.control,
                                  lambda data: show.midi_in(data, go_trigger, stop_trigger))
        if judged:
            from yuexuan.live.judging import Hub, round_closing_cues
            hub = Hub(judge, show, timeline, calls, log, notify, commands.put,
                      round_closing_cues(timeline))
        if listener is not None:
            listener.start()
        if args.hits_midi:
            from yuexuan.live import hits
            _, hits_port = hits.open_sensor(args.api, args.hits_midi, hub, sensor_map,
                                            timeline,
                                            None if args.no_realtime else RT_PRIORITY - 1)
        term = _Terminal(commands)
        show.start()
        next_poll = time.monotonic() + PORT_POLL_S
        next_draw = 0.0
        while not show.done.is_set():
            if show.error is not None:
                raise RuntimeError(f"scheduler failed: {show.error!r}") from show.error
            try:
                cmd = commands.get(timeout=0.02)
            except queue.Empty:
                cmd = None
            if cmd == "quit":
                break
            if cmd:
                show.notice(show.command(cmd))
            _cues_ended(ended, hub)
            now = time.monotonic()
            if now >= next_poll:
                next_poll = now + PORT_POLL_S
                change = out.check()
                if change:
                    show.port_changed(change, out.resume)
            if now >= next_draw or cmd:
                next_draw = now + (SCREEN_S if term.tty else 0.05)
                term.show(show.status(), hub)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            if listener is not None:
                listener.close()
            if hits_port is not None:
                hits_port.close()
            show.shutdown()
            if control is not None:
                control.close()
            out.close()
            if log is not None:
                log.close()
            if term is not None:
                term.show(show.status(), hub)
                term.close()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, old_term)
    summary = show.stats.summary()
    print(summary.line() + (f"; {out.dropped} dropped while the port was gone"
                            if out.dropped else "")
          + ("" if show.realtime else "; scheduler ran without realtime priority"),
          file=sys.stderr)
    _cues_ended(ended, hub)
    for line in hub.final_lines() if hub is not None else ():
        print(line, file=sys.stderr)
    if args.report:
        report = _report(show, summary)
        if hub is not None:
            report["judging"] = hub.summary()
        if notify is not None:
            report["osc_out_failed"] = notify.failed
        atomic.write_text(args.report, json.dumps(report, ensure_ascii=False, indent=1))
    if interrupted:
        print("yuexuan play: interrupted; all notes off", file=sys.stderr)
        return 130
    return 0


def _cues_ended(ended: queue.Queue, hub) -> None:
    """Tell the hub of the cues that ended (a round's announcement when its cue ends). The
    scheduler thread queues them: it holds the show's lock, which the hub's shots take after
    their own."""
    while hub is not None and not ended.empty():
        hub.cue_ended(ended.get())


def _report(show, summary) -> dict:
    return {"timing_ms": {"count": summary.count, "p50": summary.p50_ms, "p95": summary.p95_ms,
                          "p99": summary.p99_ms, "max": summary.max_ms},
            "anchors": [{"cues": list(c), "anchor_monotonic": a} for c, a in show.anchors],
            "sent": show.sent, "dropped": show.dropped, "realtime": show.realtime}

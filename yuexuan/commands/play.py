"""``yuexuan play CUES``: drive a live rig over MIDI from the compiled timeline (see docs/play.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yuexuan.commands import play_judging
from yuexuan.commands.common import add_selection_argument, data_source, load_timeline
from yuexuan.errors import UserError
from yuexuan.live import calls as live_calls
from yuexuan.live import operator, rtmidi_clients, timecode
from yuexuan.live.program import build_program
from yuexuan.live.rig import RT_PRIORITY, ShowPlan, play
from yuexuan.live.show import ShowOptions

if TYPE_CHECKING:
    from yuexuan.live.program import Program
    from yuexuan.timeline import Timeline


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
    p.add_argument("--lang", choices=operator.LANGS,
                   help="the cues on the operator's screen: the text's words (zh), their English "
                        "gloss and conditions (en) or both (default: both on a terminal of 100 "
                        "columns or more, else zh)")
    p.add_argument("--report", metavar="FILE.json",
                   help="write the run's timing report and cue anchors as JSON")
    play_judging.add_arguments(p)           # --osc …, --shots-log, --hits-midi, check's rules


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


def _plan(args: argparse.Namespace) -> ShowPlan:
    """Check the options (one line each, in this order) and compile; opens nothing."""
    if not args.cues_file:
        raise UserError("a cue sheet is needed (or --list-ports)", key="CUES")
    if args.msc is not None and not 0 <= args.msc <= 127:
        raise UserError(f"MSC device id must be 0..127, got {args.msc}", key="--msc")
    go_trigger = timecode.parse_trigger(args.go_midi, "--go-midi")
    stop_trigger = timecode.parse_trigger(args.stop_midi, "--stop-midi")
    clock_beat_s = timecode.beat_s_of_bpm(args.bpm) if args.clock and args.bpm is not None else None
    judging = play_judging.plan(args)            # --osc …, --shots-log, --hits-midi: checked
    program, timeline, calls = program_for(args, judging.judged)
    options = ShowOptions(auto=args.auto, from_s=program.from_s, until_s=program.until_s,
                          clock=args.clock, clock_beat_s=clock_beat_s,
                          mtc_fps=args.mtc_fps if args.mtc else None, msc_device=args.msc,
                          rt_priority=None if args.no_realtime else RT_PRIORITY)
    plan = ShowPlan(program, timeline, options, args.api, args.port, go_trigger, stop_trigger,
                    control=args.control, report=args.report, lang=args.lang, calls=calls)
    return judging.joined(plan, args)


def run(args: argparse.Namespace) -> int:
    if args.list_ports:
        for kind, names in rtmidi_clients.list_ports(args.api).items():
            print(f"{args.api} MIDI {kind}:")
            for name in names or ["(none)"]:
                print(f"  {name}")
        return 0
    return play(_plan(args))

"""``play``'s live judging options (docs/play.md, "Live judging", "Network safety"): the OSC
listener's address and allow-lists, the hit sensor's map, the live judge, the shot log and its
reserve, checked and joined to the show's plan (:class:`yuexuan.live.rig.ShowPlan`). Split from
:mod:`yuexuan.commands.play` (one job: from options to what live judging opens)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yuexuan.commands.common import data_source
from yuexuan.errors import UserError
from yuexuan.live import gate as gate_mod
from yuexuan.live import osc
from yuexuan.scoring import rules as rules_mod

if TYPE_CHECKING:
    from yuexuan.live.judge import Judge
    from yuexuan.live.rig import ShowPlan
    from yuexuan.rite.cuesheet_hits import HitsMidi
    from yuexuan.timeline import Timeline

OPTIONS = (   # (flag, metavar, help) of live judging
    ("--osc", "[HOST:]PORT", "listen for OSC over UDP (default host 127.0.0.1): shots judged live "
     "(/yuexuan/loose, /yuexuan/shot, /yuexuan/correct) and show control (/yuexuan/go, stop, "
     "hold, resume, panic); see docs/play.md"),
    ("--osc-allow", "CIDR[,CIDR]", "only these senders' datagrams are read (others are counted "
     "and dropped unread); required when --osc's host is not loopback"),
    ("--osc-control-allow", "CIDR[,CIDR]", "only these senders may go, stop, hold, resume, "
     "panic or correct (default: whoever --osc-allow lets in)"),
    ("--osc-out", "HOST:PORT", "send OSC there: /yuexuan/cue, /yuexuan/beat, /yuexuan/verdict, "
     "/yuexuan/tally, /yuexuan/unlogged"),
    ("--shots-log", "FILE", "append every shot judged live to FILE (check --format csv columns, "
     "one fsynced row a shot)"),
    ("--shots-log-reserve", "BYTES", "disk space held for the log from the start, spent when the "
     "disk fills (default: the whole show's rows, twice, and a margin)"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    for flag, metavar, text in OPTIONS:
        p.add_argument(flag, metavar=metavar, help=text)
    p.add_argument("--hits-midi", metavar="PORT",
                   help="a hit sensor: the MIDI input whose name contains PORT sends a note per hit "
                        "on a 侯 (the cue sheet's [hits_midi] note map); judged live like --osc "
                        "shots (see docs/play.md)")
    rules_mod.add_arguments(p)


@dataclass(frozen=True)
class Judging:
    """Live judging's options, checked before the timeline is compiled (:func:`plan`)."""
    judged: bool                            # shots are judged live (--osc, --hits-midi)
    listen: tuple[str, int] | None          # --osc's (host, port)
    gate: gate_mod.Gate | None              # --osc's allow-lists and rate limit
    sensor_map: HitsMidi | None             # --hits-midi's note map
    notify: osc.OscOut | None               # --osc-out

    def joined(self, show: ShowPlan, args: argparse.Namespace) -> ShowPlan:
        """``show`` (its timeline compiled) with live judging: the judge, the sensor's map by
        the rite's 侯, the log's reserve (only --osc-out's notifications when nothing is judged)."""
        if not self.judged:
            return dataclasses.replace(show, notify=self.notify)
        sensor_map = self.sensor_map
        if sensor_map is not None and show.timeline.rite is not None:   # its 侯 as the rite names them
            sensor_map = sensor_map.for_hou(show.timeline.rite.hou_names)[0]
        judge = live_judge(args, show.timeline)
        return dataclasses.replace(
            show, listen=self.listen, gate=self.gate, notify=self.notify, judge=judge,
            shots_log=args.shots_log, log_reserve_bytes=reserve_bytes(args, judge),
            hits_midi=args.hits_midi, sensor_map=sensor_map)


def plan(args: argparse.Namespace) -> Judging:
    """Live judging's options checked (one line each, in this order)."""
    judged = bool(args.osc or args.hits_midi)
    if args.shots_log and not judged:
        raise UserError("--shots-log needs shots to judge (--osc or --hits-midi)",
                        key="--shots-log")
    listen, gate = listen_plan(args)
    sensor_map = None
    if args.hits_midi:                   # the sensor's note map, checked before any port opens
        from yuexuan.rite import cuesheet_hits
        sensor_map = cuesheet_hits.read(args.cues_file)
    notify = (osc.OscOut(*osc.host_port(args.osc_out, "--osc-out", need_host=True))
              if args.osc_out else None)
    return Judging(judged, listen, gate, sensor_map, notify)


def listen_plan(args: argparse.Namespace) -> tuple[tuple[str, int] | None, gate_mod.Gate | None]:
    """``--osc``'s (host, port) and its gate; listening beyond loopback without ``--osc-allow``
    is refused."""
    if not args.osc:
        if args.osc_allow or args.osc_control_allow:
            raise UserError("--osc-allow and --osc-control-allow need --osc", key="--osc-allow")
        return None, None
    listen = osc.host_port(args.osc, "--osc")
    allow = gate_mod.networks(args.osc_allow, "--osc-allow")
    gate_mod.check_bind(listen[0], allow)
    control = gate_mod.networks(args.osc_control_allow, "--osc-control-allow")
    return listen, gate_mod.Gate(allow, control)


def reserve_bytes(args: argparse.Namespace, judge: Judge | None) -> int | None:
    """``--shots-log-reserve`` checked, else the whole show's (:func:`yuexuan.scoring.logwrite.
    show_reserve_bytes` of the judge's roster); None without ``--shots-log``."""
    from yuexuan.scoring.logwrite import show_reserve_bytes

    if not args.shots_log:
        if args.shots_log_reserve is not None:
            raise UserError("--shots-log-reserve needs --shots-log", key="--shots-log-reserve")
        return None
    if args.shots_log_reserve is None:
        names = sorted({a for r in judge.rosters.values() for a in r}) if judge else []
        return show_reserve_bytes(names)
    try:
        n = int(args.shots_log_reserve)
    except ValueError:
        n = -1
    if n < 0:
        raise UserError(f"expected a number of bytes ≥ 0, got {args.shots_log_reserve!r}",
                        key="--shots-log-reserve")
    return n


def live_judge(args: argparse.Namespace, timeline: Timeline) -> Judge:
    """For live judging: the Judge of the one timeline played, at the whole ceremony's seconds
    (a shot log's, :func:`yuexuan.timeline.at_ceremony_times`), with ``check``'s rules; a
    loose outside the played cues' seconds is refused."""
    from yuexuan.live.judge import Judge, round_rosters
    from yuexuan.timeline import at_ceremony_times

    ceremony = at_ceremony_times(timeline)
    rules = rules_mod.rules_from_args(args, ceremony, data_source(args))
    span = (min((c.start for c in ceremony.cues), default=0.0), ceremony.duration)
    judge = Judge(rules, round_rosters(ceremony), span_s=span)
    # numpy's first calls in the judge take ~20 ms: spent here on a throwaway, not on the first hit
    Judge(rules, None).shot({"archer": "-", "rank": rules.ranks[-1], "role": "上射",
                             "target": rules.hou[-1], "result": "贯"}, 0.0)
    return judge

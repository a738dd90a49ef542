"""``play``'s live judging options (docs/play.md, "Live judging", "Network safety"): the OSC
listener's address and allow-lists, the live judge, the shot log and its reserve. Split from
:mod:`yuexuan.commands.play` (one job: from options to the pieces live judging opens)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from yuexuan.commands.common import data_source
from yuexuan.errors import UserError
from yuexuan.live import gate as gate_mod
from yuexuan.live import osc
from yuexuan.scoring import rules as rules_mod

if TYPE_CHECKING:
    from yuexuan.live.judge import Judge
    from yuexuan.scoring.logwrite import ShotLogWriter
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


def shots_log(args: argparse.Namespace, reserve: int | None) -> ShotLogWriter | None:
    """``--shots-log``'s writer with its reserve (None without it); a repaired file is said on
    stderr."""
    if not args.shots_log:
        return None
    from yuexuan.scoring.logwrite import ShotLogWriter

    log = ShotLogWriter(args.shots_log, reserve)
    if log.repaired:
        print(f"yuexuan play: {args.shots_log}: {log.repaired}", file=sys.stderr)
    return log

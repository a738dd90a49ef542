"""``yuexuan check CUES SHOTS``: apply the 释获 rules to a log of shots and announce the result.

See docs/check.md. CUES is a cue sheet (compiled with ``compile_file``) or a saved timeline
JSON; its 射节 beats are the 建鼓 strokes a round-3 shot must meet (不鼓不释), unless
``--beats-from`` takes them from a recording.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from yuexuan import atomic
from yuexuan.check.log_warnings import log_warnings, roster
from yuexuan.commands.common import data_source, read_timeline
from yuexuan.commands.progress import Progress
from yuexuan.errors import UserError
from yuexuan.scoring import arrow_stroke, logread, report, rules, tally
from yuexuan.scoring.logread import read_columns
from yuexuan.scoring.shots import Shots, for_rite, shots_from_columns
from yuexuan.timeline import at_ceremony_times

if TYPE_CHECKING:                    # the drum finder is imported only with --beats-from (start-up time)
    from yuexuan.check.drum.finder import DrumEvidence
    from yuexuan.check.evidence import ShotEvidence


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("cues", metavar="CUES",
                   help="cue sheet (.toml), or a timeline saved by "
                        "'yuexuan compile --timeline' (.json)")
    p.add_argument("shots", metavar="SHOTS",
                   help="shot log: UTF-8 CSV with a header row, or JSON lines")
    rules.add_arguments(p)           # --tolerance, --cue, --strict-gong, --own-jie (shared with play)
    p.add_argument("--offset", type=float, default=0.0, metavar="SECONDS",
                   help="added to every shot time to put the log's clock on the timeline's "
                        "(default 0)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="table for people (default), json or csv for programs")
    p.add_argument("--beats-from", metavar="AUDIO", default=None,
                   help="take the 建鼓 strokes from a recording of the 射节 (WAV, FLAC, MP3, or a "
                        "phone video MP4/MOV) instead of the timeline, and report the live drum's "
                        "drift from the plan")
    p.add_argument("--beats-out", metavar="FILE", default=None,
                   help="with --beats-from: write the strokes as CSV (planned_s, heard_s, "
                        "confidence), one row per planned stroke and per extra stroke heard")
    p.add_argument("--plot", metavar="FILE.svg", default=None,
                   help="with --beats-from: draw the recording's onset strength, the strokes found, "
                        "the planned beats and each shot's verdict on one time axis (SVG)")
    p.add_argument("--audio-start", type=float, default=None, metavar="SECONDS",
                   help="with --beats-from: timeline time of the recording's first sample "
                        "(default: estimated by matching strokes to the planned beats)")
    p.add_argument("--delimiter", default=None, metavar="SEP",
                   help="the CSV log's field separator: , ; tab or | (default: sniffed)")
    p.add_argument("--encoding", default=None, choices=sorted(logread.ENCODINGS),
                   help="the log's encoding (default: UTF-8, or UTF-16 by its BOM or its bytes)")
    p.add_argument("--strict", action="store_true",
                   help="the log's warnings (an archer not in the roster, a rank, role or 侯 "
                        "against it, a row given twice) are errors")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write to FILE (atomically) instead of standard output")


_finite = rules.finite_seconds


def run(args: argparse.Namespace) -> int:
    tolerance = rules.tolerance_of(args.tolerance)
    offset = _finite("--offset", args.offset)
    if args.delimiter is not None and args.delimiter not in logread.DELIMITERS:
        raise UserError(f"--delimiter {args.delimiter!r}: expected one of , ; tab |")
    shots = shots_from_columns(read_columns(args.shots, args.delimiter, args.encoding))
    source = data_source(args)
    # a shot log's times are the whole ceremony's: a saved --cues selection is put back there
    timeline = at_ceremony_times(read_timeline(args.cues, "check", source=source))
    if timeline.rite is None:
        raise UserError("the timeline has no rite (its roster and 侯); recompile the cue sheet",
                        file=args.cues)
    shots = for_rite(shots, timeline.rite.ranks, timeline.rite.hou_names)     # the rite's ranks and 侯
    judging = rules.rules_from_args(args, timeline, source)    # the same as play's live judge
    plan, cue_ids, settings = judging.plan_s, judging.cue_ids, judging.settings
    drum = alignment = found = None
    beats = plan
    for opt, given in (("--beats-out", args.beats_out), ("--plot", args.plot)):
        if given and not args.beats_from:
            raise UserError(f"{opt} needs --beats-from AUDIO (the strokes come from a recording)")
    if args.beats_from:
        from yuexuan.check import evidence
        from yuexuan.check.drum import finder
        from yuexuan.check.drum.expected import expected

        start = None if args.audio_start is None else _finite("--audio-start", args.audio_start)
        if start is not None and not 0.0 <= start < timeline.duration:
            raise UserError(f"--audio-start {start:g} is outside the ceremony (0 to "
                            f"{timeline.duration:.1f} s of {args.cues}): give the ceremony time of "
                            f"the recording's first sample")
        bar = Progress("yuexuan check")

        def progress(stage: str, fraction: float | None) -> None:
            if fraction is None:
                bar.stage(stage)
            else:
                bar(fraction)
        try:
            found = finder.evidence(args.beats_from, plan, start, expected(timeline, plan),
                                    progress)
        finally:
            bar.done()
        alignment = found.alignment
        beats = alignment.live_s
        drum = {"source": str(args.beats_from), "recording_s": round(found.duration_s, 3),
                **alignment.report(), **evidence.summary(found),
                "placement": found.placement.report() if found.placement else None}
    if (shots.round == 3).any() and not len(beats):
        raise UserError("round-3 shots need 射节 beats, but the timeline has none"
                        + (f" for cue {args.cue!r}" if args.cue else " (no cue of kind shejie)"),
                        file=args.cues)
    bound = own = judging.bound_strokes(shots.round, shots.archers, shots.time + offset)
    if bound is not None and alignment is not None:
        bound = arrow_stroke.live_strokes(bound, plan, alignment)     # bound is own here
    verdict = tally.evaluate_shots(shots, beats, offset, settings, bound)
    names = roster(timeline.rite)
    status = 0
    if own is not None:           # --own-jie: a name the roster lacks has no stroke of its own
        stray = tally.rests_on_drum(shots, settings) & np.array(
            [a not in names for a in shots.archers], dtype=bool)
        verdict = tally.withhold(verdict, shots.round, shots.role, stray, tally.R_NOT_IN_ROSTER)
        status = 3 if stray.any() else 0
    proof = None
    if found is not None and drum is not None:              # drum: found's summary
        verdict, unjudged = _withhold(args, found, shots, verdict, settings, offset)
        drum["not_judged_rows"] = (np.flatnonzero(unjudged) + 1).tolist()
        status = 3 if unjudged.any() or status else 0
        proof = evidence.shot_evidence(found, plan, shots, verdict, settings, own)
        proof = proof._replace(uncertain=proof.uncertain & ~unjudged)
        drum["uncertain_rows"] = (np.flatnonzero(proof.uncertain) + 1).tolist()
        _write_evidence(args, found, plan, shots, verdict, proof, settings)
    warnings = list(shots.warnings) + log_warnings(shots, names,
                                                       settings.own_hou) + [
        f"{a} looses {n} arrows in round {r}; an archer has four (乘矢)"
        for r, a, n in tally.over_four(shots.round, shots.archers)]
    if args.strict and warnings:
        raise UserError(f"{warnings[0]} (--strict: {len(warnings)} warning"
                        f"{'s are' if len(warnings) > 1 else ' is'} an error)")
    for w in warnings:
        print(f"yuexuan check: warning: {w}", file=sys.stderr)
    meta = {"cues": str(args.cues), "shots": str(args.shots), "shejie_cues": cue_ids,
            "beats": int(len(beats)), "beats_from": "recording" if drum else "timeline",
            "tolerance_s": tolerance, "offset_s": offset,
            "gong_exempt_in_round_3": settings.gong_exempt,
            "strokes": "own 节" if args.own_jie else "any",
            "gong_outside_hu_counted": settings.gong_outside_hu,
            "host": rite.host.rank if (rite := timeline.rite) is not None and rite.host is not None else None}
    if args.format == "json":
        text = report.render_json(shots, verdict, meta, drum, warnings, proof)
    elif args.format == "csv":
        text = report.render_csv(shots, verdict, proof)
        doubt = (proof is not None and drum is not None
                 and report.uncertain_line(proof, drum["confidence_threshold"]))
        for line in (report.tally_lines(verdict)
                     + ([report.drum_summary(drum), report.placement_line(drum)] if drum else [])
                     + ([doubt] if doubt else [])):
            print(line, file=sys.stderr)
    else:
        text = report.render_table(shots, verdict, meta, drum, warnings, proof)
    if args.output:
        atomic.write_text(args.output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return status


def _withhold(args: argparse.Namespace, found: DrumEvidence, shots: Shots, verdict: tally.Verdict,
              settings: tally.Settings, offset: float) -> tuple[tally.Verdict, npt.NDArray[np.bool_]]:
    """The verdicts with the shots the recording cannot judge left out (docs/check.md, exit 3):
    every shot resting on the drum when the placement is ambiguous (one line on stderr naming
    the candidate starts), else those outside the recording's span (``no audio``)."""
    rests = tally.rests_on_drum(shots, settings)
    placed = found.placement
    if placed is not None and placed.ambiguous and placed.runner_up is not None:
        mask, reason = rests, tally.R_AMBIGUOUS
        print(f"yuexuan check: {args.beats_from}: placement ambiguous: the recording fits the "
              f"ceremony from {placed.best.start_s:.3f} s or from {placed.runner_up.start_s:.3f} s "
              f"alike (it holds neither end of the 射节); {int(mask.sum())} round-3 shot"
              f"{'s' if mask.sum() != 1 else ''} not judged: give --audio-start SECONDS",
              file=sys.stderr)
    else:
        lo = found.alignment.shift_s - settings.tolerance_s
        hi = found.alignment.shift_s + found.duration_s + settings.tolerance_s
        clock = shots.time + offset
        mask, reason = rests & ((clock < lo) | (clock > hi)), tally.R_NO_AUDIO
    return tally.withhold(verdict, shots.round, shots.role, mask, reason), mask


def _write_evidence(args: argparse.Namespace, found: DrumEvidence, plan: npt.NDArray[np.float64],
                    shots: Shots, verdict: tally.Verdict, proof: ShotEvidence,
                    settings: tally.Settings) -> None:
    """``--beats-out`` and ``--plot``, each written atomically."""
    from yuexuan.check import evidence

    if args.beats_out:
        atomic.write_text(args.beats_out,
                          report.render_strokes_csv(evidence.stroke_rows(found, plan)))
    if args.plot:
        from yuexuan.check import plot

        atomic.write_text(args.plot, plot.evidence_svg(found, plan, shots, verdict, proof,
                                                       settings, title=str(args.beats_from)))

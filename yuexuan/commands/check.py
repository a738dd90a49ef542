"""``yuexuan check CUES SHOTS``: apply the 释获 rules to a log of shots and announce the result.

See docs/check.md. CUES is a cue sheet (compiled with ``compile_file``) or a saved timeline
JSON; its 射节 beats are the 建鼓 strokes a round-3 shot must meet (不鼓不释), unless
``--beats-from`` takes them from a recording.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from yuexuan import atomic
from yuexuan.check import ownjie, report, shiho
from yuexuan.check.shots import read_shots
from yuexuan.commands.common import data_source, read_timeline
from yuexuan.errors import UserError
from yuexuan.rite import variants as variants_mod
from yuexuan.timeline import chosen_cues


DEFAULT_TOLERANCE_S = shiho.Settings().tolerance_s


def add_arguments(p) -> None:
    p.add_argument("cues", metavar="CUES",
                   help="cue sheet (.toml), or a timeline saved by "
                        "'yuexuan compile --timeline' (.json)")
    p.add_argument("shots", metavar="SHOTS",
                   help="shot log: UTF-8 CSV with a header row, or JSON lines")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE_S, metavar="SECONDS",
                   help=f"round 3: a shot meets the drum within ± this of a 建鼓 stroke "
                        f"(default {DEFAULT_TOLERANCE_S}, mir_eval's beat window)")
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
    p.add_argument("--cue", default=None, metavar="ID",
                   help="the 射节 cue whose beats count (default: every cue of kind shejie)")
    p.add_argument("--strict-gong", action="store_true",
                   help="hold the 公 to the drum in round 3 too (default: the cue sheet's gong_exempt "
                        "variant, which is exempt, 「不以乐志」, unless set to strict)")
    p.add_argument("--own-jie", action="store_true",
                   help="round 3: each arrow must meet the 建鼓 stroke of its own shooting 节 (the "
                        "archer's n-th arrow, the stroke the timeline binds to him; 贾疏 "
                        "「皆四节拾将乘矢」) instead of any stroke of the 射节 (default)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write to FILE (atomically) instead of standard output")


def _finite(name: str, value: float) -> float:
    if value is None or not math.isfinite(value):
        raise UserError(f"{name} must be a finite number of seconds, not {value}")
    return float(value)


def shejie_beats(timeline, cue: str | None) -> tuple[np.ndarray, list]:
    """The planned 建鼓 strokes (timeline s, ascending) of the 射节 cue(s), and the cue ids."""
    if cue is not None:
        ids = [c.id for c in chosen_cues(timeline, [cue], key="--cue")]
    else:
        ids = [c.id for c in timeline.cues if c.kind == "shejie"]
    wanted = set(ids)
    beats = np.sort(np.array([b.time for b in timeline.beats if b.cue in wanted], dtype=float))
    return beats, ids


def run(args) -> int:
    tolerance = _finite("--tolerance", args.tolerance)
    if tolerance < 0:
        raise UserError(f"--tolerance must be ≥ 0 seconds, not {tolerance}")
    offset = _finite("--offset", args.offset)
    shots = read_shots(args.shots)          # the cheap check first
    source = data_source(args)
    timeline = read_timeline(args.cues, "check", source=source)
    plan, cue_ids = shejie_beats(timeline, args.cue)
    drum = alignment = found = None
    beats = plan
    for opt, given in (("--beats-out", args.beats_out), ("--plot", args.plot)):
        if given and not args.beats_from:
            raise UserError(f"{opt} needs --beats-from AUDIO (the strokes come from a recording)")
    if args.beats_from:
        from yuexuan.check import evidence

        start = None if args.audio_start is None else _finite("--audio-start", args.audio_start)
        found = evidence.find_strokes(args.beats_from, plan, start)
        alignment = found.alignment
        beats = alignment.live_s
        drum = {"source": str(args.beats_from), **alignment.report(), **evidence.summary(found)}
    if (shots.round == 3).any() and not len(beats):
        raise UserError("round-3 shots need 射节 beats, but the timeline has none"
                        + (f" for cue {args.cue!r}" if args.cue else " (no cue of kind shejie)"),
                        file=args.cues)
    # the cue sheet's gong_exempt variant (O20) decides unless --strict-gong overrides it
    sheet_exempt = timeline.ceremony.variants.get("gong_exempt", "郑玄") != "strict"
    # O21: the 公's 着侯, as the cue sheet's gong_outside_hu variant says (its default if unset)
    outside = variants_mod.effect(variants_mod.load(source=source), timeline.ceremony.variants,
                                  "gong_outside_hu")["counted"]
    settings = shiho.Settings(tolerance_s=tolerance, gong_exempt=sheet_exempt and not args.strict_gong,
                              gong_outside_hu=outside)
    bound = None
    if args.own_jie:
        bound = ownjie.own_strokes(timeline.beats, cue_ids, shots.round, shots.archers,
                                   shots.time + offset)
        if alignment is not None:
            bound = ownjie.live_strokes(bound, plan, alignment)
    verdict = shiho.evaluate_shots(shots, beats, offset, settings, bound)
    proof = None
    if found is not None:
        proof = evidence.shot_evidence(found, plan, shots, verdict, settings)
        drum["uncertain_rows"] = (np.flatnonzero(proof.uncertain) + 1).tolist()
        _write_evidence(args, found, plan, shots, verdict, proof, settings)
    warnings = [f"{a} looses {n} arrows in round {r}; an archer has four (乘矢)"
                for r, a, n in shiho.over_four(shots.round, shots.archers)]
    for w in warnings:
        print(f"yuexuan check: warning: {w}", file=sys.stderr)
    meta = {"cues": str(args.cues), "shots": str(args.shots), "shejie_cues": cue_ids,
            "beats": int(len(beats)), "beats_from": "recording" if drum else "timeline",
            "tolerance_s": tolerance, "offset_s": offset,
            "gong_exempt_in_round_3": settings.gong_exempt,
            "strokes": "own 节" if args.own_jie else "any",
            "gong_outside_hu_counted": settings.gong_outside_hu}
    if args.format == "json":
        text = report.render_json(shots, verdict, meta, drum, warnings, proof)
    elif args.format == "csv":
        text = report.render_csv(shots, verdict, proof)
        doubt = proof is not None and report.uncertain_line(proof, drum["confidence_threshold"])
        for line in (report.tally_lines(verdict) + ([report.drum_summary(drum)] if drum else [])
                     + ([doubt] if doubt else [])):
            print(line, file=sys.stderr)
    else:
        text = report.render_table(shots, verdict, meta, drum, warnings, proof)
    if args.output:
        atomic.write_text(args.output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def _write_evidence(args, found, plan, shots, verdict, proof, settings) -> None:
    """``--beats-out`` and ``--plot``, each written atomically."""
    from yuexuan.check import evidence

    if args.beats_out:
        atomic.write_text(args.beats_out,
                          report.render_strokes_csv(evidence.stroke_rows(found, plan)))
    if args.plot:
        from yuexuan.check import plot

        atomic.write_text(args.plot, plot.evidence_svg(found, plan, shots, verdict, proof,
                                                       settings, title=str(args.beats_from)))

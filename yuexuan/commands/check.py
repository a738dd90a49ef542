"""``yuexuan check CUES SHOTS``: apply the 释获 rules to a log of shots and announce the result.

See docs/check.md. CUES is a cue sheet (compiled with ``compile_file``) or a saved timeline
JSON; its 射节 beats are the 建鼓 strokes a round-3 shot must meet (不鼓不释), unless
``--beats-from`` takes them from a recording.
"""

from __future__ import annotations

import json
import math
import sys
import unicodedata
from pathlib import Path

import numpy as np

from yuexuan import atomic
from yuexuan.check import shiho
from yuexuan.commands.common import read_timeline
from yuexuan.errors import UserError, unknown_cue
from yuexuan.check.shots import RANKS, RESULTS, ROLES, TARGETS, Shots, read_shots

HELP = "check a log of shots against the rules of 释获 (不鼓不释 …) and announce each round"

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
                   help="take the 建鼓 strokes from a recording (WAV or FLAC) of the 射节 instead "
                        "of the timeline, and report the live drum's drift from the plan")
    p.add_argument("--audio-start", type=float, default=None, metavar="SECONDS",
                   help="with --beats-from: timeline time of the recording's first sample "
                        "(default: estimated by matching strokes to the planned beats)")
    p.add_argument("--cue", default=None, metavar="ID",
                   help="the 射节 cue whose beats count (default: every cue of kind shejie)")
    p.add_argument("--strict-gong", action="store_true",
                   help="hold the 公 to the drum in round 3 too (default: the cue sheet's gong_exempt "
                        "variant, which is exempt, 「不以乐志」, unless set to strict)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write to FILE (atomically) instead of standard output")


def _finite(name: str, value: float) -> float:
    if value is None or not math.isfinite(value):
        raise UserError(f"{name} must be a finite number of seconds, not {value}")
    return float(value)


def load_timeline(path: str):
    """The Timeline of CUES (a saved timeline JSON, or a cue sheet compiled now)."""
    return read_timeline(path, "check")


def shejie_beats(timeline, cue: str | None) -> tuple[np.ndarray, list]:
    """The planned 建鼓 strokes (timeline s, ascending) of the 射节 cue(s), and the cue ids."""
    if cue is not None:
        try:
            timeline.cue(cue)
        except KeyError:
            raise unknown_cue(cue, [c.id for c in timeline.cues], key="--cue") from None
        ids = [cue]
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
    timeline = load_timeline(args.cues)
    plan, cue_ids = shejie_beats(timeline, args.cue)
    drum = None
    beats = plan
    if args.beats_from:
        from yuexuan.check import onsets

        start = None if args.audio_start is None else _finite("--audio-start", args.audio_start)
        alignment = onsets.beats_from_recording(args.beats_from, plan, start)
        beats = alignment.live_s
        drum = {"source": str(args.beats_from), **alignment.report()}
    if (shots.round == 3).any() and not len(beats):
        raise UserError("round-3 shots need 射节 beats, but the timeline has none"
                        + (f" for cue {args.cue!r}" if args.cue else " (no cue of kind shejie)"),
                        file=args.cues)
    # the cue sheet's gong_exempt variant (O20) decides unless --strict-gong overrides it
    sheet_exempt = timeline.ceremony.variants.get("gong_exempt", "郑玄") != "strict"
    settings = shiho.Settings(tolerance_s=tolerance, gong_exempt=sheet_exempt and not args.strict_gong)
    verdict = shiho.evaluate(shots.round, shots.rank, shots.role, shots.target, shots.result,
                             shots.pair, shots.time, beats, offset, settings)
    meta = {"cues": str(args.cues), "shots": str(args.shots), "shejie_cues": cue_ids,
            "beats": int(len(beats)), "beats_from": "recording" if drum else "timeline",
            "tolerance_s": tolerance, "offset_s": offset,
            "gong_exempt_in_round_3": settings.gong_exempt}
    if args.format == "json":
        text = render_json(shots, verdict, meta, drum)
    elif args.format == "csv":
        text = render_csv(shots, verdict)
        for t in verdict.tallies:
            print(f"round {t['round']}: 右 {t['右']} 算, 左 {t['左']} 算 — {t['announcement']}",
                  file=sys.stderr)
        if drum:
            print(drum_summary(drum), file=sys.stderr)
    else:
        text = render_table(shots, verdict, meta, drum)
    if args.output:
        atomic.write_text(args.output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


# -- output -----------------------------------------------------------------------------------

FIELDS_OUT = ("time", "archer", "rank", "role", "target", "result", "pair", "round",
              "nearest_beat", "offset", "on_beat", "released", "reason")


def _csv_text(value: str) -> str:
    if "," in value or '"' in value or "\n" in value or "\r" in value:
        return '"' + value.replace('"', '""') + '"'
    return value


def _cells(shots: Shots, v: shiho.Verdict, fmt: str) -> list:
    """Every output cell as a column of strings that carry their own separators (so the rows
    are one ``"".join``): for CSV ``value,`` … ``value\n``; for JSON ``{"key":value,`` … ``}``.
    Category columns are looked up from a few tokens; numbers are formatted once each."""
    m = len(FIELDS_OUT)
    if fmt == "json":
        pre = ['{"' + FIELDS_OUT[0] + '":'] + [',"' + k + '":' for k in FIELDS_OUT[1:]]
        post = [""] * (m - 1) + ["}"]
        null, text = "null", (lambda x: json.dumps(x, ensure_ascii=False))
        true, false = "true", "false"
    else:
        pre = [""] * m
        post = [","] * (m - 1) + ["\n"]
        null, text = "", _csv_text
        true, false = "true", "false"

    def cat(k, codes, names):
        tokens = [pre[k] + text(x) + post[k] for x in names] + [pre[k] + null + post[k]]
        idx = np.where(np.asarray(codes) < 0, len(names), codes)
        return np.array(tokens, dtype=object)[idx].tolist()

    def num(k, a):
        p, q = pre[k], post[k]
        nul = p + null + q
        return [nul if x != x else f"{p}{x!r}{q}" for x in np.round(a, 6).tolist()]

    r3 = shots.round == 3
    onb = np.where(r3, v.on_beat.astype(np.int8), 2)
    columns = [
        num(0, shots.time),
        cat(1, shots.archer, shots.archer_names),
        cat(2, shots.rank, RANKS),
        cat(3, shots.role, ROLES),
        cat(4, shots.target, TARGETS),
        cat(5, shots.result, RESULTS),
        cat(6, shots.pair, shots.pair_names),
        np.array([pre[7] + str(r) + post[7] for r in range(4)], dtype=object)[shots.round].tolist(),
        num(8, v.nearest_beat),
        num(9, v.offset_s),
        np.array([pre[10] + t + post[10] for t in (false, true, null)], dtype=object)[onb].tolist(),
        np.array([pre[11] + t + post[11] for t in (false, true)],
                 dtype=object)[v.released.astype(np.int8)].tolist(),
        cat(12, v.reason, shiho.REASONS),
    ]
    return columns


def _interleave(columns: list, n: int) -> list:
    flat = [None] * (n * len(columns))
    for k, col in enumerate(columns):
        flat[k::len(columns)] = col
    return flat


def render_json(shots: Shots, v: shiho.Verdict, meta: dict, drum: dict | None) -> str:
    """{"shots": [...], "tallies": [...], "settings": {...}, "rules": {...}, "drum": {...}}."""
    n = len(shots)
    columns = _cells(shots, v, "json")
    columns[-1] = [c + ",\n" for c in columns[-1]]
    if n:
        columns[-1][-1] = columns[-1][-1][:-2] + "\n"
    tail = {"tallies": v.tallies, "settings": meta, "rules": shiho.RULES}
    if drum is not None:
        tail["drum"] = drum
    rest = json.dumps(tail, ensure_ascii=False, indent=1)
    return '{"shots":[\n' + "".join(_interleave(columns, n)) + "]," + rest[1:] + "\n"


def render_csv(shots: Shots, v: shiho.Verdict) -> str:
    """One CSV row per shot: the input fields, then nearest_beat, offset, on_beat, released,
    reason; empty cells for null."""
    return ",".join(FIELDS_OUT) + "\n" + "".join(_interleave(_cells(shots, v, "csv"), len(shots)))


def _width(s: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)


def _pad(s: str, w: int, right: bool = False) -> str:
    fill = " " * max(0, w - _width(s))
    return fill + s if right else s + fill


def drum_summary(d: dict) -> str:
    if not d.get("matched"):
        return f"drum: {d['strokes_detected']} strokes detected, none matched the plan"
    return (f"drum: {d['strokes_detected']} strokes from {d['source']}, {d['matched']} matched "
            f"({d['missed']} planned beats missed, {d['extra']} extra); recording starts at "
            f"{d['recording_starts_at_s']:.3f} s; tempo ratio {d['tempo_ratio']:.4f}; drift "
            f"first {1000 * d['drift_first_s']:+.0f} ms, last {1000 * d['drift_last_s']:+.0f} ms, "
            f"max |{1000 * d['drift_max_abs_s']:.0f}| ms")


def render_table(shots: Shots, v: shiho.Verdict, meta: dict, drum: dict | None) -> str:
    """A table for people: one line a shot, then each round's 算 and announcement."""
    head = ("row", "time s", "archer", "rank", "role", "rd", "target", "result", "beat s",
            "offset ms", "释", "reason")
    rows = []
    for i in range(len(shots)):
        t = shots.target[i]
        nb = v.nearest_beat[i]
        rows.append((str(i + 1), f"{shots.time[i]:.3f}",
                     shots.archer_names[shots.archer[i]], RANKS[shots.rank[i]],
                     ROLES[shots.role[i]], str(shots.round[i]), TARGETS[t] if t >= 0 else "—",
                     RESULTS[shots.result[i]], "" if nb != nb else f"{nb:.3f}",
                     "" if nb != nb else f"{1000 * v.offset_s[i]:+.0f}",
                     "算" if v.released[i] else "·", shiho.REASONS[v.reason[i]]))
    widths = [max([_width(h)] + [_width(r[k]) for r in rows]) for k, h in enumerate(head)]
    numeric = {0, 1, 5, 8, 9}
    out = ["  ".join(_pad(h, widths[k], k in numeric) for k, h in enumerate(head)).rstrip()]
    for r in rows:
        out.append("  ".join(_pad(c, widths[k], k in numeric) for k, c in enumerate(r)).rstrip())
    out.append("")
    out.append(f"beats: {meta['beats']} 建鼓 strokes from the {meta['beats_from']}"
               f" ({', '.join(meta['shejie_cues']) or 'no 射节 cue'}); tolerance "
               f"±{1000 * meta['tolerance_s']:.0f} ms; offset {meta['offset_s']:+g} s; 公 "
               f"{'exempt (不以乐志)' if meta['gong_exempt_in_round_3'] else 'held to the drum'}")
    if drum:
        out.append(drum_summary(drum))
    for t in v.tallies:
        out.append(f"round {t['round']}: 右 {t['右']} 算, 左 {t['左']} 算 — "
                   f"{t['announcement']}")
    if not v.tallies:
        out.append("no scored round (round 1: 获而未释获)")
    return "\n".join(out) + "\n"

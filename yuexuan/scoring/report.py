"""The check's verdicts written out: CSV (:mod:`csv`), JSON (:mod:`json`) and a table for people.

Every output has one entry per shot in input order: the input fields, then ``nearest_beat``,
``offset``, ``on_beat`` (null outside round 3), ``released`` and ``reason``; then each scored
round's 算 and announcement. With the strokes from a recording (``--beats-from``) each shot also
has ``stroke_confidence`` and ``uncertain`` (:data:`EVIDENCE_FIELDS`); ``--beats-out`` writes
the strokes themselves (:func:`render_strokes_csv`). See docs/check.md.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from yuexuan.rite.vocabulary import RESULTS, ROLES
from yuexuan.scoring import tally
from yuexuan.scoring.shots import Shots

FIELDS_OUT = ("time", "archer", "rank", "role", "target", "result", "pair", "round",
              "nearest_beat", "offset", "on_beat", "released", "reason")
EVIDENCE_FIELDS = ("stroke_confidence", "uncertain")   # with --beats-from only
STROKE_FIELDS = ("planned_s", "heard_s", "confidence")  # --beats-out
DECIMALS = 6                      # times and offsets rounded to the microsecond


class Evidence(Protocol):
    """What the verdicts show of a recording's evidence (``check``'s ``ShotEvidence``), per shot."""

    @property
    def stroke_confidence(self) -> npt.NDArray[np.floating[Any]]: ...
    @property
    def uncertain(self) -> npt.NDArray[np.bool_]: ...


def _names(codes: npt.NDArray[np.integer[Any]], names: Sequence[str]) -> list[str | None]:
    """The name of each index (None for −1)."""
    table = np.array([*names, None], dtype=object)
    return table[np.where(codes < 0, len(names), codes)].tolist()


def _seconds(a: npt.NDArray[np.float64]) -> list[float | None]:
    """Seconds rounded to :data:`DECIMALS` as floats, None for NaN."""
    return [None if x != x else x for x in (np.round(a, DECIMALS) + 0.0).tolist()]   # + 0.0: no −0.0


def fields_out(evidence: Evidence | None) -> tuple[str, ...]:
    """The output columns: :data:`FIELDS_OUT`, and :data:`EVIDENCE_FIELDS` with a recording."""
    return FIELDS_OUT + (EVIDENCE_FIELDS if evidence is not None else ())


def shot_columns(shots: Shots, v: tally.Verdict, evidence: Evidence | None = None) -> list[list[Any]]:
    """The fields of :func:`fields_out` as columns of Python values, one a shot; None is null.

    ``on_beat`` is None outside round 3 (no drum there). ``evidence`` is a
    :class:`yuexuan.check.evidence.ShotEvidence` (``--beats-from``) or None."""
    r3 = shots.round == 3
    unjudged = np.isin(v.reason, tally.NOT_JUDGED)         # released and on_beat are null
    more = [] if evidence is None else [
        [None if c != c else round(c, 3) for c in evidence.stroke_confidence.tolist()],
        evidence.uncertain.tolist()]
    return [
        _seconds(shots.time),
        shots.archers,
        _names(shots.rank, shots.rank_names),
        _names(shots.role, ROLES),
        _names(shots.target, shots.target_names),
        _names(shots.result, RESULTS),
        _names(shots.pair, shots.pair_names),
        shots.round.tolist(),
        _seconds(v.nearest_beat),
        _seconds(v.offset_s),
        np.where(r3 & ~unjudged, v.on_beat, np.array(None, dtype=object)).tolist(),
        np.where(unjudged, np.array(None, dtype=object), v.released).tolist(),
        _names(v.reason, tally.REASONS),
        *more,
    ]


def render_json(shots: Shots, v: tally.Verdict, settings: dict[str, Any], drum: dict[str, Any] | None,
                warnings: Sequence[str] = (), evidence: Evidence | None = None) -> str:
    """``{"shots": [...], "tallies": [...], "settings": {...}, "rules": {...}, "warnings": [...],
    "drum": {...}}``; ``drum`` only when the beats came from a recording."""
    records = [dict(zip(fields_out(evidence), row))
               for row in zip(*shot_columns(shots, v, evidence))]
    doc = {"shots": records, "tallies": english_tallies(v.tallies), "settings": settings,
           "rules": tally.RULES,
           "warnings": list(warnings)}
    if drum is not None:
        doc["drum"] = drum
    return json.dumps(doc, ensure_ascii=False) + "\n"


def csv_cell(value: Any) -> Any:
    """JSON's words for booleans (true, false); None is an empty cell."""
    return ("false", "true")[value] if isinstance(value, bool) else value


def render_csv(shots: Shots, v: tally.Verdict, evidence: Evidence | None = None) -> str:
    """A header row, then one row per shot (:func:`fields_out`); empty cells for null, CRLF
    line ends."""
    names = fields_out(evidence)
    columns = shot_columns(shots, v, evidence)
    for k in (names.index(n) for n in ("on_beat", "released", "uncertain") if n in names):
        columns[k] = list(map(csv_cell, columns[k]))
    buf = io.StringIO()
    # the csv module's default dialect: CRLF line ends (RFC 4180), so a name holding a CR or LF
    # is quoted (with lineterminator="\n", Python 3.11 leaves a lone CR unquoted)
    writer = csv.writer(buf)
    writer.writerow(names)
    writer.writerows(zip(*columns))
    return buf.getvalue()


def render_strokes_csv(rows: Iterable[Sequence[float | None]]) -> str:
    """``--beats-out``: a header (:data:`STROKE_FIELDS`), then one row per planned stroke and per
    extra stroke heard (:class:`yuexuan.check.evidence.StrokeRow`), in time order; an empty
    ``heard_s`` for a planned stroke not heard, an empty ``planned_s`` for an extra one."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(STROKE_FIELDS)
    writer.writerows([["" if x is None else x for x in r] for r in rows])
    return buf.getvalue()


def uncertain_line(evidence: Evidence, threshold: float) -> str | None:
    """One line naming the rows (1-based) whose verdict is uncertain, or None."""
    rows = (np.flatnonzero(evidence.uncertain) + 1).tolist()
    if not rows:
        return None
    return (f"uncertain: row{'s' if len(rows) > 1 else ''} {', '.join(map(str, rows))} rest on a "
            f"stroke below confidence {threshold:g} or on a planned stroke not heard: look again "
            f"(--beats-out, --plot)")


NUMBERS_EN = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
              "eleven", "twelve")


def _count_en(n: int, one: str, many: str) -> str:
    return f"{NUMBERS_EN[n] if n < len(NUMBERS_EN) else n} {one if n == 1 else many}"


def announcement_en(winner: str | None, chun: int, qi: int) -> str:
    """The 释获者's announcement in English: 右 = the right (the 上射's side), 左 = the left; a 纯
    is a pair of arrows (two 算), a 奇 a single one; 左右钧 a tie. (docs/glossary.md)"""
    if winner is None:
        return "a tie: left and right are even"
    side = "right" if winner == "右" else "left"
    parts = ([_count_en(chun, "pair of arrows", "pairs of arrows")] if chun else []) \
        + (["one single arrow"] if qi else [])
    return f"{side} wins by {' and '.join(parts)}"


def english_tallies(tallies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tallies with ``announcement_en`` beside each ``announcement``."""
    out = []
    for t in tallies:
        d = {}
        for k, val in t.items():
            d[k] = val
            if k == "announcement":
                d["announcement_en"] = announcement_en(t["winner"], t["chun"], t["qi"])
        out.append(d)
    return out


def tally_lines(v: tally.Verdict) -> list[str]:
    """Each scored round's 算 and announcement with its English, one line a round (and the shots
    not judged, when some were left out)."""
    return [f"round {t['round']}: 右 {t['右']} 算, 左 {t['左']} 算 — {t['announcement']} "
            f"({t['announcement_en']})"
            + (f"; {t['not_judged']} not judged" if t.get("not_judged") else "")
            for t in english_tallies(v.tallies)]


def not_judged_line(v: tally.Verdict) -> str | None:
    """One line naming the rows (1-based) left unjudged and why, or None."""
    parts = []
    for code in tally.NOT_JUDGED:
        rows = (np.flatnonzero(v.reason == code) + 1).tolist()
        if rows:
            parts.append(f"row{'s' if len(rows) > 1 else ''} {', '.join(map(str, rows))} "
                         f"({tally.REASONS[code]})")
    return f"not judged: {'; '.join(parts)}" if parts else None


def drum_summary(d: dict[str, Any]) -> str:
    """One line on the live drum (``--beats-from``): strokes, start, tempo and drift."""
    if not d.get("matched"):
        return f"drum: {d['strokes_detected']} strokes detected, none matched the plan"
    return (f"drum: {d['strokes_detected']} strokes from {d['source']}, {d['matched']} matched "
            f"({d['missed']} planned beats missed, {d['extra']} extra); recording starts at "
            f"{d['recording_starts_at_s']:.3f} s; tempo ratio {d['tempo_ratio']:.4f}; drift "
            f"first {1000 * d['drift_first_s']:+.0f} ms, last {1000 * d['drift_last_s']:+.0f} ms, "
            f"max |{1000 * d['drift_max_abs_s']:.0f}| ms")


def placement_line(d: dict[str, Any]) -> str:
    """One line on where the recording was placed (``--beats-from``): given, or the search's best
    and runner-up (docs/check.md, "How a recording is placed")."""
    p = d.get("placement")
    if p is None:
        return f"placement: given (--audio-start {d['recording_starts_at_s']:g})"
    holds = [w for w, k in (("first", "holds_shejie_start"), ("last", "holds_shejie_end")) if p[k]]
    held = (f"holds the 射节's {' and '.join(holds)} stroke{'s' if len(holds) > 1 else ''}"
            if holds else "holds neither end of the 射节")
    best = p["best"]
    if p["runner_up"] is None:
        return f"placement: from {best['start_s']:.3f} s, no other start fits; the recording {held}"
    ru = p["runner_up"]
    return (f"placement: {'AMBIGUOUS, ' if p['ambiguous'] else ''}best {best['start_s']:.3f} s "
            f"({best['score']:g}), runner-up {ru['start_s']:.3f} s ({ru['score']:g}; margin "
            f"{p['margin']:g}, {p['margin_required']:g} needed); the recording {held}")


def _evidence_cells(evidence: Evidence, i: int) -> tuple[str, str]:
    c = evidence.stroke_confidence[i]
    return ("" if c != c else f"{c:.2f}", "?" if evidence.uncertain[i] else "")


def _width(s: str) -> int:
    """Columns ``s`` takes in a terminal (wide and full-width characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)


def _pad(s: str, w: int, right: bool = False) -> str:
    fill = " " * max(0, w - _width(s))
    return fill + s if right else s + fill


def _host_clause(settings: dict[str, Any]) -> str:
    """``; 公 exempt (不以乐志)`` or ``; 主人 held to the drum``: the rite's host (none: nothing)."""
    host = settings.get("host")
    if not host:
        return ""
    return f"; {host} " + ("exempt (不以乐志)" if settings["gong_exempt_in_round_3"] else "held to the drum")


def render_table(shots: Shots, v: tally.Verdict, settings: dict[str, Any], drum: dict[str, Any] | None,
                 warnings: Sequence[str] = (), evidence: Evidence | None = None) -> str:
    """A table for people: one line a shot, then the settings and each round's 算 and
    announcement. With ``evidence``, two more columns: the stroke's confidence and ``?`` for an
    uncertain verdict."""
    head = ("row", "time s", "archer", "rank", "role", "rd", "target", "result", "beat s",
            "offset ms", "释", "reason") + (("conf", "?") if evidence is not None else ())
    rows = []
    for i in range(len(shots)):
        t = shots.target[i]
        nb = v.nearest_beat[i]
        rows.append((str(i + 1), f"{shots.time[i]:.3f}",
                     shots.archers[i], shots.rank_names[shots.rank[i]],
                     ROLES[shots.role[i]], str(shots.round[i]), shots.target_names[t] if t >= 0 else "—",
                     RESULTS[shots.result[i]], "" if nb != nb else f"{nb:.3f}",
                     "" if nb != nb else f"{1000 * v.offset_s[i]:+.0f}",
                     "算" if v.released[i] else ("" if v.reason[i] in tally.NOT_JUDGED else "·"),
                     tally.REASONS[v.reason[i]])
                    + (() if evidence is None else _evidence_cells(evidence, i)))
    widths = [max([_width(h)] + [_width(r[k]) for r in rows]) for k, h in enumerate(head)]
    numeric = {0, 1, 5, 8, 9, 12}
    out = ["  ".join(_pad(h, widths[k], k in numeric) for k, h in enumerate(head)).rstrip()]
    for r in rows:
        out.append("  ".join(_pad(c, widths[k], k in numeric) for k, c in enumerate(r)).rstrip())
    out.append("")
    out.append(f"beats: {settings['beats']} 建鼓 strokes from the {settings['beats_from']}"
               f" ({', '.join(settings['shejie_cues']) or 'no 射节 cue'}); tolerance "
               f"±{1000 * settings['tolerance_s']:.0f} ms; offset {settings['offset_s']:+g} s"
               + _host_clause(settings)
               + ("; each arrow on its own 节's stroke (--own-jie)" if settings.get("strokes") == "own 节"
                  else ""))
    if drum:
        out.append(drum_summary(drum))
        out.append(placement_line(drum))
    if evidence is not None and drum and (line := uncertain_line(evidence, drum["confidence_threshold"])):
        out.append(line)
    if (line := not_judged_line(v)) is not None:
        out.append(line)
    out.extend(f"warning: {w}" for w in warnings)
    out.extend(tally_lines(v))
    if not v.tallies:
        out.append("no scored round (round 1: 获而未释获)")
    return "\n".join(out) + "\n"

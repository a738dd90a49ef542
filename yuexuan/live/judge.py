"""The live judge: shots judged one at a time as they arrive, exactly as ``check`` judges the log.

:class:`Judge` holds the shots so far as a shot log's rows, each validated and coded by the
reader's own code as it arrives (:class:`yuexuan.scoring.growing_log.ShotColumns`), and at each shot
judges them all again with :func:`yuexuan.scoring.tally.evaluate` under the
:class:`yuexuan.scoring.rules.Rules` that ``check`` builds from the same options. So the verdict of
shot *n* is, by construction, the verdict ``check`` gives row *n* of the log of shots 1..n (a later
shot may change an earlier verdict — a partner's rank, an arrow's number under ``--own-jie`` — and
is then reported as revised). Judging all again is whole-array numpy, O(n) a shot:
bench/bench_live_judge.py measures it over hundreds of shots.

An arrow is reported in two moments (docs/play.md): :meth:`Judge.loose` when it leaves the
string, :meth:`Judge.shot` when it has landed. The judged time of a shot is the time of its
archer's pending loose, else the shot's own time. An archer has one pending loose at most: a newer
one replaces it (counted: a stray or repeated loose must not shift his later shots). A loose is
refused when it lies outside the show (``span_s``: a loose at 1e9 s), further ahead of the
show's clock than the tolerance, or older than :data:`LOOSE_MAX_AGE_S`; a pending loose that old
when the shot comes is dropped, and the shot is judged at its own time (counted, warned).
Times are timeline seconds, rounded to the microsecond as the log writes them, so the log read
back gives the same times and verdicts.

A round ends when every archer of its roster has loosed his four arrows (乘矢,
「拾发以将乘矢」); the roster of a round is the archers the timeline binds to its strokes
(round 3, the 射节) unless one is given. :attr:`JudgedShot.round_end` then carries the
释获者's announcement (「右贤于左…」), once. An archer found in no roster is refused (a scorer's
typo must not become a shot); ``known_only=False`` accepts any name, as ``check`` does.

No I/O and no clock here: the caller gives every time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from yuexuan.errors import UserError
from yuexuan.rite.vocabulary import MISSES, RESULTS, ZHENG_CALLS
from yuexuan.scoring import report, tally
from yuexuan.scoring.growing_log import ShotColumns, changed, row_at
from yuexuan.scoring.logread import FIELDS
from yuexuan.scoring.rules import Rules
from yuexuan.timeline import Timeline

DECIMALS = report.DECIMALS         # judged times rounded as the log writes them (microseconds)
LOOSE_MAX_AGE_S = 6.0   # a loose older than this (at its arrival, or when the shot comes) is
# refused: an arrow flies ≤ 2.1 s (the 大侯's 125 m at 60 m/s) and is reported within ~3 s; the
# same archer's next arrow comes 4 s after his last (射节: 4 节 a pair's turn), so a loose this old
# is a stray or a lost arrow's, and no shot to come is his


class RosterEntry(NamedTuple):
    """What the timeline says of an archer: his rank, role and pair (None where not said)."""

    rank: str | None
    role: str | None
    pair: str | None


class ShotError(NamedTuple):
    """A shot or loose refused: one line for the operator (``column``: the field at fault)."""

    message: str
    column: str | None = None


class Replaced(NamedTuple):
    """A loose accepted in place of the archer's pending one (at ``time_s``, timeline s)."""

    time_s: float


class RoundEnd(NamedTuple):
    """A round whose roster has loosed every arrow: the 释获者's 算 and announcement."""

    round: int
    right: int                 # 右: 算 of the 上射
    left: int                  # 左: 算 of the 下射
    announcement: str          # 右贤于左一奇 | 左贤于右一纯 | 左右钧 …


@dataclass(frozen=True)
class JudgedShot:
    """One shot judged: ``row`` is its line of the log, in ``check --format csv`` columns."""

    number: int                # 1-based row of the log (shot number)
    row: dict[str, Any]        # report.FIELDS_OUT → value (None = empty, bools, floats, str, int)
    released: bool
    reason: str                # a tally.REASONS entry
    huo: bool                  # the 获者 calls 获 (tally.huo_called: the arrow hit a 侯 it may)
    zheng: str | None          # the 大射正's call (留 | 扬 | 方) after a 公's miss, else None
    loose_s: float | None      # the pending loose's time taken as the shot's time, else None
    tallies: list[dict[str, Any]]  # tally.tallies of every shot so far (rounds 2, 3)
    # earlier shots whose verdict this one changed: (number, row)
    revised: tuple[tuple[int, dict[str, Any]], ...] = ()
    round_end: RoundEnd | None = None
    warnings: tuple[str, ...] = ()  # e.g. a fifth arrow (乘矢), a stale loose dropped


def round_rosters(timeline: Timeline,
                  cue_ids: Iterable[str] | None = None) -> dict[int, dict[str, RosterEntry]]:
    """Round → {archer: :class:`RosterEntry`} for the shooting 节 the timeline binds to archers
    (the 射节 cues, round 3; only ``cue_ids`` when given)."""
    wanted = None if cue_ids is None else set(cue_ids)
    kinds = {c.id: c.kind for c in timeline.cues}
    rosters: dict[int, dict[str, RosterEntry]] = {}
    for b in timeline.beats:
        if not b.shoot or b.archer is None or (wanted is not None and b.cue not in wanted):
            continue
        if kinds.get(b.cue) != "shejie":
            continue
        rosters.setdefault(3, {}).setdefault(b.archer, RosterEntry(b.rank, b.role, b.pair))
    return rosters


def _text(value: object) -> str:
    """A field as the text a CSV cell holds (None → empty)."""
    return "" if value is None else str(value)


class Judge:
    """Shots judged incrementally by ``check``'s rules (see the module's docstring)."""

    def __init__(self, rules: Rules, rosters: dict[int, dict[str, RosterEntry]] | None = None,
                 known_only: bool = True, span_s: tuple[float, float] | None = None) -> None:
        """``rosters``: round → {archer: RosterEntry} (:func:`round_rosters`; None = no roster,
        no round end). ``known_only``: refuse an archer found in no roster (when there is one).
        ``span_s``: the show's first and last timeline seconds (a loose outside is refused)."""
        self.rules = rules
        self.span_s = span_s
        self.looses_replaced = 0        # pending looses replaced by a newer one
        self.looses_refused = 0         # looses refused (too old, too far ahead, outside)
        self.looses_expired = 0         # pending looses too old when the shot came
        self.rosters = rosters or {}
        self.known = {a for r in self.rosters.values() for a in r}
        self.known_only = known_only and bool(self.known)
        self._log = ShotColumns(rules.ranks, rules.hou)
        self._pending: dict[str, float] = {}         # archer → his pending loose (timeline s)
        self._rows: list[dict[str, Any]] = []         # the latest verdict row of every shot
        self._arrows: dict[tuple[int, str], int] = {}         # (round, archer) → shots so far
        self._ended: set[int] = set()         # rounds announced
        self.verdict: tally.Verdict | None = None

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every shot's row so far (``check --format csv`` columns), latest verdicts."""
        return list(self._rows)

    def _unknown(self, archer: str) -> ShotError | None:
        if self.known_only and archer not in self.known:
            return ShotError(f"unknown archer {archer!r}; the roster has "
                             f"{', '.join(sorted(self.known))}", "archer")
        return None

    def pending(self, archer: str) -> tuple[float, ...]:
        """The loose time (timeline s) of ``archer`` not yet matched to a shot: () or one."""
        t = self._pending.get(archer)
        return () if t is None else (t,)

    def loose(self, archer: str, time_s: float,
              now_s: float | None = None) -> ShotError | Replaced | None:
        """An arrow of ``archer`` left the string at ``time_s`` (timeline s), reported when the
        show's clock stood at ``now_s`` (None: not known, not checked). A refusal is a
        ShotError; a pending loose replaced is said by :class:`Replaced`."""
        archer = archer.strip()
        if not archer:
            return ShotError("archer is empty", "archer")
        if not np.isfinite(time_s):
            return ShotError(f"time {time_s!r} is not a finite number of seconds", "time")
        bad = self._unknown(archer) or self._out_of_time(time_s, now_s)
        if bad:
            return bad
        old = self._pending.get(archer)
        self._pending[archer] = round(float(time_s), DECIMALS)
        if old is None:
            return None
        self.looses_replaced += 1
        return Replaced(old)

    def _out_of_time(self, time_s: float, now_s: float | None) -> ShotError | None:
        """Why a loose at ``time_s`` reported at ``now_s`` is refused, or None (counted)."""
        why = None
        lo, hi = self.span_s if self.span_s is not None else (-np.inf, np.inf)
        if not lo <= time_s <= hi:
            why = f"time {time_s:.3f} s is outside the show ({lo:.3f}–{hi:.3f} s)"
        elif now_s is not None and time_s > now_s + self.rules.settings.tolerance_s:
            why = (f"time {time_s:.3f} s is {time_s - now_s:.3f} s ahead of the show's clock "
                   f"(more than the tolerance, {self.rules.settings.tolerance_s} s)")
        elif now_s is not None and time_s < now_s - LOOSE_MAX_AGE_S:
            why = (f"time {time_s:.3f} s is {now_s - time_s:.1f} s old (more than "
                   f"{LOOSE_MAX_AGE_S:g} s)")
        if why is None:
            return None
        self.looses_refused += 1
        return ShotError(why, "time")

    def shot(self, fields: dict[str, Any], arrival_s: float) -> JudgedShot | ShotError:
        """Judge a landed arrow. ``fields``: archer, rank, role, target, result (strings, the
        shot-log vocabularies), optionally pair (string) and round (int or string); other keys are
        ignored. ``arrival_s``: the message's arrival, timeline s. Nothing is kept on an error."""
        archer = _text(fields.get("archer")).strip()
        bad = self._unknown(archer) if archer else None
        if bad:
            return bad
        loose_s = self._pending.get(archer)
        stale = None
        if loose_s is not None and arrival_s - loose_s > LOOSE_MAX_AGE_S:
            stale = (f"{archer}'s loose at {loose_s:.3f} s is {arrival_s - loose_s:.1f} s older "
                     f"than the shot (more than {LOOSE_MAX_AGE_S:g} s): dropped, the shot "
                     "judged at its arrival")
            loose_s = None
        time_s = loose_s if loose_s is not None else round(float(arrival_s), DECIMALS)
        row = {name: _text(fields.get(name)) for name in FIELDS}
        row["time"] = repr(float(time_s))
        try:
            self._log.append(row)
        except UserError as exc:
            return ShotError(exc.message.removeprefix("row 1: "), exc.key)
        if stale is not None:
            self.looses_expired += 1
        self._pending.pop(archer, None)
        key = (self._log.shots_round(-1), archer)
        self._arrows[key] = self._arrows.get(key, 0) + 1
        j = self._judge_all(len(self._rows), loose_s)
        return j if stale is None else replace(j, warnings=(*j.warnings, stale))

    def undo(self, j: JudgedShot) -> None:
        """Take back ``j``, the latest shot judged (its row could not be logged): every row and
        count as before it, its loose pending again, its round not ended."""
        assert j.number == len(self._rows), "only the latest shot can be taken back"
        round_ = self._log.shots_round(-1)
        archer = self._log.text[-1]["archer"].strip()
        self._log.pop()
        self._rows.pop()
        self._arrows[(round_, archer)] -= 1
        if j.loose_s is not None:
            self._pending.setdefault(archer, j.loose_s)
        if j.round_end is not None:
            self._ended.discard(j.round_end.round)
        if not self._rows:
            self.verdict = None
            return
        shots = self._log.shots()
        bound = self.rules.bound_strokes(shots.round, shots.archers, shots.time)
        self.verdict = tally.evaluate_shots(shots, self.rules.plan_s, 0.0, self.rules.settings,
                                            bound)
        self._rows = [row_at(shots, self.verdict, k) for k in range(len(self._rows))]

    def correct(self, archer: str, arrow: int, result: str,
                target: str | None = None) -> JudgedShot | ShotError:
        """A scorer's correction (``/yuexuan/correct``): ``archer``'s ``arrow``-th shot (1-based,
        in time order) of the latest round he shot in now has ``result`` — on ``target`` when
        given, on the 侯 it had otherwise, on none for a miss. Every shot is judged again; the
        JudgedShot is the corrected one's (``revised``: the others it changed; no round end).
        The caller rewrites the log (:meth:`yuexuan.scoring.logwrite.ShotLogWriter.rewrite`)."""
        archer = archer.strip()
        text = self._log.text
        mine = [i for i, r in enumerate(text) if r["archer"].strip() == archer]
        if not mine:
            return ShotError(f"no shot of {archer!r} to correct", "archer")
        latest = self._log.shots_round(mine[-1])
        in_round = sorted((i for i in mine if self._log.shots_round(i) == latest),
                          key=lambda i: float(text[i]["time"]))
        if not 1 <= arrow <= len(in_round):
            return ShotError(f"{archer} has {len(in_round)} shot(s) in round {latest}, not an "
                             f"arrow {arrow}", "arrow")
        i = in_round[arrow - 1]
        row = dict(text[i], result=result.strip())
        if row["result"] in MISSES:
            row["target"] = ""
        elif target is not None:
            row["target"] = target.strip()
        try:
            self._log.replace(i, row)
        except UserError as exc:
            return ShotError(exc.message.removeprefix("row 1: "), exc.key)
        return self._judge_all(i, None, added=False)

    def _judge_all(self, index: int, loose_s: float | None, added: bool = True) -> JudgedShot:
        """Judge every shot again; the JudgedShot of shot ``index`` (0-based)."""
        shots = self._log.shots()
        bound = self.rules.bound_strokes(shots.round, shots.archers, shots.time)
        verdict = tally.evaluate_shots(shots, self.rules.plan_s, 0.0, self.rules.settings, bound)
        moved = [int(k) for k in changed(self.verdict, verdict) if k != index]
        self.verdict = verdict
        if added:
            self._rows.append({})               # its row, set just below
        for k in [*moved, index]:
            self._rows[k] = row_at(shots, verdict, k)
        revised = tuple((k + 1, self._rows[k]) for k in moved)
        host, result = shots.rank[index] == self.rules.settings.host, RESULTS[shots.result[index]]
        # the 获者 calls by the whole log (a partner's rank decides the 侯), as compile --shots does
        huo = bool(tally.huo_called(shots.rank, shots.target, shots.result, shots.pair,
                                    self.rules.settings)[index])
        round_ = int(shots.round[index])
        arrows = self._arrows.get((round_, shots.archers[index]), 0)
        warnings = ((f"{shots.archers[index]} looses {arrows} arrows in round {round_}; an "
                     "archer has four (乘矢)",) if added and arrows > tally.MAX_ARROWS else ())
        return JudgedShot(index + 1, self._rows[index], bool(verdict.released[index]),
                          tally.REASONS[verdict.reason[index]], huo,
                          result if host and result in ZHENG_CALLS else None,
                          loose_s, verdict.tallies, revised,
                          self._round_end(verdict, round_) if added else None, warnings)

    def _round_end(self, verdict: tally.Verdict, round_: int) -> RoundEnd | None:
        """The round's announcement, once, when every archer of its roster has four arrows."""
        roster = self.rosters.get(round_)
        if not roster or round_ in self._ended:
            return None
        if any(self._arrows.get((round_, a), 0) < tally.MAX_ARROWS for a in roster):
            return None
        self._ended.add(round_)
        count = next((t for t in verdict.tallies if t["round"] == round_), None)
        if count is None:             # round 1: 获而未释获, nothing to announce but that
            return RoundEnd(round_, 0, 0, "获而未释获")
        return RoundEnd(round_, count["右"], count["左"], count["announcement"])

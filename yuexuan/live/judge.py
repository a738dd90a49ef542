"""The live judge: shots judged one at a time as they arrive, exactly as ``check`` judges the log.

:class:`Judge` holds the shots so far as a shot log's rows, each validated and coded by the
reader's own code as it arrives (:class:`yuexuan.scoring.rowbyrow.ShotColumns`), and at each shot
judges them all again with :func:`yuexuan.scoring.shiho.evaluate` under the
:class:`yuexuan.scoring.rules.Rules` that ``check`` builds from the same options. So the verdict of
shot *n* is, by construction, the verdict ``check`` gives row *n* of the log of shots 1..n (a later
shot may change an earlier verdict — a partner's rank, an arrow's number under ``--own-jie`` — and
is then reported as revised). Judging all again is whole-array numpy, O(n) a shot:
bench/bench_live_judge.py measures it over hundreds of shots.

An arrow is reported in two moments (docs/play.md): :meth:`Judge.loose` when it leaves the
string, :meth:`Judge.shot` when it has landed. The judged time of a shot is the time of its
archer's oldest pending loose (looses wait in order, one per arrow), else the shot's own time.
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

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from yuexuan.errors import UserError
from yuexuan.rite.vocabulary import ARCHER_RANKS, MISS_RESULTS, RESULTS, ZHENG_CALLS
from yuexuan.scoring import report, shiho
from yuexuan.scoring.logread import FIELDS
from yuexuan.scoring.rowbyrow import ShotColumns, changed, row_at
from yuexuan.scoring.rules import Rules
from yuexuan.timeline import Timeline

DECIMALS = report.DECIMALS         # judged times rounded as the log writes them (microseconds)


class RosterEntry(NamedTuple):
    """What the timeline says of an archer: his rank, role and pair (None where not said)."""

    rank: str | None
    role: str | None
    pair: str | None


class ShotError(NamedTuple):
    """A shot or loose refused: one line for the operator (``column``: the field at fault)."""

    message: str
    column: str | None = None


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
    reason: str                # a shiho.REASONS entry
    huo: bool                  # the 获者 calls 获 (shiho.huo_called: the arrow hit a 侯 it may)
    zheng: str | None          # the 大射正's call (留 | 扬 | 方) after a 公's miss, else None
    loose_s: float | None      # the pending loose's time taken as the shot's time, else None
    tallies: list[dict[str, Any]]  # shiho.tallies of every shot so far (rounds 2, 3)
    # earlier shots whose verdict this one changed: (number, row)
    revised: tuple[tuple[int, dict[str, Any]], ...] = ()
    round_end: RoundEnd | None = None
    warnings: tuple[str, ...] = ()  # e.g. a fifth arrow (乘矢)


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
                 known_only: bool = True) -> None:
        """``rosters``: round → {archer: RosterEntry} (:func:`round_rosters`; None = no roster,
        no round end). ``known_only``: refuse an archer found in no roster (when there is one)."""
        self.rules = rules
        self.rosters = rosters or {}
        self.known = {a for r in self.rosters.values() for a in r}
        self.known_only = known_only and bool(self.known)
        self._log = ShotColumns()
        self._pending: dict[str, deque[float]] = {}         # archer → deque of loose times (timeline s)
        self._rows: list[dict[str, Any]] = []         # the latest verdict row of every shot
        self._arrows: dict[tuple[int, str], int] = {}         # (round, archer) → shots so far
        self._ended: set[int] = set()         # rounds announced
        self.verdict: shiho.Verdict | None = None

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
        """The loose times (timeline s) of ``archer`` not yet matched to a shot, oldest first."""
        return tuple(self._pending.get(archer, ()))

    def loose(self, archer: str, time_s: float) -> ShotError | None:
        """An arrow of ``archer`` left the string at ``time_s`` (timeline s)."""
        archer = archer.strip()
        if not archer:
            return ShotError("archer is empty", "archer")
        if not np.isfinite(time_s):
            return ShotError(f"time {time_s!r} is not a finite number of seconds", "time")
        bad = self._unknown(archer)
        if bad:
            return bad
        self._pending.setdefault(archer, deque()).append(round(float(time_s), DECIMALS))
        return None

    def shot(self, fields: dict[str, Any], arrival_s: float) -> JudgedShot | ShotError:
        """Judge a landed arrow. ``fields``: archer, rank, role, target, result (strings, the
        shot-log vocabularies), optionally pair (string) and round (int or string); other keys are
        ignored. ``arrival_s``: the message's arrival, timeline s. Nothing is kept on an error."""
        archer = _text(fields.get("archer")).strip()
        bad = self._unknown(archer) if archer else None
        if bad:
            return bad
        queue = self._pending.get(archer)
        loose_s = queue[0] if queue else None
        time_s = loose_s if loose_s is not None else round(float(arrival_s), DECIMALS)
        row = {name: _text(fields.get(name)) for name in FIELDS}
        row["time"] = repr(float(time_s))
        try:
            self._log.append(row)
        except UserError as exc:
            return ShotError(exc.message.removeprefix("row 1: "), exc.key)
        if queue:
            queue.popleft()
        key = (self._log.shots_round(-1), archer)
        self._arrows[key] = self._arrows.get(key, 0) + 1
        return self._judge_all(len(self._rows), loose_s)

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
        if row["result"] in MISS_RESULTS:
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
        verdict = shiho.evaluate_shots(shots, self.rules.plan_s, 0.0, self.rules.settings, bound)
        moved = [int(k) for k in changed(self.verdict, verdict) if k != index]
        self.verdict = verdict
        if added:
            self._rows.append({})               # its row, set just below
        for k in [*moved, index]:
            self._rows[k] = row_at(shots, verdict, k)
        revised = tuple((k + 1, self._rows[k]) for k in moved)
        rank, result = ARCHER_RANKS[shots.rank[index]], RESULTS[shots.result[index]]
        # the 获者 calls by the whole log (a partner's rank decides the 侯), as compile --shots does
        huo = bool(shiho.huo_called(shots.rank, shots.target, shots.result, shots.pair,
                                    self.rules.settings)[index])
        round_ = int(shots.round[index])
        arrows = self._arrows.get((round_, shots.archers[index]), 0)
        warnings = ((f"{shots.archers[index]} looses {arrows} arrows in round {round_}; an "
                     "archer has four (乘矢)",) if added and arrows > shiho.MAX_ARROWS else ())
        return JudgedShot(index + 1, self._rows[index], bool(verdict.released[index]),
                          shiho.REASONS[verdict.reason[index]], huo,
                          result if rank == "公" and result in ZHENG_CALLS else None,
                          loose_s, verdict.tallies, revised,
                          self._round_end(verdict, round_) if added else None, warnings)

    def _round_end(self, verdict: shiho.Verdict, round_: int) -> RoundEnd | None:
        """The round's announcement, once, when every archer of its roster has four arrows."""
        roster = self.rosters.get(round_)
        if not roster or round_ in self._ended:
            return None
        if any(self._arrows.get((round_, a), 0) < shiho.MAX_ARROWS for a in roster):
            return None
        self._ended.add(round_)
        tally = next((t for t in verdict.tallies if t["round"] == round_), None)
        if tally is None:             # round 1: 获而未释获, nothing to announce but that
            return RoundEnd(round_, 0, 0, "获而未释获")
        return RoundEnd(round_, tally["右"], tally["左"], tally["announcement"])

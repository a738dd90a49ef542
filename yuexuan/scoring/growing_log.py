"""A shot log that grows one row at a time, kept coded for :func:`yuexuan.scoring.tally.evaluate`.

Each row is validated alone by :func:`yuexuan.scoring.shots.shots_from_columns` (the reader's own
checks and vocabularies) and coded in the rite's order (:func:`~yuexuan.scoring.shots.for_rite`:
the timeline's ranks and 侯), and its codes appended, so a live judge does not validate and code the
whole log again at every shot; :meth:`ShotColumns.shots` gives the same
:class:`~yuexuan.scoring.shots.Shots` (codes, archers, pairs) ``check`` makes from the log file.
Pairs are numbered by first appearance, as the reader numbers them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.scoring import report, tally
from yuexuan.scoring.logread import FIELDS, Columns
from yuexuan.scoring.shots import Shots, for_rite, shots_from_columns

LIVE_PATH = "live"                 # the "file" named in a live shot's error
CODED = ("time", "rank", "role", "target", "result", "round")


class ShotColumns:
    """The rows so far as text (shot-log fields) and as codes."""

    def __init__(self, ranks: tuple[str, ...], hou: tuple[str, ...]) -> None:
        """``ranks`` and ``hou``: the rite's (the timeline's ``rite``), the order of the codes."""
        self.ranks, self.hou = ranks, hou
        self.text: list[dict[str, str]] = []                       # each row: {field: text}
        self._codes: dict[str, list[Any]] = {name: [] for name in CODED}
        self._archers: list[str] = []
        self._pairs: list[int] = []                     # index into _pair_names, −1 for none
        self._pair_names: list[str] = []
        self._pair_index: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.text)

    def check(self, row: dict[str, str]) -> Shots:
        """``row`` ({field: text}) validated alone, as a one-row Shots; a mistake raises
        :class:`~yuexuan.errors.UserError` naming its column."""
        return for_rite(shots_from_columns(Columns(LIVE_PATH, {k: [row[k]] for k in FIELDS},
                                                   np.array([1], dtype=np.int64))), self.ranks, self.hou)

    def _pair_code(self, one: Shots) -> int:
        if one.pair[0] < 0:
            return -1
        name = one.pair_names[0]
        if name not in self._pair_index:
            self._pair_index[name] = len(self._pair_names)
            self._pair_names.append(name)
        return self._pair_index[name]

    def append(self, row: dict[str, str]) -> None:
        """Add a row ({field: text}); raises :class:`UserError` (nothing kept) when invalid."""
        one = self.check(row)
        self.text.append(dict(row))
        for name in CODED:
            self._codes[name].append(getattr(one, name)[0])
        self._archers.append(one.archers[0])
        self._pairs.append(self._pair_code(one))

    def pop(self) -> None:
        """Take back the last row (one that could not be logged)."""
        self.text.pop()
        for name in CODED:
            self._codes[name].pop()
        self._archers.pop()
        self._pairs.pop()             # a pair name it brought stays known: harmless

    def replace(self, i: int, row: dict[str, str]) -> None:
        """Row ``i`` becomes ``row`` (same archer, pair and time: a corrected result/target)."""
        one = self.check(row)
        self.text[i] = dict(row)
        for name in CODED:
            self._codes[name][i] = getattr(one, name)[0]

    def shots_round(self, i: int) -> int:
        """Row ``i``'s round (1–3; an empty round is 3)."""
        return int(self._codes["round"][i])

    def shots(self) -> Shots:
        """Every row as the reader's :class:`Shots`."""
        n = len(self.text)
        c = self._codes
        return Shots(LIVE_PATH, np.array(c["time"], dtype=np.float64), list(self._archers),
                     np.array(c["rank"], dtype=np.int8), np.array(c["role"], dtype=np.int8),
                     np.array(c["target"], dtype=np.int8), np.array(c["result"], dtype=np.int8),
                     np.array(self._pairs, dtype=np.int32), list(self._pair_names),
                     np.array(c["round"], dtype=np.int8), np.arange(1, n + 1, dtype=np.int64),
                     rank_names=self.ranks, target_names=self.hou)


def row_at(shots: Shots, verdict: tally.Verdict, i: int) -> dict[str, Any]:
    """Row ``i`` as ``check --format csv`` gives it (report.shot_columns on that row alone)."""
    k = slice(i, i + 1)
    one = Shots(shots.path, shots.time[k], shots.archers[k], shots.rank[k], shots.role[k],
                shots.target[k], shots.result[k], shots.pair[k], shots.pair_names,
                shots.round[k], shots.lines[k], rank_names=shots.rank_names, target_names=shots.target_names)
    v = tally.Verdict(verdict.clock_s[k], verdict.nearest_beat[k], verdict.offset_s[k],
                      verdict.on_beat[k], verdict.released[k], verdict.reason[k], [])
    return {name: column[0] for name, column in zip(report.fields_out(None),
                                                     report.shot_columns(one, v))}


def changed(old: tally.Verdict | None, new: tally.Verdict) -> npt.NDArray[np.intp]:
    """Indices (of the rows ``old`` had) whose verdict differs in ``new`` (NaN equals NaN)."""
    if old is None:
        return np.zeros(0, dtype=np.intp)
    n = len(old.released)
    same = np.ones(n, dtype=bool)
    for a, b in ((old.nearest_beat, new.nearest_beat[:n]), (old.offset_s, new.offset_s[:n])):
        same &= (a == b) | (np.isnan(a) & np.isnan(b))
    for x, y in ((old.on_beat, new.on_beat[:n]), (old.released, new.released[:n]),
                 (old.reason, new.reason[:n])):
        same &= x == y
    return np.flatnonzero(~same)


__all__ = ["ShotColumns", "row_at", "changed", "LIVE_PATH"]

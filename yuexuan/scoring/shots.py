"""Validating a shot log into numpy arrays, one entry per arrow.

A shot log has one row per arrow: ``time`` (seconds), ``archer``, ``rank`` (公 | 宾 | 卿 | 大夫 | 士),
``role`` (上射 | 下射), ``target`` (the 侯 hit: 大侯 | 参 | 干; empty for a miss), ``result``
(贯 | 离维纲 | 扬触 | 梱复 | 着侯, or a miss: 不中 | 留 | 扬 | 方) and optionally ``pair`` and
``round`` (1 | 2 | 3; default 3). docs/check.md gives the meaning of each value.
:mod:`yuexuan.scoring.logread` reads the file (csv or json); this module checks every field and
turns the columns into index arrays. Every mistake is a :class:`~yuexuan.errors.UserError`
naming the file, the line, the row and the column.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from yuexuan.errors import UserError
from yuexuan.rite.vocabulary import ARCHER_RANKS, MISS_RESULTS, RESULTS, ROLES, TARGETS
from yuexuan.scoring.logread import FIELDS, OPTIONAL, REQUIRED, Columns, field_error, read_columns

#: the arrays of a shot log and its verdicts: times (s), vocabulary codes (int8 or int16 indices into
#: the tuples of yuexuan.rite.vocabulary, or into pair_names; -1 for none), yes/no per shot
Seconds = npt.NDArray[np.float64]
Codes = npt.NDArray[np.integer[Any]]
Mask = npt.NDArray[np.bool_]

MISS = RESULTS.index("不中")
MISS_CODES = tuple(RESULTS.index(r) for r in MISS_RESULTS)

__all__ = ["Shots", "read_shots", "shots_from_columns", "MISS", "MISS_CODES", "is_miss", "FIELDS",
           "REQUIRED", "OPTIONAL"]


@dataclass(frozen=True)
class Shots:
    """A validated shot log, one entry per input row, in input order.

    Category columns hold indices into the tuples of :mod:`yuexuan.rite.vocabulary`:
    ``ARCHER_RANKS``, ``ROLES``, ``TARGETS`` (−1 = no target, a miss) and ``RESULTS``; ``pair``
    indexes ``pair_names`` (in order of first appearance; −1 = none given). ``archers`` holds each
    row's name (no rule groups by it).
    ``lines`` gives each row's 1-based line in the file.
    """

    path: str
    time: npt.NDArray[np.float64]          # float64, seconds, as read (before any clock offset)
    archers: list[str]        # str, the archer's name (blanks trimmed)
    rank: npt.NDArray[np.int8]          # int8 index into ARCHER_RANKS
    role: npt.NDArray[np.int8]          # int8 index into ROLES
    target: npt.NDArray[np.int8]        # int8 index into TARGETS, -1 for none
    result: npt.NDArray[np.int8]        # int8 index into RESULTS
    pair: npt.NDArray[np.int32]          # int32 index into pair_names, -1 for none
    pair_names: list[str]
    round: npt.NDArray[np.int8]         # int8, 1..3
    lines: npt.NDArray[np.int64]         # int64, 1-based line of each row
    warnings: tuple[str, ...] = ()      # from reading the file (a last line cut short, left out)

    def __len__(self) -> int:
        return len(self.time)


def is_miss(result: Codes) -> Mask:
    """Whether each result code is a miss (不中, 留, 扬, 方): no 侯 touched."""
    return np.isin(result, MISS_CODES)


def _vocab(names: Iterable[str], extra: dict[str, int] | None = None) -> dict[str, int]:
    v = {n: k for k, n in enumerate(names)}
    v.update(extra or {})
    return v


_RANK_V = _vocab(ARCHER_RANKS)
_ROLE_V = _vocab(ROLES)
_TARGET_V = _vocab(TARGETS, {"": -1})
_RESULT_V = _vocab(RESULTS)
_ROUND_V = {"1": 1, "2": 2, "3": 3, "": 3}
UNKNOWN = -2                                      # a code outside every vocabulary


def _stripped(values: list[str]) -> list[str]:
    return list(map(str.strip, values))


def _codes(values: list[str], vocab: dict[str, int]) -> npt.NDArray[np.int16]:
    """int16 code of each value in ``vocab`` (blanks around it ignored), :data:`UNKNOWN` where
    it has none."""
    codes = np.fromiter(map(vocab.get, values, itertools.repeat(UNKNOWN)), dtype=np.int16,
                        count=len(values))
    for i in np.flatnonzero(codes == UNKNOWN):       # with blanks around (rare), or wrong
        codes[i] = vocab.get(values[i].strip(), UNKNOWN)
    return codes


def _groups(values: list[str]) -> tuple[npt.NDArray[np.int32], list[str]]:
    """Equal names grouped: (int32 index per row into the names, the names in order of first
    appearance); an empty value is −1."""
    first_seen = dict.fromkeys([""])
    first_seen.update(dict.fromkeys(values))
    index = {name: k - 1 for k, name in enumerate(first_seen)}      # "" → −1
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values))
    return codes, list(first_seen)[1:]


def _float(text: str) -> float:
    """Seconds as Python reads them (other scripts' digits too), but not ``1_000``."""
    if "_" in text:
        raise ValueError(text)
    return float(text)


def _times(c: Columns, fail: Callable[[int, str, str], NoReturn]) -> npt.NDArray[np.float64]:
    """The ``time`` column in seconds; fails on the first field that is not a finite number."""
    texts = c.values["time"]
    try:
        if "_" in "".join(texts):
            raise ValueError("_")
        time = np.fromiter(map(float, texts), dtype=np.float64, count=len(texts))
    except ValueError:
        for i, v in enumerate(texts):
            try:
                _float(v)
            except ValueError:
                fail(i, "time", f"time {v.strip()!r} is not a number of seconds")
        raise                                         # not reached: some field failed
    bad = np.flatnonzero(~np.isfinite(time))
    if bad.size:
        i = int(bad[0])
        fail(i, "time", f"time {texts[i].strip()!r} is not a finite number of seconds")
    return time


def shots_from_columns(c: Columns) -> Shots:
    """Check every field of ``c`` and index it; the first mistake raises :class:`UserError`."""
    n = len(c.lines)
    if n == 0:
        raise UserError("no shots: the file has a header but no rows", file=c.path)

    def fail(i: int, column: str, message: str) -> NoReturn:
        raise field_error(c.path, int(c.lines[i]), i + 1, column, message)

    def category(name: str, vocab: dict[str, int], allowed: str) -> npt.NDArray[np.int8]:
        values = c.values[name]
        codes = _codes(values, vocab)
        bad = np.flatnonzero(codes == UNKNOWN)
        if bad.size:
            i = int(bad[0])
            fail(i, name, f"unknown {name} {values[i].strip()!r}; expected {allowed}")
        return codes.astype(np.int8)

    time = _times(c, fail)
    rank = category("rank", _RANK_V, " | ".join(ARCHER_RANKS))
    role = category("role", _ROLE_V, " | ".join(ROLES))
    target = category("target", _TARGET_V, " | ".join(TARGETS) + " (empty for a miss)")
    result = category("result", _RESULT_V, " | ".join(RESULTS))
    rnd = category("round", _ROUND_V, "1 | 2 | 3 (empty = 3)")
    # A miss touched no 侯; any other result names the 侯 it touched.
    miss = is_miss(result)
    incoherent = np.flatnonzero(miss != (target < 0))
    if incoherent.size:
        i = int(incoherent[0])
        if miss[i]:
            msg = (f"result {RESULTS[result[i]]} (a miss) but target "
                   f"{c.values['target'][i].strip()!r}: leave it empty")
        else:
            msg = f"result {RESULTS[result[i]]} needs the 侯 it touched ({' | '.join(TARGETS)})"
        fail(i, "target", msg)
    archers = _stripped(c.values["archer"])
    if "" in archers:
        fail(archers.index(""), "archer", "archer is empty")
    pair, pair_names = _groups(_stripped(c.values["pair"]))
    return Shots(c.path, time, archers, rank, role, target, result, pair, pair_names, rnd,
                 c.lines, c.warnings)


def read_shots(path: str | Path) -> Shots:
    """Read and validate a shot log (UTF-8 CSV with a header row, or JSON lines)."""
    return shots_from_columns(read_columns(path))

"""Validating a shot log into numpy arrays, one entry per arrow.

A shot log has one row per arrow: ``time`` (seconds), ``archer``, ``rank`` (a rank of the rite's
roster: 公, 宾 … in the 大射仪), ``role`` (上射 | 下射), ``target`` (the 侯 hit, one of the rite's; empty
for a miss), ``result`` (贯 | 离维纲 | 扬触 | 梱复 | 着侯, or a miss: 不中 | 留 | 扬 | 方 | 失) and
optionally ``pair`` and ``round`` (1 | 2 | 3; default 3). docs/check.md gives the meaning of each
value. :mod:`yuexuan.scoring.logread` reads the file (csv or json); this module checks every field
and turns the columns into index arrays; :func:`for_rite` codes the ranks and 侯 as the compiled
rite orders them (the timeline's ``rite``), refusing a name it does not have. Every mistake is a
:class:`~yuexuan.errors.UserError` naming the file, the line, the row and the column.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from yuexuan.errors import UserError
from yuexuan.rite.vocabulary import MISSES, RESULTS, ROLES
from yuexuan.scoring.logread import FIELDS, OPTIONAL, REQUIRED, Columns, field_error, read_columns

#: the arrays of a shot log and its verdicts: times (s), codes (int8 or int16 indices into the tuples
#: of yuexuan.rite.vocabulary, or into a Shots' rank_names, target_names, pair_names; -1 for none),
#: yes/no per shot
Seconds = npt.NDArray[np.float64]
Codes = npt.NDArray[np.integer[Any]]
Mask = npt.NDArray[np.bool_]

MISS = RESULTS.index("不中")
MISS_CODES = tuple(RESULTS.index(r) for r in MISSES)

__all__ = ["Shots", "read_shots", "shots_from_columns", "for_rite", "MISS", "MISS_CODES", "is_miss",
           "FIELDS", "REQUIRED", "OPTIONAL", "LOST"]

#: the result of a missed arrow not recovered at 取矢 (「若矢不备」 [001]): compile --shots adds the
#: 司马正's 「取矢不索」
LOST = RESULTS.index("失")


@dataclass(frozen=True)
class Shots:
    """A validated shot log, one entry per input row, in input order.

    ``role`` and ``result`` hold indices into :data:`~yuexuan.rite.vocabulary.ROLES` and
    ``RESULTS``; ``rank`` indexes ``rank_names``, ``target`` ``target_names`` (−1 = no target, a
    miss) and ``pair`` ``pair_names`` (−1 = none given): as read, in order of first appearance;
    :func:`for_rite` recodes the ranks and the 侯 in the rite's order. ``archers`` holds each
    row's name (no rule groups by it).
    ``lines`` gives each row's 1-based line in the file.
    """

    path: str
    time: npt.NDArray[np.float64]          # float64, seconds, as read (before any clock offset)
    archers: list[str]        # str, the archer's name (blanks trimmed)
    rank: npt.NDArray[np.int8]          # int8 index into rank_names
    role: npt.NDArray[np.int8]          # int8 index into ROLES
    target: npt.NDArray[np.int8]        # int8 index into target_names, -1 for none
    result: npt.NDArray[np.int8]        # int8 index into RESULTS
    pair: npt.NDArray[np.int32]          # int32 index into pair_names, -1 for none
    pair_names: list[str]
    round: npt.NDArray[np.int8]         # int8, 1..3
    lines: npt.NDArray[np.int64]         # int64, 1-based line of each row
    warnings: tuple[str, ...] = ()      # from reading the file (a last line cut short, left out)
    rank_names: tuple[str, ...] = ()    # the ranks the codes of ``rank`` name
    target_names: tuple[str, ...] = ()  # the 侯 the codes of ``target`` name

    def __len__(self) -> int:
        return len(self.time)


def is_miss(result: Codes) -> Mask:
    """Whether each result code is a miss (不中, 留, 扬, 方): no 侯 touched."""
    return np.isin(result, MISS_CODES)


def _vocab(names: Iterable[str], extra: dict[str, int] | None = None) -> dict[str, int]:
    v = {n: k for k, n in enumerate(names)}
    v.update(extra or {})
    return v


_ROLE_V = _vocab(ROLES)
_RESULT_V = _vocab(RESULTS)
_ROUND_V = {"1": 1, "2": 2, "3": 3, "": 3}
UNKNOWN = -2                                      # a code outside every vocabulary
MAX_NAMES = 100                                   # different ranks or 侯 a log may name


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
    ranks = _stripped(c.values["rank"])
    if "" in ranks:
        fail(ranks.index(""), "rank", "rank is empty")
    rank, rank_names = _groups(ranks)
    role = category("role", _ROLE_V, " | ".join(ROLES))
    target, target_names = _groups(_stripped(c.values["target"]))
    for column, codes, names in (("rank", rank, rank_names), ("target", target, target_names)):
        if len(names) > MAX_NAMES:
            fail(int(np.flatnonzero(codes == MAX_NAMES)[0]), column,
                 f"more than {MAX_NAMES} different {column} names; a rite has a few")
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
            msg = f"result {RESULTS[result[i]]} needs the 侯 it touched"
        fail(i, "target", msg)
    archers = _stripped(c.values["archer"])
    if "" in archers:
        fail(archers.index(""), "archer", "archer is empty")
    pair, pair_names = _groups(_stripped(c.values["pair"]))
    return Shots(c.path, time, archers, rank.astype(np.int8), role, target.astype(np.int8), result, pair,
                 pair_names, rnd, c.lines, c.warnings, tuple(rank_names), tuple(target_names))


def for_rite(shots: Shots, ranks: tuple[str, ...], hou: tuple[str, ...]) -> Shots:
    """``shots`` with ``rank`` coded as indices into ``ranks`` and ``target`` into ``hou`` (the
    compiled rite's: the timeline's ``rite.ranks`` and its 侯); the first row naming a rank or a 侯
    the rite has not is a :class:`UserError` (file, line, row, column)."""
    def recode(codes: Codes, names: tuple[str, ...], into: tuple[str, ...], column: str,
               what: str) -> npt.NDArray[np.int8]:
        table = np.array([into.index(n) if n in into else UNKNOWN for n in names] + [-1], dtype=np.int16)
        out = table[np.asarray(codes, dtype=np.int64)]          # -1 (none) takes the table's last
        bad = np.flatnonzero(out == UNKNOWN)
        if bad.size:
            i = int(bad[0])
            raise field_error(shots.path, int(shots.lines[i]), i + 1, column,
                              f"unknown {what} {names[codes[i]]!r} (not one of this rite's); expected "
                              f"{' | '.join(into)}" + (" (empty for a miss)" if column == "target" else ""))
        return out.astype(np.int8)

    return replace(shots, rank=recode(shots.rank, shots.rank_names, ranks, "rank", "rank"),
                   target=recode(shots.target, shots.target_names, hou, "target", "侯"),
                   rank_names=tuple(ranks), target_names=tuple(hou))


def read_shots(path: str | Path) -> Shots:
    """Read and validate a shot log (UTF-8 CSV with a header row, or JSON lines)."""
    return shots_from_columns(read_columns(path))

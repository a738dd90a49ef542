"""What a judge's log may hold that the rules still judge but a judge should look at: an archer the
timeline's roster does not name, a rank, role or 侯 that contradicts the roster, a row given twice.
One warning line each, ``FILE:LINE: row N: …``; ``check --strict`` makes them errors.

The roster is the timeline's compiled rite (its pairs: each archer's rank, role and pair, the 侯 a
pair shoots), never a list written here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from yuexuan.rite.vocabulary import ROLES
from yuexuan.scoring import tally
from yuexuan.scoring.shots import Shots
from yuexuan.timeline_rite import Rite


class Entry(NamedTuple):
    """One archer of the roster."""

    rank: str
    role: str
    pair: str
    hou: str          # the 侯 his pair shoots (its senior archer's: 「卑者与尊者为耦，不异侯」)


def roster(rite: Rite | None) -> dict[str, Entry]:
    """Archer → his rank, role, pair and 侯, from the compiled rite's pairs (none: empty)."""
    out: dict[str, Entry] = {}
    if rite is None:
        return out
    for p in rite.pairs:
        hou = rite.pair_hou(p.upper.rank, p.lower.rank)
        for archer, role in ((p.upper, ROLES[0]), (p.lower, ROLES[1])):
            out.setdefault(archer.name, Entry(archer.rank, role, p.id, hou))
    return out


def log_warnings(shots: Shots, names: dict[str, Entry],
                 own_hou: tuple[int, ...] = ()) -> list[str]:
    """The warnings of the module's doc, in line order (no roster: only the duplicates).
    ``shots`` is coded by the rite (:func:`yuexuan.scoring.shots.for_rite`); ``own_hou`` gives
    each rank code's 侯 code (the rules' settings), so the 侯 the log's pairs make an archer
    shoot (each archer at the roster's rank) is compared with his pair's in the roster."""
    out: list[tuple[int, str]] = []
    seen: dict[tuple[object, ...], tuple[int, int]] = {}
    must = np.full(len(shots), -1)
    if own_hou and len(shots):          # each archer at the roster's rank: only his pair decides
        at_rank = [names[a].rank if a in names else None for a in shots.archers]
        rank = np.array([shots.rank_names.index(r) if r in shots.rank_names else shots.rank[i]
                         for i, r in enumerate(at_rank)], dtype=np.int8)
        must = tally.hou_of_pairs(rank, shots.pair, own_hou)
    for i in range(len(shots)):
        line = int(shots.lines[i])
        where = f"{shots.path}:{line}: row {i + 1}"
        who = shots.archers[i]
        pair = shots.pair_names[shots.pair[i]] if shots.pair[i] >= 0 else None
        key = (float(shots.time[i]), who, int(shots.rank[i]), int(shots.role[i]),
               int(shots.target[i]), int(shots.result[i]), pair, int(shots.round[i]))
        if key in seen:
            first_row, first_line = seen[key]
            out.append((line, f"{where}: the same shot as row {first_row}, line {first_line} (a row "
                              f"given twice?)"))
        else:
            seen[key] = (i + 1, line)
        if not names:
            continue
        entry = names.get(who)
        if entry is None:
            out.append((line, f"{where}: archer {who!r} is not in the timeline's roster"))
            continue
        rank, role = shots.rank_names[shots.rank[i]], ROLES[shots.role[i]]
        contradicts = False
        for what, logged, listed in (("rank", rank, entry.rank), ("role", role, entry.role)):
            if logged != listed:
                contradicts = True
                out.append((line, f"{where}: {who} is logged as {what} {logged}, the roster "
                                  f"has {listed}"))
        if not contradicts and must[i] >= 0 and shots.target_names[must[i]] != entry.hou:
            out.append((line, f"{where}: the log makes {who} shoot {shots.target_names[must[i]]} "
                              f"(by its pair {pair}), the roster {entry.hou} (pair "
                              f"{entry.pair})"))
    return [w for _, w in sorted(out, key=lambda x: x[0])]

"""Large inputs for the kill tests: a cue sheet with a many-fold roster and a long shot log
(the same as bench/bench_compile.py's and bench/bench_check.py's)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from rite_support import HOU as TARGETS
from rite_support import RANKS as ARCHER_RANKS
from yuexuan.rite.vocabulary import RESULTS, ROLES
from yuexuan.scoring.shots import MISS_CODES

PAIR_BLOCK = re.compile(r"^\[\[pair\]\]\n(?:(?!\[\[).*\n)*", re.M)


def scaled_sheet(text: str, factor: int) -> str:
    """The default sheet with every [[pair]] repeated ``factor`` times under new ids."""
    blocks = PAIR_BLOCK.findall(text)
    first = text.index(blocks[0])
    rest = text[first:]
    for b in blocks:
        rest = rest.replace(b, "", 1)
    copies = []
    for k in range(factor):
        for b in blocks:
            copies.append(re.sub(r'^id = "(.*)"', lambda m: f'id = "{m.group(1)}#{k}"', b, flags=re.M)
                          if k else b)
    return text[:first] + "".join(copies) + rest


def make_log(path: Path, n: int, beats: np.ndarray, seed: int = 3) -> None:
    """A realistic log: pairs of archers, rounds 1–3, round-3 times jittered about the beats."""
    rng = np.random.default_rng(seed)
    rank = rng.integers(0, len(ARCHER_RANKS), n)
    role = rng.integers(0, 2, n)
    res = rng.integers(0, len(RESULTS), n)
    tgt = np.where(np.isin(res, MISS_CODES), -1, rng.integers(0, 3, n))   # a miss names no 侯
    rnd = rng.integers(1, 4, n)
    t = np.where(rnd == 3, beats[rng.integers(0, len(beats), n)] + rng.normal(0, 0.06, n),
                 rng.uniform(0, 90, n))
    pairs = rng.integers(0, n // 8 + 1, n)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("time,archer,rank,role,target,result,pair,round\n")
        tg = [""] + list(TARGETS)
        f.writelines(
            f"{t[i]:.3f},射者{pairs[i]}{'上下'[role[i]]},{ARCHER_RANKS[rank[i]]},{ROLES[role[i]]},"
            f"{tg[tgt[i] + 1]},{RESULTS[res[i]]},耦{pairs[i]},{rnd[i]}\n" for i in range(n))

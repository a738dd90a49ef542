"""What the drum plays in one 节 of the 射节: the strokes, their drums and the arrows they release.

Two kinds of pattern (variant ``shejie_pattern``, ceremony/variants.toml, O33):

- the grid (no ``score``, INFERENCE): 朔鼙, 应鼙, then two 建鼓 strokes, at the offsets of the
  cue sheet's ``[shejie]`` table; the 建鼓 strokes release the pair's two arrows of a shooting 节;
- a score of 《礼记·投壶》 (鲁鼓, 薛鼓; OUTSIDE), written as the 记 writes it in ○ and □ with 半
  between its halves: ○ is a stroke on a 鼙, □ on the 建鼓 (注 「圜者击鼙，方者击鼓」). The 射礼
  plays it whole (「取半以下为投壶礼，尽用之为射礼」). How a score meets the 节 no source says:
  the cue sheet's ``score_mapping`` chooses (INFERENCE, docs/cuesheet.md):

  - ``节一终``: one whole score to a 节; in a shooting 节 the first archer of the 拾发 looses on the
    last □ of the first half, the second on the last □ of the score;
  - ``矢一终``: one whole score to each arrow, so a 节 is the score twice; each arrow is loosed on
    the last □ of its score.

  The strokes are ``stroke_seconds`` apart, ○ and □ alike (「间若一」). The ○ strokes of a score
  fall to the 朔鼙 and the 应鼙 in turn, the 朔鼙 first (郑 「先击朔鼙，应鼙应之」 on 大射, INFERENCE
  for the 投壶 scores).
"""

from __future__ import annotations

from typing import NamedTuple

from yuexuan.errors import UserError
from yuexuan.rite.cuesheet_records import Shejie

BEI, GU, HALF = "○", "□", "半"


class Stroke(NamedTuple):
    """One stroke of a 节: its offset (s), its drum (朔鼙 | 应鼙 | 建鼓) and, for a 建鼓 stroke that
    looses an arrow of a shooting 节, which of the pair's two (0: the first of the 拾发, 1: the second)."""

    offset_s: float
    drum: str
    release: int | None = None


class JiePlan(NamedTuple):
    """The strokes of one 节 and its length (s)."""

    jie_seconds: float
    strokes: tuple[Stroke, ...]


def parse_score(score: str, where: str = "ceremony/variants.toml") -> tuple[str, str]:
    """The two halves of a 投壶 score (``○□…半○□…``); a UserError naming ``where`` unless it has only
    ○ and □, one 半, and a □ in each half."""
    halves = score.split(HALF)
    if len(halves) != 2 or set(score) - {BEI, GU, HALF} or not all(GU in h for h in halves):
        raise UserError(f"射节 score {score!r:.60}: expected ○ and □ in two halves divided by one 半, "
                        "with a □ (建鼓) in each", file=where, key="shejie_pattern")
    return halves[0], halves[1]


def _score_strokes(score: str, t0: float, step_s: float) -> tuple[list[Stroke], list[int]]:
    """The strokes of one playing of ``score`` from ``t0`` s, ``step_s`` apart; and the indexes (in
    that list) of the last □ of each half."""
    first, second = parse_score(score)
    out: list[Stroke] = []
    ends: list[int] = []
    n_bei = 0
    for half in (first, second):
        for mark in half:
            if mark == BEI:
                out.append(Stroke(t0 + len(out) * step_s, "朔鼙" if n_bei % 2 == 0 else "应鼙"))
                n_bei += 1
            else:
                out.append(Stroke(t0 + len(out) * step_s, "建鼓"))
        ends.append(max(i for i, s in enumerate(out) if s.drum == "建鼓"))
    return out, ends


def jie_plan(score: str, sj: Shejie) -> JiePlan:
    """The strokes of one 节: the grid of ``sj`` when ``score`` is empty, else the score played as
    ``sj.score_mapping`` says, ``sj.stroke_seconds`` apart."""
    if not score:
        grid = [Stroke(sj.pi_offsets[0], "朔鼙"), Stroke(sj.pi_offsets[1], "应鼙")]
        grid += [Stroke(off, "建鼓", k) for k, off in enumerate(sj.gu_offsets)]
        return JiePlan(sj.jie_seconds, tuple(grid))
    step = sj.stroke_seconds
    n = len(score) - 1                                  # strokes of one playing (半 is no stroke)
    if sj.score_mapping == "节一终":
        one, ends = _score_strokes(score, 0.0, step)
        return JiePlan(n * step, tuple(s._replace(release=ends.index(i)) if i in ends else s
                                       for i, s in enumerate(one)))
    strokes: list[Stroke] = []
    for k in range(2):                                   # 矢一终: one playing per arrow
        one, ends = _score_strokes(score, k * n * step, step)
        strokes += [s._replace(release=k) if i == ends[1] else s for i, s in enumerate(one)]
    return JiePlan(2 * n * step, tuple(strokes))

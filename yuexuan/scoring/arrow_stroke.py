"""The stroke each round-3 arrow must meet under the 贾疏 reading (``check --own-jie``).

贾疏 「诸侯七节者三节先以听…皆四节拾将乘矢」: a pair hears the first 节 and looses its eight
arrows in the last four, one arrow of each archer per shooting 节 (乡射 郑注 「一节之间当拾发」,
OUTSIDE). So an archer's n-th arrow belongs to the 建鼓 stroke the timeline binds to him and to
arrow n (:class:`yuexuan.timeline.Beat` ``archer``/``arrow``), and only that stroke counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from yuexuan.scoring.nearest import nearest
from yuexuan.scoring.tally import arrow_numbers
from yuexuan.timeline import Beat


class Matched(Protocol):
    """What :func:`live_strokes` reads of a stroke alignment (``check``'s drum ``Alignment``)."""

    @property
    def live_s(self) -> npt.NDArray[np.float64]: ...
    @property
    def plan_index(self) -> npt.NDArray[np.intp]: ...
    @property
    def live_index(self) -> npt.NDArray[np.intp]: ...


def own_strokes(beats: Iterable[Beat], cue_ids: Iterable[str], round_: npt.ArrayLike, archers: Sequence[str],
                time_s: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The planned stroke (timeline s) bound to each shot: the shooting Beat of one of ``cue_ids``
    whose ``archer`` is the shot's archer and whose ``arrow`` is the shot's number among that
    archer's shots of the round (:func:`~yuexuan.scoring.tally.arrow_numbers`); NaN where the
    timeline has none (an archer not in the roster, a fifth arrow) or outside round 3."""
    wanted = set(cue_ids)
    bound: dict[tuple[str, int | None], float] = {}
    for b in beats:                                     # a few hundred strokes: a dict is enough
        if b.shoot and b.cue in wanted and b.archer is not None:
            bound.setdefault((b.archer, b.arrow), b.time)
    numbers = arrow_numbers(round_, archers, time_s).tolist()
    out = np.fromiter((bound.get((a, n), np.nan) for a, n in zip(archers, numbers)),
                      dtype=np.float64, count=len(archers))
    out[np.asarray(round_) != 3] = np.nan
    return out


def live_strokes(planned_s: npt.NDArray[np.float64], plan: npt.NDArray[np.float64],
                 alignment: Matched) -> npt.NDArray[np.float64]:
    """``planned_s`` (strokes of ``plan``, timeline s) moved to the live stroke matched to each
    (``--beats-from``); NaN where the drummer's stroke was not found."""
    live_of_plan = np.full(len(plan), np.nan)
    live_of_plan[alignment.plan_index] = alignment.live_s[alignment.live_index]
    if not len(plan):
        return np.full(len(planned_s), np.nan)
    k, off = nearest(planned_s, plan)                 # a NaN (no stroke planned) stays NaN
    return np.where(off == 0.0, live_of_plan[k], np.nan)

"""What a judge needs to look again at a drum call (``check --beats-from``): each stroke heard with
its confidence, the planned stroke it was matched to, and which verdicts rest on a doubtful one.

Pure functions of the drum finder's result (:class:`DrumEvidence`); the command writes them out
(``--beats-out``, ``--plot``, the ``uncertain`` column). A verdict is *uncertain* when it rests on
the drum — the shot would be released on a stroke and refused off it (the rules of
:func:`yuexuan.scoring.tally.decide` run both ways) — and either

- it was released on a stroke whose confidence is below the finder's threshold, or
- it was refused off the drum while a planned stroke that was *not* heard falls within
  twice the tolerance of the shot (on the live clock, predicted from the matched strokes
  around it): the stroke may have been there, unheard.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.check.drum.finder import DrumEvidence
from yuexuan.scoring import tally
from yuexuan.scoring.nearest import nearest
from yuexuan.scoring.shots import Shots
from yuexuan.scoring.tally import rests_on_drum

MISSED_REACH = 2.0     # × tolerance: a missed planned stroke this near a refused shot casts doubt


class StrokeRow(NamedTuple):
    """One line of ``--beats-out``: a planned stroke and the stroke heard for it (None = missed),
    or a stroke heard that matches no planned one (planned None)."""

    planned_s: float | None
    heard_s: float | None
    confidence: float | None


def stroke_rows(ev: DrumEvidence, plan: npt.NDArray[np.float64]) -> list[StrokeRow]:
    """Every planned stroke (heard or not) and every extra stroke heard, in time order."""
    al = ev.alignment
    heard = np.full(len(plan), np.nan)
    conf = np.full(len(plan), np.nan)
    heard[al.plan_index] = al.live_s[al.live_index]
    conf[al.plan_index] = ev.confidence[al.live_index]
    extra = np.ones(len(al.live_s), dtype=bool)
    extra[al.live_index] = False
    planned = np.concatenate((plan, np.full(int(extra.sum()), np.nan)))
    heard = np.concatenate((heard, al.live_s[extra]))
    conf = np.concatenate((conf, ev.confidence[extra]))
    order = np.argsort(np.where(np.isnan(planned), heard, planned), kind="stable")

    def opt(v: float) -> float | None:
        return None if v != v else round(float(v), 6)
    return [StrokeRow(opt(planned[i]), opt(heard[i]), opt(conf[i])) for i in order.tolist()]


def missed_strokes_heard_at(ev: DrumEvidence, plan: npt.NDArray[np.float64],
                            ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The planned strokes that were not heard (timeline s, ascending) and where each would have
    been heard: the plan mapped through the matched pairs (linear between them, constant drift
    beyond)."""
    al = ev.alignment
    missed = np.ones(len(plan), dtype=bool)
    missed[al.plan_index] = False
    if not len(al.plan_index):
        return plan[missed], plan[missed]
    p = plan[al.plan_index]
    drift = al.live_s[al.live_index] - p
    return plan[missed], plan[missed] + np.interp(plan[missed], p, drift)


class ShotEvidence(NamedTuple):
    """Per shot: the confidence of the stroke its verdict rests on (NaN: none), and whether the
    verdict is uncertain (see the module's doc)."""

    stroke_confidence: npt.NDArray[np.floating[Any]]
    uncertain: npt.NDArray[np.bool_]


def shot_evidence(ev: DrumEvidence, plan: npt.NDArray[np.float64], shots: Shots, v: tally.Verdict,
                  settings: tally.Settings, own_s: npt.NDArray[np.float64] | None = None) -> ShotEvidence:
    """The confidence behind each verdict and the uncertain marks. ``own_s`` (``--own-jie``): the
    planned stroke of each shot's own 节 (timeline s, NaN: none); then only that stroke, not
    heard, casts doubt on a refusal."""
    live = ev.alignment.live_s
    n = len(shots)
    conf = np.full(n, np.nan)
    has = ~np.isnan(v.nearest_beat)
    if len(live) and has.any():
        k, off = nearest(v.nearest_beat[has], live)
        same = np.abs(off) < 1e-9
        conf[np.flatnonzero(has)[same]] = ev.confidence[k[same]]
    depends = rests_on_drum(shots, settings)
    doubtful_stroke = v.on_beat & ~(conf >= ev.threshold)           # NaN counts as doubtful
    unheard, unheard_at = missed_strokes_heard_at(ev, plan)
    reach = MISSED_REACH * settings.tolerance_s
    near_unheard = np.zeros(n, dtype=bool)
    if own_s is not None and len(unheard):      # the shot's own stroke, planned but not heard
        k, off = nearest(own_s, unheard)
        near_unheard = ~v.on_beat & (off == 0.0) & (np.abs(v.clock_s - unheard_at[k]) <= reach)
    elif own_s is None and len(unheard):
        _, d = nearest(v.clock_s, np.sort(unheard_at))
        near_unheard = ~v.on_beat & (np.abs(d) <= reach)
    return ShotEvidence(conf, depends & (doubtful_stroke | near_unheard))


def summary(ev: DrumEvidence) -> dict[str, Any]:
    """The confidence part of the ``drum`` report (JSON-ready)."""
    matched = ev.confidence[ev.alignment.live_index]
    return {"finder": ev.finder, "confidence_threshold": ev.threshold,
            "matched_below_threshold": int((matched < ev.threshold).sum()),
            "confidence_median": round(float(np.median(matched)), 3) if len(matched) else None}

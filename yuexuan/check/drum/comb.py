"""The line along which a recording's low onsets keep the planned beat: a comb of the plan's strokes
laid over the candidates (the drum finder's seeds, :mod:`yuexuan.check.drum.finder`).

The strongest onsets of a noisy hall are not the drum's: a 鼙 struck beside a stroke, a bell's
knock, a cough, a phone codec's smear often outweigh a stroke. What sets the drum apart is that
*its* onsets fall on the plan, stroke after stroke, at one tempo. So every hypothesis — one of the
strong onsets taken for one planned stroke, the drummer at a steady tempo ratio near 1 — is
scored by the plan's strokes around it: each planned stroke within ``REACH_BEATS`` beats adds
the weight of the onset heard within ``TOL_S`` of where the hypothesis puts it (its onset
strength against the stretch's typical onset, capped at ``CAP``). The best hypothesis is the
drum's line; the onsets on it are the seeds.

Whether a drum is there at all is a test against the same search with the plan's tempo changed
far beyond a drummer's drift (``NULL_RATES``): onsets that fall on the plan by chance (noise, a
crowd) fit a wrong tempo as well as the right one; a drum's strokes fit only their own. The
recording keeps the beat when the plan's comb scores ``MIN_LIFT`` times the best of the null
combs or more (a matched filter's detection against its own noise floor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

TOL_S = 0.045          # an onset within this of where the hypothesis puts a stroke is on it, s
                       # (20 ms of jitter: 97 % within 45 ms)
REACH_BEATS = 10       # the comb spans this many planned strokes either side of its anchor
RATES = np.linspace(0.97, 1.03, 25)   # recording s per planned s tried (a drummer's drift: ±2 %,
                                      # the step leaves ≤ 25 ms at 10 beats of 2 s)
NULL_RATES = (0.77, 0.83, 1.19, 1.31)  # tempi no drummer of this plan plays (the null combs)
CAP = 3.0              # an onset weighs at most this many times the stretch's median onset
MIN_LIFT = 1.6         # the plan's comb must score this many times the best null comb
ANCHORS = 40           # the strongest onsets tried as anchors


@dataclass(frozen=True)
class Line:
    """The best comb: which candidates fall on which planned strokes, and its evidence."""

    plan_index: npt.NDArray[np.intp]     # planned strokes heard (indices into the plan)
    cand_index: npt.NDArray[np.intp]     # their onsets (indices into the candidates given)
    score: float                         # the plan's comb
    null_score: float                    # the best null comb

    @property
    def lift(self) -> float:
        return self.score / self.null_score if self.null_score > 0 else np.inf


def _scores(t: npt.NDArray[np.float64], w: npt.NDArray[np.float64], plan: npt.NDArray[np.float64],
            anchors: npt.NDArray[np.intp], ks: npt.NDArray[np.intp], rates: npt.NDArray[np.float64],
            ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Score of each (anchor, planned stroke, rate) hypothesis: (n_hyp,) and the predicted times
    (n_hyp, 2·REACH_BEATS + 1) (NaN outside the plan)."""
    offs = np.arange(-REACH_BEATS, REACH_BEATS + 1)
    j = ks[:, None] + offs[None, :]
    valid = (j >= 0) & (j < len(plan))
    dp = np.where(valid, plan[np.clip(j, 0, len(plan) - 1)] - plan[ks][:, None], np.nan)
    pred = t[anchors][:, None, None] + rates[None, :, None] * dp[:, None, :]     # (h, r, beats)
    pred = pred.reshape(-1, dp.shape[1])
    flat = np.nan_to_num(pred.ravel(), nan=-1e9)
    i = np.clip(np.searchsorted(t, flat), 1, len(t) - 1)
    best = np.zeros(len(flat))
    for k in (i - 1, i):
        hit = np.abs(t[k] - flat) <= TOL_S
        best = np.maximum(best, np.where(hit, w[k], 0.0))
    return best.reshape(pred.shape).sum(axis=1), pred


def _hypotheses(t: npt.NDArray[np.float64], plan: npt.NDArray[np.float64], anchors: npt.NDArray[np.intp],
                start_s: float | None, reach_s: float) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """(anchor, planned stroke) pairs: each anchor on the planned strokes within ``reach_s`` of
    where ``start_s`` puts it (every stroke when no start is known)."""
    a_all, k_all = [], []
    for a in anchors:
        if start_s is None:
            ks = np.arange(len(plan))
        else:
            ks = np.flatnonzero(np.abs(plan - (t[a] + start_s)) <= reach_s)
        a_all.append(np.full(len(ks), a))
        k_all.append(ks)
    return np.concatenate(a_all).astype(np.intp), np.concatenate(k_all).astype(np.intp)


def best_line(time_s: npt.NDArray[np.float64], strength: npt.NDArray[np.floating],
              plan: npt.NDArray[np.float64], start_s: float | None = None,
              reach_s: float | None = None) -> Line | None:
    """The comb that best fits the candidates (recording clock, ascending ``time_s``) to the plan,
    anchored near ``start_s`` (timeline time of the recording's first sample; within ``reach_s``,
    default 3 beats), and the best null comb. None when there are too few candidates."""
    t = np.asarray(time_s, dtype=np.float64)
    if len(t) < 3 or len(plan) < 3:
        return None
    gap = float(np.median(np.diff(plan)))
    reach_s = 3.0 * gap if reach_s is None else reach_s
    s = np.asarray(strength, dtype=np.float64)
    w = np.clip(s / max(float(np.median(s)), 1e-9) - 1.0, 0.0, CAP)
    anchors = np.argsort(s)[::-1][:ANCHORS]
    a, k = _hypotheses(t, plan, anchors, start_s, reach_s)
    if not len(a):
        return None
    score, pred = _scores(t, w, plan, a, k, RATES)
    h = int(np.argmax(score))
    null = max(float(_scores(t, w, plan, a, k, np.array([r]))[0].max()) for r in NULL_RATES)
    # the onsets on the best comb, one a planned stroke
    ai = h // len(RATES)
    p = pred[h]
    offs = np.arange(-REACH_BEATS, REACH_BEATS + 1) + k[ai]
    ok = ~np.isnan(p)
    p, offs = p[ok], offs[ok]
    i = np.clip(np.searchsorted(t, p), 1, len(t) - 1)
    lo, hi = i - 1, i
    wl = np.where(np.abs(t[lo] - p) <= TOL_S, w[lo], -1.0)       # the heavier within reach,
    wh = np.where(np.abs(t[hi] - p) <= TOL_S, w[hi], -1.0)       # as the comb weighed it
    pick = np.where(wl >= wh, lo, hi)
    on = np.maximum(wl, wh) >= 0
    return Line(offs[on].astype(np.intp), pick[on].astype(np.intp), float(score[h]), null)

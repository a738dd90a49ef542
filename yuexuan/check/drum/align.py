"""Detected drum strokes aligned to the planned 射节 beats (the drum finder's last step).

For ``yuexuan check --beats-from AUDIO``: live drummers drift from the plan, so the round-3 beat
test can use the strokes actually played. The finder (:mod:`yuexuan.check.drum.finder`) takes the
candidate strokes from the recording; here they are matched to the plan. The planned beats are
followed in order, each stroke predicted from the last matches, so a drift of several beats is
tracked; the drift is live − plan per matched beat and the tempo ratio the slope of
``plan ≈ a + b · live`` (seconds).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.errors import UserError


@dataclass(frozen=True)
class Alignment:
    """Live strokes mapped onto the timeline clock, matched to the planned beats."""

    live_s: npt.NDArray[np.float64]        # every detected stroke, timeline seconds
    shift_s: float            # timeline time of the recording's first sample, seconds
    rate: float               # b in plan ≈ a + b·live: planned seconds per live second
    plan_index: npt.NDArray[np.intp]    # matched planned beats (indices into the plan)
    live_index: npt.NDArray[np.intp]    # their matched live strokes (indices into live_s)
    drift_s: npt.NDArray[np.float64]       # live − plan for each matched pair, seconds
    missed: int               # planned beats with no live stroke
    extra: int                # live strokes matching no planned beat
    anchored: bool            # True when the shift was given, not estimated

    def report(self) -> dict[str, Any]:
        """The drift report (seconds; JSON-ready)."""
        d = self.drift_s
        m = len(d)
        return {
            "strokes_detected": int(len(self.live_s)),
            "matched": m,
            "missed": int(self.missed),
            "extra": int(self.extra),
            "recording_starts_at_s": round(self.shift_s, 6),
            "start_given": self.anchored,
            "tempo_ratio": round(self.rate, 6),
            "drift_first_s": round(float(d[0]), 6) if m else None,
            "drift_last_s": round(float(d[-1]), 6) if m else None,
            "drift_mean_s": round(float(d.mean()), 6) if m else None,
            "drift_max_abs_s": round(float(np.abs(d).max()), 6) if m else None,
            "drift_rms_s": round(float(np.sqrt(np.mean(d * d))), 6) if m else None,
        }


TRACK = 0.1          # × the beat gap: the window once the drift is followed (see follow)
TRACKED_AFTER = 4    # matches from which the drift is followed
EDGE_S = 0.1         # a stroke this near the recording's start does not set an estimated start, s


def follow(plan: npt.NDArray[np.float64], live: npt.NDArray[np.float64], shift_s: float, window_s: float,
           fit_last: int = 8, track_s: float | None = None,
           ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Walk the planned beats in order, predicting each one's live stroke from a line fitted to
    the last ``fit_last`` matches (so a drift of several beats is followed), and take the
    nearest unused stroke within ``window_s`` of the prediction — within ``track_s`` once
    ``TRACKED_AFTER`` strokes are matched: the line then predicts a stroke to its jitter, and a
    wide window would take a 鼙 or a bell where the drum's own stroke is missing, and the next
    predictions would follow it astray (a hall's tail hides some strokes among the strongest
    onsets). Returns (plan idx, live idx)."""
    # plain Python floats, bisect and the least-squares line written out: the placement follows
    # hundreds of candidate starts, and numpy's per-call overhead (polyfit, searchsorted) was 90 %
    # of its time
    pl: list[float] = np.asarray(plan, dtype=np.float64).tolist()
    lv: list[float] = np.asarray(live, dtype=np.float64).tolist()
    n = len(lv)
    pi: list[int] = []
    li: list[int] = []
    used = [False] * n
    px: list[float] = []                # the matches' planned and live times
    ly: list[float] = []
    fitted = -1                         # len(pi) when the line was last fitted (it holds till a match)
    mx = my = b = 0.0
    flat = False                        # the last matches' planned times all equal: no slope
    for i, p in enumerate(pl):
        if len(pi) >= 2:
            if fitted != len(pi):
                xs, ys = px[-fit_last:], ly[-fit_last:]
                mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
                sxx = sxy = 0.0                 # the sums in the order sum() adds them
                for x, y in zip(xs, ys):
                    dx = x - mx
                    sxx += dx * dx
                    sxy += dx * (y - my)
                flat = not sxx > 0
                b = 0.0 if flat else sxy / sxx
                fitted = len(pi)
            pred = ly[-1] - px[-1] + p if flat else my + b * (p - mx)
        elif pi:
            pred = ly[-1] + (p - px[-1])
        else:
            pred = p - shift_s
        # not yuexuan.scoring.nearest: a stroke already matched is passed over for its neighbour
        j = bisect.bisect_left(lv, pred)
        best, gap = -1, math.inf
        for k in (j - 1, j):
            if 0 <= k < n and not used[k] and abs(lv[k] - pred) < gap:
                best, gap = k, abs(lv[k] - pred)
        if best < 0:
            continue
        reach = window_s if track_s is None or len(pi) < TRACKED_AFTER else min(window_s, track_s)
        if gap <= reach:
            used[best] = True
            pi.append(i)
            li.append(best)
            px.append(p)
            ly.append(lv[best])
    return np.array(pi, dtype=np.intp), np.array(li, dtype=np.intp)


def align(onsets_s: npt.NDArray[np.float64], plan_s: npt.NDArray[np.float64], start_s: float | None = None,
          window_s: float | None = None, track: bool = True, estimated: bool = False) -> Alignment:
    """Map detected strokes (recording clock, s) onto the planned beats (timeline clock, s).

    The beats are followed in order (:func:`follow`), so the live drum may drift by several
    beats. With ``start_s`` (the timeline time of the recording's first sample) the clock is
    taken as given and every difference is drift. Without it the start is estimated so that the
    drift is zero at the first matched beat (the drummer starts the 射节 on the plan and drifts
    from there), on a line fitted to the first matches. ``estimated``: ``start_s`` is a
    placement's estimate (:mod:`yuexuan.check.drum.placement`), not given: the beats are followed
    from it, and the start is then estimated as without one.
    """
    live = np.sort(np.asarray(onsets_s, dtype=np.float64))
    plan = np.sort(np.asarray(plan_s, dtype=np.float64))
    if not len(plan):
        raise UserError("the timeline has no 射节 beats to align the recording to")
    if not len(live):
        raise UserError("no drum strokes found in the recording")
    gap = float(np.median(np.diff(plan))) if len(plan) > 1 else 1.0
    if window_s is None:
        window_s = 0.35 * gap
    track_s = TRACK * gap if track else None
    anchored = start_s is not None and not estimated
    if start_s is not None:                  # anchored, or a placement's estimate
        shift = float(start_s)
        pi, li = follow(plan, live, shift, window_s, track_s=track_s)
    else:
        # Try the first planned beats against the first strokes; keep the start that follows
        # the most beats (a regular grid matches its own shifts locally, not to the end), and
        # among those the steadiest: the smallest jitter, the RMS second
        # difference of live − plan, which a smooth drift does not raise.
        cands = np.unique(np.round((plan[:4, None] - live[None, :16]).ravel(), 3))
        tried = []
        for c in cands[::-1]:                      # latest start first: ties keep it
            m = follow(plan, live, float(c), window_s, track_s=track_s)
            d = live[m[1]] - plan[m[0]]
            jitter = float(np.sqrt(np.mean(np.diff(d, 2) ** 2))) if len(d) > 2 else np.inf
            tried.append((float(c), m, jitter))
        most = max(len(t[1][0]) for t in tried)
        best = min((t for t in tried if len(t[1][0]) == most), key=lambda t: t[2])
        shift, (pi, li), _ = best
    if estimated and len(pi):
        # the placement's own start: drift zero at the first matched stroke (a line refitted
        # over the first strokes leans on drums at other distances: 22 ms off on a 鲁鼓 cut),
        # not one in the recording's first EDGE_S (struck before it began, its attack read on
        # the first samples: 13 ms off there)
        whole = np.flatnonzero(live[li] >= EDGE_S)
        k = int(whole[0]) if len(whole) else 0
        shift = float(plan[pi[k]] - live[li[k]])
    elif not anchored and len(pi):
        k = min(len(pi), 8)
        if k >= 2 and np.ptp(live[li[:k]]) > 0:
            b0, a0 = np.polyfit(live[li[:k]], plan[pi[:k]], 1)
            shift = float(a0 + (b0 - 1.0) * live[li[0]])
        else:
            shift = float(plan[pi[0]] - live[li[0]])
    rate = 1.0
    if len(pi) >= 2 and np.ptp(live[li]) > 0:
        rate = float(np.polyfit(live[li], plan[pi], 1)[0])
    live_tl = live + shift
    drift = live_tl[li] - plan[pi]
    return Alignment(live_tl, shift, rate, pi, li, drift, len(plan) - len(pi),
                     len(live) - len(li), anchored)


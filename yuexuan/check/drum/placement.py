"""Where a recording sits in the ceremony: a search over candidate starts, each scored with what the
recording holds, the best and the runner-up reported, and ambiguity said rather than guessed.

A recording may begin anywhere: before the 射节, in the middle of it, or hours before it. The
candidates are every start that puts one of the recording's first strong low onsets on one of the
planned 建鼓 strokes (:func:`candidate_starts`); each is followed along the plan
(:func:`yuexuan.check.drum.align.follow`, the drift tracked) and scored (:func:`score`) in strokes'
worth of evidence:

- **+1** for each planned stroke heard where it falls, **−1** for each that falls inside the
  recording and is not heard;
- **−1** for each sure stroke of the drum heard in the silence the plan keeps before the 射节's
  first stroke or after its last (:class:`yuexuan.check.drum.expected.Expected`).

A start that puts the 射节's end too late is contradicted by the strokes heard after it in the
silence, one that puts it too early by the strokes it expects there and misses; the same at the
beginning. A periodic grid (the 网格: a stroke every 2 s) matches itself shifted by whole beats
everywhere but at the 射节's ends; a 投壶 score (鲁鼓, 薛鼓) is not periodic within a 节 and
places itself anywhere. A recording that holds the 射节's first stroke with a beat of the silence
before it, or its last with a beat of the silence after, is placed exactly: every other start
loses at least one stroke's worth. When the runner-up comes within ``MARGIN`` of the best, the
placement is *ambiguous*: ``check`` then judges no shot that rests on the recording and says so.
(The other drums, the bells and the song are not weighed yet: the 鼙's onsets, found among every
low onset of a noisy mix, matched a start a beat off as well as the true one.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.check.drum import align
from yuexuan.check.drum.expected import Expected

MARGIN = 1.0            # strokes' worth: a runner-up closer than this makes the placement ambiguous
ANCHORS = 12            # the first this many strong onsets of the recording anchor the candidates
PREFILTER_BEATS = 6     # a candidate must match this many planned strokes after its anchor …
PREFILTER_HIT = 0.6     # … at least this fraction of them (within PREFILTER_REACH beats)
PREFILTER_REACH = 0.15  # × the beat gap
EDGE_S = 0.1            # a planned stroke this near the recording's ends is not expected in it, s
DRIFT_ALLOWED = 0.05    # the live 射节 may last this much longer than planned


@dataclass(frozen=True)
class Hypothesis:
    """One candidate start and how well the recording bears it out."""

    start_s: float               # timeline time of the recording's first sample, s
    score: float                 # strokes' worth of evidence (module doc)
    matched: int                 # planned strokes heard
    missed: int                  # planned strokes inside the recording not heard
    quiet: int                   # sure strokes heard where the plan keeps silence
    jitter_s: float              # RMS second difference of the drift: among equal scores the
    #                              steadiest wins (an onset just after the first stroke, taken
    #                              for it, makes the drift jump)
    plan_index: npt.NDArray[np.intp]   # the matched planned strokes
    live_index: npt.NDArray[np.intp]   # and their onsets (indices into the times scored)

    def report(self) -> dict[str, Any]:
        return {"start_s": round(self.start_s, 3), "score": round(self.score, 1),
                "strokes_heard": self.matched, "strokes_missed": self.missed,
                "strokes_in_silence": self.quiet}


@dataclass(frozen=True)
class Placement:
    """The search's result: the best start, the runner-up (None: no other), and whether the
    recording holds the 射节's first and last strokes with the silence around them."""

    best: Hypothesis
    runner_up: Hypothesis | None
    ambiguous: bool
    holds_start: bool
    holds_end: bool
    duration_s: float

    @property
    def margin(self) -> float | None:
        return None if self.runner_up is None else self.best.score - self.runner_up.score

    def report(self) -> dict[str, Any]:
        """JSON-ready: the best and runner-up, the margin, what the recording holds."""
        return {"ambiguous": self.ambiguous, "margin_required": MARGIN,
                "margin": None if self.margin is None else round(self.margin, 1),
                "best": self.best.report(),
                "runner_up": None if self.runner_up is None else self.runner_up.report(),
                "holds_shejie_start": self.holds_start, "holds_shejie_end": self.holds_end}


def candidate_starts(times_s: npt.NDArray[np.float64], plan: npt.NDArray[np.float64],
                     gap_s: float) -> npt.NDArray[np.float64]:
    """Starts (timeline s of the recording's first sample) that put one of the first ``ANCHORS``
    strong onsets of the busiest stretch of the recording (as long as the 射节) on a planned
    stroke, and the next planned strokes on onsets too (``PREFILTER_*``); ascending, distinct."""
    t = np.sort(np.asarray(times_s, dtype=np.float64))
    if not len(t) or not len(plan):
        return np.zeros(0)
    span = float(plan[-1] - plan[0]) * (1 + DRIFT_ALLOWED) + 2 * gap_s
    ends = np.searchsorted(t, t + span, side="right")
    i0 = int(np.argmax(ends - np.arange(len(t))))
    anchors = t[i0:min(ends[i0], i0 + ANCHORS)]
    shifts = (plan[None, :] - anchors[:, None]).ravel()
    reach = PREFILTER_REACH * gap_s
    keep = []
    for s in shifts:
        k = int(np.searchsorted(plan, s + t[i0] - reach))         # the anchor's planned stroke
        nxt = plan[k:k + PREFILTER_BEATS] - s                      # where they fall, recording s
        nxt = nxt[nxt <= t[-1] + reach]
        if len(nxt) < 2:
            keep.append(len(nxt) == 1)
            continue
        j = np.clip(np.searchsorted(t, nxt), 1, len(t) - 1)
        near = np.minimum(np.abs(t[j] - nxt), np.abs(t[j - 1] - nxt)) <= reach
        keep.append(near.mean() >= PREFILTER_HIT)
    out = np.sort(shifts[np.array(keep, dtype=bool)])
    if len(out) > 1:                      # one candidate per 1/16 beat
        out = out[np.r_[True, np.diff(out) > gap_s / 16]]
    return out


def heard_at(events: npt.NDArray[np.float64], plan: npt.NDArray[np.float64],
             plan_index: npt.NDArray[np.intp], live_rec_s: npt.NDArray[np.float64],
             ) -> npt.NDArray[np.float64]:
    """Timeline times ``events`` moved to where they are heard on the recording's clock (s): the
    matched strokes' offsets interpolated, held constant beyond the first and last."""
    p = plan[plan_index]
    return events + np.interp(events, p, live_rec_s - p)


def score(start_s: float, times_s: npt.NDArray[np.float64], sure: npt.NDArray[np.bool_],
          plan: npt.NDArray[np.float64], exp: Expected, duration_s: float,
          gap_s: float) -> Hypothesis | None:
    """The evidence for ``start_s`` (module doc). ``times_s``: the drum-like onsets (recording s,
    ascending), ``sure``: which of them are surely the drum. None when fewer than three strokes
    follow the plan."""
    pi, li = align.follow(plan, times_s, start_s, 0.35 * gap_s, track_s=align.TRACK * gap_s)
    if len(pi) < 3:
        return None
    live = times_s[li]
    heard = heard_at(plan, plan, pi, live)
    inside = (heard >= EDGE_S) & (heard <= duration_s - EDGE_S)
    inside[pi] = True
    missed = int(inside.sum()) - len(pi)
    lo, hi = heard[0] - exp.quiet_before_s, heard[0] - gap_s / 2
    lo2, hi2 = heard[-1] + gap_s / 2, heard[-1] + exp.quiet_after_s
    unmatched = np.ones(len(times_s), dtype=bool)
    unmatched[li] = False
    t_sure = times_s[sure & unmatched]
    quiet = int((((t_sure > lo) & (t_sure < hi)) | ((t_sure > lo2) & (t_sure < hi2))).sum())
    # the start as the follow found it: the first match's offset (the drift there taken as zero)
    start = float(plan[pi[0]] - live[0])
    drift = live - plan[pi]
    jitter = float(np.sqrt(np.mean(np.diff(drift, 2) ** 2))) if len(drift) > 2 else 0.0
    return Hypothesis(start, float(len(pi) - missed - quiet), len(pi), missed, quiet, jitter,
                      pi, li)


def place(times_s: npt.NDArray[np.float64], sure: npt.NDArray[np.bool_],
          plan: npt.NDArray[np.float64], exp: Expected, starts_s: npt.NDArray[np.float64],
          duration_s: float) -> Placement | None:
    """Score every candidate start (:func:`score`); the best, the runner-up (another mapping of
    the recording's strokes to the plan, a start more than half a beat away) and whether the
    margin between them makes the placement ambiguous. None when no candidate holds."""
    gap = float(np.median(np.diff(plan))) if len(plan) > 1 else 2.0
    tried: dict[tuple[int, int], Hypothesis] = {}
    for s in starts_s:
        h = score(float(s), times_s, sure, plan, exp, duration_s, gap)
        if h is None:
            continue
        key = (int(h.plan_index[0]), int(h.live_index[0]))
        if key not in tried or h.score > tried[key].score:
            tried[key] = h
    if not tried:
        return None
    ranked = sorted(tried.values(), key=lambda h: (-h.score, h.jitter_s))
    best = ranked[0]
    runner = next((h for h in ranked[1:] if abs(h.start_s - best.start_s) > gap / 2), None)
    ambiguous = runner is not None and best.score - runner.score < MARGIN
    live = times_s[best.live_index]
    first = heard_at(plan[:1], plan, best.plan_index, live)[0]
    last = heard_at(plan[-1:], plan, best.plan_index, live)[0]
    # a beat of the silence around the stroke heard too (or all of it, when shorter)
    holds_start = bool(best.plan_index[0] == 0 and first - min(gap, exp.quiet_before_s) >= 0)
    holds_end = bool(best.plan_index[-1] == len(plan) - 1
                     and last + min(gap, exp.quiet_after_s) <= duration_s)
    return Placement(best, runner, bool(ambiguous), holds_start, holds_end, duration_s)

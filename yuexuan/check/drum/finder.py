"""``check --beats-from``: which of a recording's percussive low onsets are the 建鼓's strokes, how
sure each is, and their alignment to the planned 射节 beats.

The candidates (:mod:`yuexuan.check.drum.band`) are every low percussive onset: the 建鼓's strokes,
but also the 朔鼙 and 应鼙 before each 节, the thump of a bell or stone, a sung consonant, a
cough. The drum is told from them by a model learnt from the recording itself:

1. **Seeds.** A comb of the plan's strokes is laid over the candidates
   (:mod:`yuexuan.check.drum.comb`): each strong onset taken for a planned stroke, the drummer at
   a steady tempo within ±3 %, scored by the onsets heard where the plan's strokes around it
   fall; the onsets on the best comb are the drum's own strokes, the seeds. Whether they are a
   drum at all: the plan's comb must fit ``comb.MIN_LIFT`` times as well as a tempo no drummer
   plays (noise fits any tempo alike), and the seeds must be among the strong low onsets
   (``MIN_SEED_RANK``: a bell struck on the beat, 鼓鑮为节, keeps the beat too, but softly).
2. **Model.** Fisher's linear discriminant of the candidates' *timbre* (the dB rise across the
   onset of each percussive bin below 1 kHz): the seeds against the onsets farther than ⅛ beat
   from every planned stroke as heard (the bells, stones, 鼙, song). A candidate's *score* is its
   timbre projected on that axis.
3. **Confidence** in [0, 1]: how drum-like (its score placed between the off-plan onsets' 99th
   percentile, 0, and the seeds' median, 1, clipped) times how loud (1 at the seeds' median
   attack level or above, 0 at ``LEVEL_SPAN_DB`` below). A stroke of the drum's typical timbre
   and level scores 1; a 鼙 (its body higher, its rise below 80 Hz small) or a bell's knock
   near 0.
4. **Strokes.** Candidates at least ``KEEP`` drum-like are aligned to the plan as before
   (:func:`yuexuan.check.drum.align.align`, following drift); where a planned stroke is still
   missed, the candidate within ``RESCUE_S`` of where it is heard is taken whatever its timbre
   (its confidence stays low: a verdict resting on it is marked uncertain). A matched stroke
   off the drummer's line (:func:`snap`) is traded for the onset on it, or given up. One that
   matches no planned stroke is kept (an extra stroke, which serves as a beat) only when its
   confidence reaches ``EXTRA_SURE`` and it lies ``EXTRA_AWAY`` of a beat from every matched
   stroke — an onset that is neither where the plan expects the drum nor clearly the drum on
   its own is not taken for it.
5. **Attack times** by the drum's own template (:mod:`yuexuan.check.drum.template`): a stroke
   whose own reading is a hump off the template's fit is read again by the fit.

``THRESHOLD`` = 0.5: a stroke half as drum-like as the typical stroke, or 15 dB softer, is
doubtful, and a verdict resting on it is marked uncertain (:mod:`yuexuan.check.evidence`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.check.drum import align, band, comb, placement, template
from yuexuan.check.drum.expected import Expected
from yuexuan.errors import UserError
from yuexuan.scoring.nearest import nearest

THRESHOLD = 0.5      # confidence below which a stroke is doubtful
KEEP = 0.2           # candidates less drum-like than this are not taken for strokes at all
LEVEL_SPAN_DB = 30.0  # a stroke this many dB below the drum's typical level has confidence 0
MIN_SEED_RANK = 0.8  # the onsets on the plan's line are stronger than this fraction of the low
                     # onsets around them (their mean rank): a drum. Measured: the FluidR3 mix
                     # without its 建鼓 (the 鑮 on the beats, 鼓鑮为节) 0.785; with it 0.97; the
                     # family of tests/drum_family.py 0.81-0.96 (24 members), noise alone 0.57
SEED_FACTOR = 2      # seeds are sought among this many × the planned strokes, strongest first
STEADY_S = 0.03      # a stroke keeps the beat within this of its neighbours' drift, s
DRIFT_ALLOWED = 0.05  # the live 射节 may last this much longer than planned (5 %)
RESCUE_S = 0.05      # a missed planned stroke takes the onset this near where it is heard, s
AGREE_S = 0.006      # a stroke's own attack reading within this of its template fit stands, s
SNAP_S = 0.045       # a matched stroke farther than this from its neighbours' drift is off the line
EXTRA_SURE = 0.75    # an onset on no planned stroke is an extra stroke from this confidence …
EXTRA_AWAY = 0.25    # … and this many beat gaps from every matched stroke
OFF_PLAN = 0.125     # × the beat gap: onsets farther than this from every heard plan stroke are
                     # the model's examples of what is not the drum
FINDER = ("HPSS low-band percussive onsets (librosa), a timbre model learnt from the recording's "
          "strongest strokes on the plan, attack times on the 30–250 Hz envelope")


@dataclass(frozen=True)
class DrumEvidence:
    """The drum finder's result, on the timeline clock (seconds)."""

    alignment: align.Alignment  # live_s, plan_index, live_index …
    confidence: npt.NDArray[np.floating[Any]]     # one per alignment.live_s stroke, in [0, 1]
    threshold: float           # a stroke below this confidence is doubtful
    strength_t_s: npt.NDArray[np.float64]   # timeline time of each onset-strength frame, s
    strength: npt.NDArray[np.floating[Any]]       # the recording's onset strength per frame, 0..1
    finder: str                # how the strokes and confidences were found (one line)
    placement: placement.Placement | None = None    # None: the start was given
    duration_s: float = 0.0    # the recording's length, s


@dataclass(frozen=True)
class DrumModel:
    """The drum as this recording sounds it: a direction in timbre space that parts its strokes
    from the other onsets, and where on it the two lie."""

    axis: npt.NDArray[np.floating[Any]]         # Fisher's discriminant: timbre · axis is the drum score
    score_drum: float        # the seeds' median score
    score_other: float       # the off-plan onsets' 99th percentile score
    level: float             # the seeds' median attack-band peak (sample amplitude)
    seeds: npt.NDArray[np.intp]        # candidate indices of the seeds
    others: npt.NDArray[np.intp]       # candidate indices of the off-plan onsets
    span_s: tuple[float, float]  # (from, to): where the 射节 is heard, recording clock, s


def heard_plan(plan: npt.NDArray[np.float64], al: align.Alignment,
               live_rec_s: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each planned stroke moved to where it is heard on the recording's clock (s): the drift of
    the matched strokes interpolated (held constant beyond the first and last)."""
    p = plan[al.plan_index]
    return plan + np.interp(plan, p, live_rec_s - p)


def fisher_axis(pos: npt.NDArray[np.floating[Any]],
                neg: npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.floating[Any]]:
    """Fisher's linear discriminant between two sets of row vectors: (Σ₊ + Σ₋ + λI)⁻¹ (μ₊ − μ₋),
    with shrinkage λ = a tenth of the mean variance so that few seeds still give a stable axis.
    Written out (numpy, five lines) rather than taking scikit-learn as a dependency for it."""
    mu_neg = neg.mean(axis=0) if len(neg) else np.zeros(pos.shape[1])
    cov = np.cov(pos, rowvar=False) + (np.cov(neg, rowvar=False) if len(neg) > 2 else 0.0)
    cov = np.atleast_2d(cov)
    lam = 0.1 * float(np.trace(cov)) / len(cov) + 1e-9
    return np.linalg.solve(cov + lam * np.eye(len(cov)), pos.mean(axis=0) - mu_neg)


def plan_window(plan: npt.NDArray[np.float64], start_s: float, gap_s: float) -> tuple[float, float]:
    """The span of the recording (its clock, s) where the planned strokes can be heard from
    ``start_s``: two beats either side, and up to ``DRIFT_ALLOWED`` of the 射节 longer."""
    span = float(plan[-1] - plan[0])
    return (float(plan[0] - start_s - 2 * gap_s),
            float(plan[-1] - start_s + 2 * gap_s + DRIFT_ALLOWED * span))


def strongest(c: band.Candidates, plan: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """Indices of the strongest candidates, in time order: ``SEED_FACTOR`` × as many as the
    planned strokes that the recording can hold (a short excerpt holds few)."""
    gap = float(np.median(np.diff(plan))) if len(plan) > 1 else 2.0
    fit = min(len(plan), int(c.duration_s / gap) + 2) if c.duration_s > 0 else len(plan)
    return np.sort(np.argsort(c.strength)[::-1][:SEED_FACTOR * fit])


def steady_matches(drift_s: npt.NDArray[np.float64]) -> int:
    """How many matched strokes keep a drummer's beat: within ``STEADY_S`` of the median drift of
    their neighbours (two either side). Onsets that merely fall near the planned beats stray."""
    if len(drift_s) < 5:
        return len(drift_s)
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(drift_s, 2, mode="edge"), 5)
    return int((np.abs(drift_s - np.median(windows, axis=1)) <= STEADY_S).sum())


def first_guess(c: band.Candidates, plan: npt.NDArray[np.float64],
                starts_s: npt.NDArray[np.float64]) -> float:
    """Of the candidate starts, the one along which the strongest onsets follow the most planned
    strokes steadily (:func:`steady_matches`): where the seeds are sought (a start off by whole
    beats of a periodic grid finds the same seeds). Raises when none follows three."""
    gap = float(np.median(np.diff(plan))) if len(plan) > 1 else 2.0
    times = c.time_s[strongest(c, plan)]
    best, most = None, 2
    for s in starts_s:
        pi, li = align.follow(plan, times, float(s), 0.35 * gap, track_s=align.TRACK * gap)
        n = steady_matches(times[li] - plan[pi])
        if n > most:
            best, most = float(s), n
    if best is None:
        raise UserError("no drum strokes found in the recording: none falls on the planned beats")
    return best


def learn(c: band.Candidates, plan: npt.NDArray[np.float64], start_s: float) -> DrumModel:
    """The model from the strongest candidates that fall on the plan followed from ``start_s``
    (the module's steps 1–2)."""
    gap = float(np.median(np.diff(plan))) if len(plan) > 1 else 2.0
    lo, hi = plan_window(plan, start_s, gap)
    inside = np.flatnonzero((c.time_s >= lo) & (c.time_s <= hi))
    line = comb.best_line(c.time_s[inside], c.strength[inside], plan, start_s)
    if line is None or len(line.cand_index) < 3:
        raise UserError("no drum strokes found in the recording: none falls on the planned beats")
    rank = float(np.mean(c.strength[inside][:, None] < c.strength[seeds_of(line, inside)][None, :]))
    if line.lift < comb.MIN_LIFT or rank < MIN_SEED_RANK:
        raise UserError(f"no drum strokes found in the recording: its low onsets do not keep the "
                        f"plan's beat (they fit it {line.lift:.2f} times as well as a tempo no "
                        f"drummer plays, a drum {comb.MIN_LIFT:g} times or more; those on it are "
                        f"stronger than {100 * rank:.0f} % of its low onsets, a drum's "
                        f"{100 * MIN_SEED_RANK:.0f} % or more)")
    seeds = inside[line.cand_index]
    heard = placement.heard_at(plan, plan, line.plan_index, c.time_s[seeds])
    near = np.abs(nearest(c.time_s, np.sort(heard))[1])      # to the nearest heard stroke, s
    # the other onsets of the seeds' stretch (beyond it the drift is not known: a stroke there
    # may lie farther than OFF_PLAN from where the seeds put it)
    a, b = heard[line.plan_index[0]] - gap, heard[line.plan_index[-1]] + gap
    others = inside[(near[inside] > OFF_PLAN * gap) & (c.time_s[inside] >= a)
                    & (c.time_s[inside] <= b)]
    span = (float(heard[0] - gap) if line.plan_index[0] == 0 else lo,
            float(heard[-1] + gap) if line.plan_index[-1] == len(plan) - 1 else hi)
    model = _model(c, seeds, others, span)
    # a seed unlike the others or far softer (a hall's echo, a 鼙 or a noise's onset that a comb
    # off by a beat put where the plan expects a stroke) is dropped, and the model learnt again
    like = (drum_like(c, model) * loud(c, model))[seeds]
    if (like < THRESHOLD).any() and (like >= THRESHOLD).sum() >= 3:
        model = _model(c, seeds[like >= THRESHOLD], others, model.span_s)
    return model


def seeds_of(line: comb.Line, inside: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """The candidate indices of the onsets on the comb's line."""
    return inside[line.cand_index]


def _model(c: band.Candidates, seeds: npt.NDArray[np.intp], others: npt.NDArray[np.intp],
           span_s: tuple[float, float]) -> DrumModel:
    """Fisher's axis of the seeds against the other onsets, and where on it they lie."""
    x = c.timbre.astype(np.float64)
    axis = fisher_axis(x[seeds], x[others])
    score = x @ axis
    other = float(np.percentile(score[others], 99)) if len(others) else 0.0
    return DrumModel(axis, float(np.median(score[seeds])), other,
                     float(np.median(c.level[seeds])), seeds, others, span_s)


def drum_like(c: band.Candidates, model: DrumModel) -> npt.NDArray[np.floating[Any]]:
    """How drum-like each candidate's timbre is, in [0, 1]: its drum score placed between the
    off-plan onsets' 99th percentile (0) and the seeds' median (1)."""
    score = c.timbre.astype(np.float64) @ model.axis
    span = model.score_drum - model.score_other
    if span <= 0:
        return np.where(score >= model.score_drum, 1.0, 0.0)
    return np.clip((score - model.score_other) / span, 0.0, 1.0)


def loud(c: band.Candidates, model: DrumModel) -> npt.NDArray[np.floating[Any]]:
    """How loud each candidate is against the drum's typical stroke, in [0, 1]: 1 at the seeds'
    median level or above, falling by 1/``LEVEL_SPAN_DB`` per dB softer."""
    db = 20.0 * np.log10(np.maximum(c.level, 1e-12) / max(model.level, 1e-12))
    return np.clip(1.0 + db / LEVEL_SPAN_DB, 0.0, 1.0)


@dataclass(frozen=True)
class Found:
    """The strokes taken from a recording, aligned to the plan."""

    alignment: align.Alignment
    confidence: npt.NDArray[np.floating[Any]]       # per alignment.live_s stroke
    candidates: band.Candidates
    model: DrumModel
    placement: placement.Placement | None = None     # None: the start was given


def on_missed_beats(c: band.Candidates, plan: npt.NDArray[np.float64], al: align.Alignment,
                    pool: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """Candidates of ``pool`` (indices) within ``RESCUE_S`` of a planned stroke the alignment
    missed, as heard (:func:`heard_plan`): a stroke that coincides with a bell's or a stone's
    onset has their timbre, not the drum's, yet falls where the drum is heard."""
    missed = np.setdiff1d(np.arange(len(plan)), al.plan_index)
    if len(al.plan_index) < 2 or not len(missed) or not len(pool):
        return np.zeros(0, dtype=np.intp)
    heard = heard_plan(plan, al, al.live_s[al.live_index] - al.shift_s)[missed]
    pool = pool[np.argsort(c.time_s[pool], kind="stable")]
    k, off = nearest(heard, c.time_s[pool])
    return np.unique(pool[k[np.abs(off) <= RESCUE_S]])


def snap(c: band.Candidates, plan: npt.NDArray[np.float64], kept: npt.NDArray[np.intp],
         al: align.Alignment, pool: npt.NDArray[np.intp], follow_from: float | None,
         estimated: bool) -> tuple[npt.NDArray[np.intp], align.Alignment]:
    """Matched strokes off the drummer's line (farther than ``SNAP_S`` from the running median
    of their neighbours' drift, two either side) traded for the onset of ``pool`` nearest the
    line within ``SNAP_S``, or given up (the stroke missed); the beats followed again. A 鼙 or an
    echo that the follow took where the stroke's onset was weaker, or where no stroke was
    played, is off the line; the stroke is on it."""
    d = al.drift_s
    if len(d) < 5:
        return kept, al
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(d, 2, mode="edge"), 5)
    line = np.median(windows, axis=1)
    off = np.abs(d - line) > SNAP_S
    if not off.any():
        return kept, al
    order = pool[np.argsort(c.time_s[pool], kind="stable")]
    t = c.time_s[order]
    bad = kept[al.live_index[off]]
    new: list[int] = []
    for want in plan[al.plan_index[off]] + line[off] - al.shift_s:      # recording s
        k = int(np.argmin(np.abs(t - want))) if len(t) else -1
        if k >= 0 and abs(t[k] - want) <= SNAP_S and order[k] not in bad:
            new.append(int(order[k]))
    kept = np.union1d(np.setdiff1d(kept, bad), np.array(new, dtype=np.intp))
    kept = kept[np.argsort(c.time_s[kept], kind="stable")]
    return kept, align.align(c.time_s[kept], plan, follow_from, estimated=estimated)


def strokes(c: band.Candidates, plan: npt.NDArray[np.float64], start_s: float | None = None,
            exp: Expected | None = None) -> Found:
    """The drum's strokes among the candidates and their alignment to ``plan`` (step 4). Without
    ``start_s`` the recording is placed first (:func:`yuexuan.check.drum.placement.place`)."""
    exp = Expected() if exp is None else exp
    gap = float(np.median(np.diff(plan))) if len(plan) > 1 else 2.0
    starts = None
    if start_s is None:
        starts = placement.candidate_starts(c.time_s[strongest(c, plan)], plan, gap)
        model = learn(c, plan, first_guess(c, plan, starts))
    else:
        end = start_s + c.duration_s
        if c.duration_s and (end < plan[0] or start_s > plan[-1]):
            raise UserError(f"--audio-start {start_s:g} puts the recording at {start_s:.1f}–"
                            f"{end:.1f} s of the ceremony, but the 射节's strokes fall at "
                            f"{plan[0]:.1f}–{plan[-1]:.1f} s: none is in it")
        model = learn(c, plan, start_s)
    like = drum_like(c, model)
    conf = like * loud(c, model)
    placed = None
    span = model.span_s
    follow_from = start_s
    if starts is not None:
        drumlike = np.flatnonzero(like >= KEEP)
        placed = placement.place(c.time_s[drumlike], conf[drumlike] >= THRESHOLD, plan, exp,
                                 starts, c.duration_s)
        if placed is None:
            raise UserError("no drum strokes found in the recording: none falls on the planned beats")
        best = placed.best
        heard = placement.heard_at(plan, plan, best.plan_index, c.time_s[drumlike][best.live_index])
        span = (float(heard[0] - gap), float(heard[-1] + gap))
        follow_from = best.start_s
    inside = (c.time_s >= span[0]) & (c.time_s <= span[1])
    fitted = None if c.envelope is None else template.fit(
        c.envelope[inside], np.flatnonzero(np.isin(np.flatnonzero(inside), model.seeds)))
    if fitted is not None:              # a stroke read a hump off its template is read again
        own = fitted[np.isin(np.flatnonzero(inside), model.seeds)]
        near = own[np.abs(own) <= AGREE_S]             # the seeds read on their first hump
        if len(near) >= 3:
            fitted = fitted - np.median(near)           # on the strokes' own reading's clock
        fitted[np.abs(fitted) <= AGREE_S] = 0.0        # agreeing: its own reading, sharper
        times = c.time_s.copy()
        times[inside] += fitted
        c = replace(c, time_s=times)
    kept = np.flatnonzero((like >= KEEP) & inside)
    kept = kept[np.argsort(c.time_s[kept], kind="stable")]
    estimated = start_s is None
    al = align.align(c.time_s[kept], plan, follow_from, estimated=estimated)
    more = on_missed_beats(c, plan, al, np.setdiff1d(np.flatnonzero(inside), kept))
    if len(more):
        kept = np.union1d(kept, more)
        kept = kept[np.argsort(c.time_s[kept], kind="stable")]
        al = align.align(c.time_s[kept], plan, follow_from, estimated=estimated)
    kept, al = snap(c, plan, kept, al, np.flatnonzero(inside), follow_from, estimated)
    matched = np.zeros(len(kept), dtype=bool)
    matched[al.live_index] = True
    # an onset on no planned stroke is an extra stroke only when surely the drum and not beside a
    # stroke (a 鼙 or an echo a few hundred ms from one is no stroke of its own)
    away = np.abs(nearest(al.live_s, al.live_s[al.live_index])[1]) > EXTRA_AWAY * gap \
        if len(al.live_index) else np.ones(len(kept), dtype=bool)
    sure = matched | ((conf[kept] >= EXTRA_SURE) & away)
    if not sure.all():                  # drop the doubtful extras; the matches stay as they were
        remap = np.cumsum(sure) - 1
        al = replace(al, live_s=al.live_s[sure], live_index=remap[al.live_index],
                     extra=int((~matched & sure).sum()))
        kept = kept[sure]
    return Found(al, conf[kept], c, model, placed)


def read_for(seconds: float) -> str:
    """How much of a recording was read, as a judge reads a clock: 1:35, 2:00:00."""
    whole = int(round(seconds))
    h, rest = divmod(whole, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


#: told the stage (a line, fraction None) or the fraction of the recording read (0…1)
Progress = Callable[[str, "float | None"], None]


def find(path: str | Path, plan: npt.NDArray[np.float64], start_s: float | None = None,
         exp: Expected | None = None, progress: Progress | None = None) -> Found:
    """Scan the recording (:func:`yuexuan.check.drum.band.scan`) and take the drum's strokes;
    ``progress`` hears the stages. Finding no drum, the message says how much was read."""
    if progress is not None:
        progress(f"decoding and finding strokes in {Path(path).name}", None)
    c = band.scan(path, progress=None if progress is None else lambda f: progress("", f))
    read = f" (read {read_for(c.duration_s)} of audio)"
    if len(c.time_s) < 2:
        raise UserError("no drum strokes found in the recording" + read, file=str(path))
    if progress is not None:
        progress("placing the recording in the ceremony and matching the strokes to the plan", None)
    try:
        return strokes(c, np.sort(np.asarray(plan, dtype=np.float64)), start_s, exp)
    except UserError as e:              # name the recording the strokes were sought in
        if e.file is None and "strokes" in e.message:
            raise UserError(e.message + read, file=str(path)) from None
        raise


def evidence(path: str | Path, plan: npt.NDArray[np.float64], start_s: float | None = None,
             exp: Expected | None = None, progress: Progress | None = None) -> DrumEvidence:
    """The finder's result as :class:`DrumEvidence` (timeline clock)."""
    f = find(path, plan, start_s, exp, progress)
    curve = f.candidates.strength_curve
    top = float(curve.max()) if len(curve) and curve.max() > 0 else 1.0
    return DrumEvidence(f.alignment, f.confidence, THRESHOLD,
                        f.candidates.strength_t_s + f.alignment.shift_s,
                        np.clip(curve / top, 0.0, 1.0), FINDER, f.placement,
                        f.candidates.duration_s)

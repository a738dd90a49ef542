"""Drum strokes from a recording (WAV or FLAC), aligned to the planned 射节 beats.

For ``yuexuan check --beats-from AUDIO``: live drummers drift from the plan, so the round-3 beat
test can use the strokes actually played. numpy/scipy only (librosa is a test dependency).

Detection: the rise of log energy in four bands (4 ms frames) over the loudest of the previous
100 ms, peak-picked, then each onset refined on the waveform to where its attack passes 20 % of
its rise. Alignment: the planned beats are followed in order, each stroke predicted from the
last matches, so a drift of several beats is tracked; the drift is live − plan per matched beat
and the tempo ratio the slope of ``plan ≈ a + b · live`` (seconds).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import ndimage, signal

from yuexuan.errors import UserError

HOP_S = 0.004            # novelty frame hop, seconds
MIN_GAP_S = 0.1          # two strokes closer than this are one, seconds
LOOKBACK = 25            # frames (100 ms) a rise is measured against: their maximum
BANDS_HZ = ((30.0, 150.0), (150.0, 600.0), (600.0, 2500.0), (2500.0, 8000.0))


def read_audio(path: str | Path) -> tuple[np.ndarray, int]:
    """Mono float64 samples and the sample rate (Hz) of a recording at its own rate (any format
    :mod:`yuexuan.check.drum.recording` decodes: WAV, FLAC, MP3, MP4/MOV with AAC)."""
    from yuexuan.check.drum import recording

    sr = recording.native_rate(path)
    return recording.read_recording(path, sr).astype(np.float64), sr


def novelty(x: np.ndarray, sr: int, hop_s: float = HOP_S) -> np.ndarray:
    """Summed rise of log band energy over the loudest of the previous ``LOOKBACK`` frames
    (half-wave rectified), one value per hop: ``nov[i]`` is the rise into frame i+1. Taking the
    maximum of the frames before keeps the flicker of a decaying stroke from counting."""
    hop = max(1, int(round(hop_s * sr)))
    n = len(x) // hop
    if n < 2:
        return np.zeros(max(n, 0))
    total = np.zeros(n - 1)
    for lo, hi in BANDS_HZ:
        hi = min(hi, 0.45 * sr)
        if lo >= hi:
            continue
        sos = signal.butter(2, (lo, hi), btype="bandpass", fs=sr, output="sos")
        y = signal.sosfilt(sos, x)
        e = np.square(y[:n * hop]).reshape(n, hop).sum(axis=1)
        peak = e.max()
        if peak <= 0:
            continue
        le = np.log1p(1000.0 * e / peak)
        before = ndimage.maximum_filter1d(le, LOOKBACK, origin=(LOOKBACK - 1) // 2)[:-1]
        total += np.maximum(le[1:] - before, 0.0)
    return total


def _refine(x: np.ndarray, sr: int, t: float) -> float:
    """Move an onset estimate (s) to where the attack first passes 20 % of its rise."""
    env = np.abs(x)
    i0 = max(0, int((t - 0.03) * sr))
    i1 = min(len(x), int((t + 0.05) * sr))
    if i1 - i0 < 4:
        return t
    pre0 = max(0, i0 - int(0.02 * sr))
    before = float(np.median(env[pre0:i0 + 1])) if i0 > pre0 else 0.0
    seg = env[i0:i1]
    # smooth over 1 ms with a running max, so one zero-crossing does not look like silence
    w = max(1, int(0.001 * sr))
    smooth = np.maximum.accumulate(seg) if w == 1 else \
        np.lib.stride_tricks.sliding_window_view(np.pad(seg, (w - 1, 0)), w).max(axis=1)
    top = float(smooth.max())
    if top <= before:
        return t
    above = np.flatnonzero(smooth >= before + 0.2 * (top - before))
    return (i0 + int(above[0])) / sr


def detect_onsets(x: np.ndarray, sr: int, threshold: float = 0.15,
                  min_gap_s: float = MIN_GAP_S) -> np.ndarray:
    """Onset times (s from the first sample) of the strokes in mono samples ``x``.

    A stroke is a local maximum of :func:`novelty` within ±``min_gap_s``/2 that rises above
    ``threshold`` of the way from the median to the largest novelty value.
    """
    x = np.asarray(x, dtype=np.float64)
    nov = novelty(x, sr)
    if nov.size == 0 or nov.max() <= 0:
        return np.zeros(0)
    hop = max(1, int(round(HOP_S * sr)))
    floor = float(np.median(nov))
    level = floor + threshold * (float(nov.max()) - floor)
    half = max(1, int(round(min_gap_s / 2 / (hop / sr))))
    local_max = signal.argrelmax(np.pad(nov, half), order=half, mode="clip")[0] - half
    # argrelmax needs strict peaks; plateaus are rare in a rectified log-energy difference
    peaks = local_max[(local_max >= 0) & (local_max < len(nov))]
    peaks = peaks[nov[peaks] >= level]
    # nov[i] is the rise from frame i to frame i+1, i.e. an attack inside frame i+1
    times = (peaks + 1) * hop / sr
    refined = np.array([_refine(x, sr, t) for t in times])
    if refined.size > 1:     # keep the gap after refinement
        keep = np.concatenate(([True], np.diff(refined) >= min_gap_s))
        refined = refined[keep]
    return refined


@dataclass(frozen=True)
class Alignment:
    """Live strokes mapped onto the timeline clock, matched to the planned beats."""

    live_s: np.ndarray        # every detected stroke, timeline seconds
    shift_s: float            # timeline time of the recording's first sample, seconds
    rate: float               # b in plan ≈ a + b·live: planned seconds per live second
    plan_index: np.ndarray    # matched planned beats (indices into the plan)
    live_index: np.ndarray    # their matched live strokes (indices into live_s)
    drift_s: np.ndarray       # live − plan for each matched pair, seconds
    missed: int               # planned beats with no live stroke
    extra: int                # live strokes matching no planned beat
    anchored: bool            # True when the shift was given, not estimated

    def report(self) -> dict:
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


def follow(plan: np.ndarray, live: np.ndarray, shift_s: float, window_s: float,
           fit_last: int = 8):
    """Walk the planned beats in order, predicting each one's live stroke from a line fitted to
    the last ``fit_last`` matches (so a drift of several beats is followed), and take the
    nearest unused stroke within ``window_s`` of the prediction. Returns (plan idx, live idx)."""
    pi, li = [], []
    used = np.zeros(len(live), dtype=bool)
    for i, p in enumerate(plan):
        if len(pi) >= 2:
            lp, ll = plan[pi[-fit_last:]], live[li[-fit_last:]]
            b, a = np.polyfit(lp, ll, 1) if np.ptp(lp) > 0 else (1.0, ll[-1] - lp[-1])
            pred = a + b * p
        elif pi:
            pred = live[li[-1]] + (p - plan[pi[-1]])
        else:
            pred = p - shift_s
        j = int(np.searchsorted(live, pred))
        cands = [k for k in (j - 1, j) if 0 <= k < len(live) and not used[k]]
        if not cands:
            continue
        k = min(cands, key=lambda k: abs(live[k] - pred))
        if abs(live[k] - pred) <= window_s:
            used[k] = True
            pi.append(i)
            li.append(k)
    return np.array(pi, dtype=np.intp), np.array(li, dtype=np.intp)


def align(onsets_s: np.ndarray, plan_s: np.ndarray, start_s: float | None = None,
          window_s: float | None = None) -> Alignment:
    """Map detected strokes (recording clock, s) onto the planned beats (timeline clock, s).

    The beats are followed in order (:func:`follow`), so the live drum may drift by several
    beats. With ``start_s`` (the timeline time of the recording's first sample) the clock is
    taken as given and every difference is drift. Without it the start is estimated so that the
    drift is zero at the first matched beat (the drummer starts the 射节 on the plan and drifts
    from there), on a line fitted to the first matches.
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
    anchored = start_s is not None
    if anchored:
        shift = float(start_s)
        pi, li = follow(plan, live, shift, window_s)
    else:
        # Try the first planned beats against the first strokes; keep the start that follows
        # the most beats (a regular grid matches its own shifts locally, not to the end), and
        # among those the steadiest: the smallest jitter, the RMS second
        # difference of live − plan, which a smooth drift does not raise.
        cands = np.unique(np.round((plan[:4, None] - live[None, :16]).ravel(), 3))
        tried = []
        for c in cands[::-1]:                      # latest start first: ties keep it
            m = follow(plan, live, float(c), window_s)
            d = live[m[1]] - plan[m[0]]
            jitter = float(np.sqrt(np.mean(np.diff(d, 2) ** 2))) if len(d) > 2 else np.inf
            tried.append((float(c), m, jitter))
        most = max(len(t[1][0]) for t in tried)
        best = min((t for t in tried if len(t[1][0]) == most), key=lambda t: t[2])
        shift, (pi, li), _ = best
    if not anchored and len(pi):
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


def beats_from_recording(path: str | Path, plan_s: np.ndarray,
                         start_s: float | None = None) -> Alignment:
    """Detect the strokes in ``path`` and align them to ``plan_s`` (see :func:`align`)."""
    x, sr = read_audio(path)
    onsets = detect_onsets(x, sr)
    if not len(onsets):
        raise UserError("no drum strokes found in the recording", file=str(path))
    return align(onsets, plan_s, start_s)

"""Drum strokes from a recording (WAV or FLAC), aligned to the planned 射节 beats.

For ``yuexuan check --beats-from AUDIO``: live drummers drift from the plan, so the round-3 beat
test can use the strokes actually played. numpy/scipy only (librosa is a test dependency).

Detection: band-wise log-energy novelty (4 ms hops) with peak picking, then each onset refined
on the raw signal to the first sample where the attack passes 20 % of its rise.
Alignment: the recording's clock is mapped onto the timeline by matching strokes to planned
beats and fitting ``plan ≈ a + b · live`` (seconds); the drift is live − plan per matched beat.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import signal

from yuexuan.errors import UserError

HOP_S = 0.004            # novelty frame hop, seconds
MIN_GAP_S = 0.05         # two strokes closer than this are one, seconds
BANDS_HZ = ((30.0, 150.0), (150.0, 600.0), (600.0, 2500.0), (2500.0, 8000.0))


def read_audio(path: str | Path) -> tuple[np.ndarray, int]:
    """Mono float64 samples and the sample rate (Hz) of a WAV or FLAC file."""
    import soundfile

    path = Path(path)
    if not path.exists():
        raise UserError("no such file", file=str(path))
    try:
        x, sr = soundfile.read(str(path), dtype="float64", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError if hasattr(soundfile, "LibsndfileError")
            else RuntimeError) as exc:
        raise UserError(f"cannot read audio (expected WAV or FLAC): {exc}", file=str(path)) \
            from None
    if x.shape[0] == 0:
        raise UserError("the recording is empty", file=str(path))
    return x.mean(axis=1), int(sr)


def novelty(x: np.ndarray, sr: int, hop_s: float = HOP_S) -> np.ndarray:
    """Summed half-wave-rectified rise of log band energy, one value per hop (frame i ends at
    sample (i+1)·hop)."""
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
        total += np.maximum(np.diff(le), 0.0)
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


def _match(plan: np.ndarray, live: np.ndarray, window_s: float):
    """One-to-one mutual-nearest matches within ``window_s``: (plan idx, live idx)."""
    if not len(plan) or not len(live):
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    from yuexuan.shiho import nearest_beats

    li, _ = nearest_beats(plan, live)           # nearest live stroke for each planned beat
    pi, _ = nearest_beats(live, plan)           # nearest planned beat for each live stroke
    p = np.arange(len(plan))
    ok = (pi[li] == p) & (np.abs(live[li] - plan) <= window_s)
    return p[ok], li[ok]


def align(onsets_s: np.ndarray, plan_s: np.ndarray, start_s: float | None = None,
          window_s: float | None = None) -> Alignment:
    """Map detected strokes (recording clock, s) onto the planned beats (timeline clock, s).

    With ``start_s`` (the timeline time of the recording's first sample) the clock is taken as
    given and every difference is drift. Without it the shift is estimated: the best of all
    stroke-to-beat shifts (most strokes within ``window_s`` of a beat), then refined by fitting
    ``plan ≈ a + b·live`` over the matches; the drift is measured from the first matched
    stroke (the drummer starts the 射节 on the plan, and drifts from there).
    """
    live = np.sort(np.asarray(onsets_s, dtype=np.float64))
    plan = np.sort(np.asarray(plan_s, dtype=np.float64))
    if not len(plan):
        raise UserError("the timeline has no 射节 beats to align the recording to")
    if not len(live):
        raise UserError("no drum strokes found in the recording")
    if window_s is None:
        gaps = np.diff(plan)
        window_s = float(min(0.15, 0.4 * np.median(gaps))) if len(gaps) else 0.15
    if start_s is None:
        cand = (plan[:, None] - live[None, :min(len(live), 32)]).ravel()
        best, best_key = 0.0, None
        for s in cand:
            pi, li = _match(plan, live + s, window_s)
            if not len(pi):
                continue
            key = (len(pi), -float(np.abs(live[li] + s - plan[pi]).sum()))
            if best_key is None or key > best_key:
                best, best_key = float(s), key
        a, b = best, 1.0
        for _ in range(8):
            pi, li = _match(plan, a + b * live, window_s)
            if len(pi) >= 3 and np.ptp(live[li]) > 0:
                b, a = np.polyfit(live[li], plan[pi], 1)
            elif len(pi):
                a = float(np.mean(plan[pi] - live[li]))
        pi, li = _match(plan, a + b * live, window_s)
        # zero drift at the first matched stroke, on the fitted line
        shift = float(a + (b - 1.0) * live[li[0]]) if len(li) else a
        anchored = False
    else:
        shift, b, anchored = float(start_s), 1.0, True
        pi, li = _match(plan, live + shift, window_s)
        if len(pi) >= 3 and np.ptp(live[li]) > 0:
            b = float(np.polyfit(live[li], plan[pi], 1)[0])
    live_tl = live + shift
    # match once more on the plain shift, with the window widened to follow the drift
    a_fit = shift if len(li) < 1 else float(np.mean(plan[pi] - b * live[li]))
    pi, li = _match(plan, a_fit + b * live, window_s)
    drift = live_tl[li] - plan[pi]
    return Alignment(live_tl, shift, float(b), pi, li, drift, len(plan) - len(pi),
                     len(live) - len(li), anchored)


def beats_from_recording(path: str | Path, plan_s: np.ndarray,
                         start_s: float | None = None) -> Alignment:
    """Detect the strokes in ``path`` and align them to ``plan_s`` (see :func:`align`)."""
    x, sr = read_audio(path)
    onsets = detect_onsets(x, sr)
    if not len(onsets):
        raise UserError("no drum strokes found in the recording", file=str(path))
    return align(onsets, plan_s, start_s)

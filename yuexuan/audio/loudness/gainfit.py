"""The gain that brings a limited mix to its loudness target in fewer passes.

The limiter (:mod:`yuexuan.audio.engine.mix`) pulls down what a gain pushes over the true-peak ceiling,
so the loudness a gain gives is less than the unlimited mix's: with the sources at their physical
powers (:mod:`yuexuan.audio.synthesis.source_level`), the 建鼓 strokes of 貍首 make the whole
ceremony lose ~0.9 LU at the first gain, and raising the gain by the
shortfall regained only 0.4 LU a pass (three passes
ended 0.4 LU short). A model predicts it: in each 100 ms hop, every 10 ms chunk whose sample peak
the gain puts over the ceiling is held to it, and the hop's K-weighted energy scaled by the share
of its (unweighted) energy left. It sets the first gain and the slope of the first correction;
later corrections follow the measured passes (secant).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from yuexuan.audio.loudness import bs1770

SEARCH_DB = 12.0          # the first gain is sought up to this far over the unlimited one
MIN_SLOPE = 0.05          # LU per dB of gain: never assume the loudness moves less than this


CHUNKS = 10              # chunks a hop


def chunk_stats(mix: npt.NDArray[np.float32], hop: int) -> npt.NDArray[np.float64]:
    """(hops, 2, CHUNKS): the energy (sum of squares over channels) and the sample peak of each
    tenth of each whole 100 ms hop of ``mix`` (n, channels)."""
    whole = len(mix) // hop
    x = mix[:whole * hop]
    if whole and hop % CHUNKS == 0 and x.flags.c_contiguous:     # equal chunks: a row each
        rows = x.reshape(whole * CHUNKS, -1)
        energy = np.einsum("ij,ij->i", rows, rows)
        peak = np.maximum(rows.max(axis=1), -rows.min(axis=1))
        return np.stack([energy, peak]).astype(np.float64).reshape(2, whole, CHUNKS).transpose(1, 0, 2)
    edges = (np.arange(whole * CHUNKS) * hop) // CHUNKS
    energy = np.add.reduceat(np.einsum("ij,ij->i", x, x), edges) if whole else np.zeros(0)
    peak = np.maximum.reduceat(bs1770.abs_max_channels(x), edges) if whole else np.zeros(0)
    return np.stack([energy, peak]).astype(np.float64).reshape(2, whole, CHUNKS).transpose(1, 0, 2)


Ceiling = float | npt.NDArray[np.float64]     # linear: one, or each chunk's (hops, CHUNKS)


def predicted_lufs(hops: npt.NDArray[np.float64], stats: npt.NDArray[np.float64], gain_db: float,
                   ceiling: Ceiling) -> float:
    """Integrated loudness of the mix at ``gain_db`` if each chunk (:func:`chunk_stats`) whose
    sample peak the gain puts over ``ceiling`` (linear; or each chunk's) were held to it."""
    g = 10 ** (gain_db / 20)
    energy, peak = stats[:, 0], stats[:, 1]
    scale = np.minimum(1.0, ceiling / np.maximum(peak * g, 1e-30)) ** 2
    total = energy.sum(axis=1)
    kept = np.where(total > 0, (energy * scale).sum(axis=1) / np.maximum(total, 1e-300), 1.0)
    return bs1770.gated_loudness(hops * g * g * kept)


def first_gain_db(hops: npt.NDArray[np.float64], peaks: npt.NDArray[np.float64], target_lufs: float,
                  ceiling: Ceiling) -> float:
    """The gain (dB) the model says reaches ``target_lufs``: the unlimited mix's gain when the
    limiter would not act, else found by bisection (at most :data:`SEARCH_DB` above it)."""
    unlimited = bs1770.gated_loudness(hops)
    if not math.isfinite(unlimited):
        return 0.0
    lo = target_lufs - unlimited
    if predicted_lufs(hops, peaks, lo, ceiling) >= target_lufs - 0.01:
        return lo
    hi = lo + SEARCH_DB
    if predicted_lufs(hops, peaks, hi, ceiling) < target_lufs:
        return hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if predicted_lufs(hops, peaks, mid, ceiling) < target_lufs:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def next_gain_db(passes: list[tuple[float, float]], target_lufs: float, hops: npt.NDArray[np.float64],
                 peaks: npt.NDArray[np.float64], ceiling: Ceiling) -> float:
    """The next gain (dB) after the measured ``passes`` [(gain dB, loudness LUFS)]: a secant
    through the last two, or from one by the model's slope there."""
    g1, l1 = passes[-1]
    if len(passes) >= 2 and passes[-2][0] != g1:
        g0, l0 = passes[-2]
        slope = (l1 - l0) / (g1 - g0)
    else:
        slope = predicted_lufs(hops, peaks, g1 + 0.5, ceiling) - predicted_lufs(hops, peaks, g1, ceiling)
        slope /= 0.5
    slope = min(1.0, max(MIN_SLOPE, slope)) if math.isfinite(slope) else 1.0
    return g1 + (target_lufs - l1) / slope

"""EBU R 128 meters from BS.1770's 100 ms hop energies (:class:`bs1770.LoudnessMeter`'s ``hops``):
momentary loudness (400 ms), short-term loudness (3 s), both every 100 ms, and the loudness range
(EBU Tech 3342). ffmpeg's ``ebur128`` filter reads the same (tests/test_guide_mix.py checks it).

A window of a meter ends at each hop: value ``i`` covers hops ``i − n + 1`` to ``i`` (the hops
before the first count as silence, as a meter started at the signal's start reads them).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

MOMENTARY_S = 0.4
SHORT_TERM_S = 3.0
HOP_S = 0.1
LRA_ABSOLUTE_GATE_LUFS = -70.0
LRA_RELATIVE_GATE_LU = -20.0
LRA_PERCENTILES = (10.0, 95.0)


def windowed_mean(hops: npt.ArrayLike, window_s: float) -> npt.NDArray[np.float64]:
    """The mean of ``hops`` (energies of 100 ms hops) over the ``window_s`` ending at each hop."""
    e = np.asarray(hops, dtype=np.float64)
    n = int(round(window_s / HOP_S))
    c = np.concatenate([np.zeros(n), np.cumsum(e)])
    return np.maximum((c[n:] - c[:-n]) / n, 0.0)


def lufs(energy: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """BS.1770 loudness of K-weighted mean squares (summed over channels), LUFS (−inf for 0)."""
    with np.errstate(divide="ignore"):
        return -0.691 + 10 * np.log10(np.asarray(energy, dtype=np.float64))


def momentary(hops: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Momentary loudness (400 ms) ending at each hop, LUFS."""
    return lufs(windowed_mean(hops, MOMENTARY_S))


def short_term(hops: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Short-term loudness (3 s) ending at each hop, LUFS."""
    return lufs(windowed_mean(hops, SHORT_TERM_S))


def loudness_range(hops: npt.ArrayLike) -> float:
    """Loudness range (EBU Tech 3342), LU: the short-term values (from the first whole 3 s
    window on, every 100 ms) above −70 LUFS and above 20 LU under their power mean; the spread
    between their 10th and 95th percentiles. 0 when none pass."""
    n = int(round(SHORT_TERM_S / HOP_S))
    st = short_term(hops)[n - 1:]
    st = st[st > LRA_ABSOLUTE_GATE_LUFS]
    if not len(st):
        return 0.0
    gate = 10 * math.log10(float(np.mean(10 ** (st / 10)))) + LRA_RELATIVE_GATE_LU
    st = st[st > gate]
    if not len(st):
        return 0.0
    lo, hi = np.percentile(st, LRA_PERCENTILES)
    return float(hi - lo)

"""How loud a note is: the source's sound power, its velocity, over waveforms of one loudness.

A cached waveform (:mod:`yuexuan.audio.engine.notecache`) is synthesised at its velocity bucket and
normalised by :func:`fast_max_rms` to a fast-weighted maximum RMS of 1, so that notes of every
bucket start equally loud; :func:`velocity_gain` then sets the note's own level. A louder
velocity is therefore always louder, across the buckets too (the timbre changes with the bucket,
the level only with the velocity). Before, the waveforms were normalised to peak 1 and the gain
was velocity_gain(v) / velocity_gain(bucket): a note of velocity 60 (bucket 40) came out louder
than one of velocity 100 (bucket 112).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.synthesis.synth import velocity_gain
from yuexuan.errors import UserError

#: the window of a sound level meter's F (fast) time weighting, s (IEC 61672-1: τ = 125 ms); peak
#: sound powers of instruments are given over such intervals (Sivian, Dunn & White 1931, 1/8 s)
FAST_S = 0.125
REFERENCE_SPL_DB = 94.0          # amplitude 1 = 1 Pa
SPHERE_1M_DB = 10 * math.log10(4 * math.pi)    # 10.99 dB: Lw − Lp of a point source at 1 m


def fast_max_rms(x: npt.NDArray[np.floating], sample_rate: int) -> float:
    """The largest RMS of ``x`` (flattened) over any window of :data:`FAST_S` (the whole of a
    shorter ``x``, as if padded with silence to the window)."""
    w = max(1, int(round(FAST_S * sample_rate)))
    x = np.ravel(x)
    n = len(x)
    if n <= w:
        return float(np.sqrt(np.einsum("i,i->", x, x, dtype=np.float64) / w)) if n else 0.0
    h = _block(w)
    if h < MIN_BLOCK:
        return float(np.sqrt(_best_window(x, w, 0, n - w) / w))
    # Hand-written (no library finds a running maximum this way): the energy of each block of h
    # samples (one pass, no float64 copy); a window starting on a block boundary is k whole blocks,
    # and any window starting inside block j lies within blocks j..j+k. Only the starts whose
    # block bound beats the best boundary window are searched sample by sample: the attack of a
    # struck note, a stretch of a held one. 20x faster on a ringing bell than a cumulative sum
    # over every sample, the same maximum (to rounding).
    k = w // h
    full = n // h
    energy = np.zeros(full + k + 2)
    blocks = x[:full * h].reshape(full, h)
    energy[:full] = np.einsum("ij,ij->i", blocks, blocks, dtype=np.float64)
    tail = x[full * h:].astype(np.float64)
    energy[full] = float(np.dot(tail, tail))
    c = np.concatenate([[0.0], np.cumsum(energy)])
    j = np.arange((n - w) // h + 1)               # the blocks holding a start (j*h ≤ n − w)
    best = float(np.max(c[j + k] - c[j]))
    cand = np.flatnonzero(c[j + k + 1] - c[j] > best)
    if len(cand):
        # runs of candidate blocks, joined across gaps shorter than a window (their spans overlap)
        cuts = np.flatnonzero(np.diff(cand) > k) + 1
        for run in np.split(cand, cuts):
            lo, hi = int(run[0]) * h, min(n - w, int(run[-1]) * h + h - 1)
            best = max(best, _best_window(x, w, lo, hi))
    return float(np.sqrt(best / w))


MIN_BLOCK = 16       # a window with no divisor this large is searched sample by sample


def _block(w: int) -> int:
    """The largest divisor of ``w`` up to 512 (the block of :func:`fast_max_rms`)."""
    return next(d for d in range(min(512, w), 0, -1) if w % d == 0)


def _best_window(x: npt.NDArray[np.floating], w: int, lo: int, hi: int) -> float:
    """The largest energy of ``x[s:s + w]`` for the starts ``lo ≤ s ≤ hi``."""
    sq = np.square(x[lo:hi + w], dtype=np.float64)
    c = np.concatenate([[0.0], np.cumsum(sq)])
    return float(np.max(c[w:] - c[:-w]))


def level_normalised(x: npt.NDArray[np.float32], sample_rate: int) -> npt.NDArray[np.float32]:
    """``x`` scaled (in place) to a :func:`fast_max_rms` of 1; silence is left as it is."""
    level = fast_max_rms(x, sample_rate)
    if level > 0:
        x *= np.float32(1.0 / level)
    return x


def source_level(name: str, synth: dict[str, Any]) -> float:
    """The amplitude (Pa) at 1 m of instrument ``name``'s note at velocity 127 with a waveform of
    level 1, from its ``[synth]`` ``sound_power_db`` at ``sound_power_velocity``, times its
    optional ``gain_db``."""
    values = []
    for key in ("sound_power_db", "sound_power_velocity", "gain_db"):
        v = synth.get(key, 0.0 if key == "gain_db" else None)
        if v is None:
            raise UserError(f"instruments[{name!r}].synth lacks {key} (its sound power); recompile the "
                            "cue sheet with the current instrument files")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise UserError(f"instruments[{name!r}].synth.{key}: expected a number")
        values.append(float(v))
    lw_db, at_velocity, gain_db = values
    if not 1 <= at_velocity <= 127:
        raise UserError(f"instruments[{name!r}].synth.sound_power_velocity: expected 1..127")
    lp_1m_db = lw_db - SPHERE_1M_DB + gain_db
    return 10 ** ((lp_1m_db - REFERENCE_SPL_DB) / 20) / velocity_gain(int(at_velocity))


__all__ = ["velocity_gain", "fast_max_rms", "level_normalised", "source_level"]

"""The diffuse tail of the ambience: exponentially decaying velvet noise, a different sequence in
each ear, applied at a quarter of the sample rate.

Velvet noise (M. Karjalainen, H. Järveläinen 2007, "Reverberation modeling using velvet noise",
AES 30th International Conference; V. Välimäki et al. 2013, "Noise-like reverberation using
velvet noise") puts one impulse of random sign at a random place in each grid cell of
1/``DENSITY_HZ`` s: at about 2000 impulses a second it sounds as smooth as Gaussian noise, its
peaks are bounded by its envelope (so the tail's level re the direct sound is stated exactly), and
its random places leave no evenly spaced repeats (no flutter).

Speed: the tail holds nothing above ``CUTOFF_HZ`` (scattering surfaces and air lose the highs), so
a note is low-passed and decimated to about ``TAIL_RATE_HZ`` (one FIR pass,
:func:`yuexuan.audio.dsp.decimate_fir`), convolved there with the tail (FFT,
:func:`yuexuan.audio.dsp.fftconvolve_rows`: a sixteenth of the work at the full rate) and
interpolated back with the same FIR. Pure functions of their arguments (the seed included).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.audio import dsp

DENSITY_HZ = 2000.0            # impulses a second in each channel
RISE_S = 0.010                 # the tail fades in over this after it starts (raised cosine)
CUTOFF_HZ = 5000.0             # the tail's band edge
TAIL_RATE_HZ = 12000           # the rate the tail is computed at (at least)
FLOOR_DB = -36.0               # the tail is cut where its envelope has fallen this far
MID_BAND_HZ = (500.0, 2000.0)  # the tail's level is set here (ISO 3382-1: the 500 Hz, 1 kHz octaves)
FIR_TAPS_PER_STEP = 4          # low-pass FIR length / decimation factor (17 taps at 48 kHz)


class Tail(NamedTuple):
    """A stereo tail at ``sample_rate / factor``, from the direct sound's arrival (sample 0)."""

    factor: int                # full-rate samples per tail sample
    ir: npt.NDArray[np.float32]             # (m, 2) float32


def factor(sample_rate: int) -> int:
    return max(1, int(sample_rate) // TAIL_RATE_HZ)


@lru_cache(maxsize=8)
def _fir(sample_rate: int, r: int) -> npt.NDArray[np.floating[Any]]:
    """Low-pass FIR (odd length, unit DC gain) for decimating or interpolating by ``r``."""
    if r == 1:
        return np.ones(1, dtype=np.float32)
    cutoff = min(CUTOFF_HZ, 0.45 * sample_rate / r)
    return dsp.firwin(FIR_TAPS_PER_STEP * r + 1, cutoff, sample_rate).astype(np.float32)


class Spec(NamedTuple):
    """What :func:`diffuse_tail` makes a tail of (its arguments)."""

    sample_rate: int
    t60_s: float
    start_s: float
    energy: float
    seed: int


def length_samples(tail: Tail) -> int:
    """Full-rate samples of the tail's response (its FIR's spread included)."""
    return len(tail.ir) * tail.factor + FIR_TAPS_PER_STEP * tail.factor


def spec_length_samples(spec: Spec) -> int:
    """:func:`length_samples` of the tail ``spec`` makes, without making it."""
    r = factor(spec.sample_rate)
    return _ir_samples(spec.sample_rate, spec.t60_s, spec.start_s) * r + FIR_TAPS_PER_STEP * r


def _ir_samples(sample_rate: int, t60_s: float, start_s: float) -> int:
    """Samples (at the tail's rate) of the tail's response: until FLOOR_DB."""
    return int(math.ceil((start_s + t60_s * FLOOR_DB / -60.0) * (sample_rate / factor(sample_rate))))


def diffuse_tail(sample_rate: int, t60_s: float, start_s: float, energy: float, seed: int) -> Tail:
    """The tail: silent before ``start_s``, fading in over RISE_S, then decaying by 60 dB per
    ``t60_s`` until FLOOR_DB; scaled so that a sound within its band (under CUTOFF_HZ) gets a tail
    of ``energy`` times its own energy, both ears together (the direct sound's ``energy`` is its
    two panned channels' sum of squares)."""
    r = factor(sample_rate)
    rate = sample_rate / r
    n = _ir_samples(sample_rate, t60_s, start_s)
    out = np.zeros((n, 2), dtype=np.float32)
    cell = rate / DENSITY_HZ
    t0 = int(round(start_s * rate))
    cells = max(0, int((n - t0) // cell))
    rng = np.random.default_rng(seed)
    rise = max(1, int(RISE_S * rate))
    for ch in range(2):
        at = t0 + (np.arange(cells) * cell + rng.random(cells) * cell).astype(np.int64)
        at = at[at < n]
        k = at - t0
        env = np.power(10.0, -3.0 * k / (t60_s * rate))
        env *= np.where(k < rise, 0.5 - 0.5 * np.cos(np.pi * np.minimum(k, rise) / rise), 1.0)
        sign = np.where(rng.random(len(at)) < 0.5, -1.0, 1.0)
        out[at, ch] = sign * env
    unit = Tail(r, out)
    # Scaled where the ear weighs it, 500–2000 Hz (ISO 3382-1's mid-frequency octaves): a click's
    # tail against the click, both through the same band-pass. Scaled on the whole click, the
    # tail came out 10·log10(rate / 2·CUTOFF_HZ) = 6.8 dB louder than ``energy`` for sound under
    # CUTOFF_HZ, since the click's energy above it, which the tail has not, counted.
    n = 1 + length_samples(unit)
    click = np.zeros(n)
    click[0] = 1.0
    sos = dsp.butter_bandpass_sos(4, MID_BAND_HZ[0], MID_BAND_HZ[1], sample_rate)
    wet = apply(unit, click[:1].astype(np.float32), sample_rate, n).astype(np.float64)
    measured = float(np.sum(dsp.sosfilt(sos, wet, axis=0) ** 2))
    dry = float(np.sum(dsp.sosfilt(sos, click) ** 2))
    scale = math.sqrt(energy * dry / measured) if measured > 0 else 1.0
    return Tail(r, out * np.float32(scale))


def apply(tail: Tail, mono: npt.NDArray[np.float32], sample_rate: int, n: int) -> npt.NDArray[np.float32]:
    """(n, 2) float32: ``mono`` through the tail, aligned so that its sample 0 is the direct
    sound's arrival (cut or zero-padded to ``n`` samples)."""
    r = tail.factor
    h = _fir(int(sample_rate), r)
    low = dsp.decimate_fir(h, mono, r)                          # delayed by (len(h) − 1)/2
    wet = dsp.fftconvolve_rows(low[:, None], tail.ir)
    up = dsp.interpolate_fir(h * r, wet, r)                  # delayed as much again
    lag = len(h) - 1
    got = up[lag:lag + n]
    if len(got) == n:
        return got
    out = np.zeros((n, 2), dtype=np.float32)
    out[:len(got)] = got
    return out

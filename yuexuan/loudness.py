"""ITU-R BS.1770-4 loudness, streaming: integrated loudness (LUFS, K-weighted, gated) and true
peak (dBTP, 4× oversampled), fed block by block so that a whole ceremony is never in memory.

Silent stretches cost nothing: a block of zeros after the filters have settled is counted as
silence without filtering. True peak skips every chunk whose bound (sample peak × the largest
absolute tap sum of an interpolation phase) cannot beat the peak already found, so the result is
exact but only loud chunks are oversampled.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import signal

ABSOLUTE_GATE_LUFS = -70.0
RELATIVE_GATE_LU = -10.0
BLOCK_S = 0.4
HOP_S = 0.1
OVERSAMPLE = 4
TAPS_PER_PHASE = 16


def k_weighting_sos(sample_rate: int) -> np.ndarray:
    """The two K-weighting biquads (high shelf, then the RLB high-pass) as second-order sections.

    Derived from the analog prototypes of BS.1770 (as in the standard's 48 kHz coefficients) so
    that any sample rate works.
    """
    fs = float(sample_rate)
    # stage 1: high shelf, +4 dB above ~1.7 kHz
    g, q, fc = 3.999843853973347, 0.7071752369554196, 1681.974450955533
    k = math.tan(math.pi * fc / fs)
    vh = 10 ** (g / 20)
    vb = vh ** 0.4996667741545416
    a0 = 1 + k / q + k * k
    b1 = [(vh + vb * k / q + k * k) / a0, 2 * (k * k - vh) / a0, (vh - vb * k / q + k * k) / a0]
    a1 = [1.0, 2 * (k * k - 1) / a0, (1 - k / q + k * k) / a0]
    # stage 2: high-pass at ~38 Hz
    q2, fc2 = 0.5003270373238773, 38.13547087602444
    k = math.tan(math.pi * fc2 / fs)
    a0 = 1 + k / q2 + k * k
    b2 = [1.0, -2.0, 1.0]
    a2 = [1.0, 2 * (k * k - 1) / a0, (1 - k / q2 + k * k) / a0]
    return np.array([b1 + a1, b2 + a2], dtype=np.float64)


def interpolation_filter(factor: int = OVERSAMPLE, taps_per_phase: int = TAPS_PER_PHASE) -> np.ndarray:
    """Low-pass FIR for ``factor``× oversampling (gain ``factor``; passband to 0.9 × Nyquist)."""
    n = factor * taps_per_phase
    return (signal.firwin(n, 0.9 / factor, window=("kaiser", 8.0)) * factor).astype(np.float64)


class LoudnessMeter:
    """Integrated loudness of a stereo (or mono) stream, BS.1770-4. Feed (n, channels) blocks."""

    def __init__(self, sample_rate: int, channels: int = 2):
        self.sample_rate = sample_rate
        self.channels = channels
        self._sos = k_weighting_sos(sample_rate)
        self._zi = np.zeros((self._sos.shape[0], channels, 2))
        self._hop = int(round(HOP_S * sample_rate))
        self._rest = np.zeros((0, channels))
        self._hops: list = []          # mean square (summed over channels) of each 100 ms hop

    def _settled(self) -> bool:
        return float(np.max(np.abs(self._zi))) < 1e-12

    def feed(self, block: np.ndarray) -> None:
        block = np.asarray(block, dtype=np.float64).reshape(len(block), -1)
        if len(self._rest) == 0 and len(block) % self._hop == 0 and self._settled() \
                and not block.any():
            self._hops.extend([0.0] * (len(block) // self._hop))
            return
        y, self._zi = signal.sosfilt(self._sos, block, axis=0, zi=self._zi)
        if len(self._rest):
            y = np.concatenate([self._rest, y])
        n = len(y) // self._hop * self._hop
        if n:
            sq = np.einsum("ij,ij->i", y[:n], y[:n]).reshape(-1, self._hop).mean(axis=1)
            self._hops.extend(sq.tolist())
        self._rest = y[n:]

    def integrated(self) -> float:
        """Gated integrated loudness, LUFS (−inf for silence)."""
        hops = np.asarray(self._hops)
        per = int(round(BLOCK_S / HOP_S))
        if len(hops) < per:
            return float("-inf")
        z = np.convolve(hops, np.ones(per) / per, mode="valid")      # 400 ms blocks, 75 % overlap
        with np.errstate(divide="ignore"):
            lk = -0.691 + 10 * np.log10(z)
        keep = lk > ABSOLUTE_GATE_LUFS
        if not keep.any():
            return float("-inf")
        rel = -0.691 + 10 * math.log10(z[keep].mean()) + RELATIVE_GATE_LU
        keep &= lk > rel
        if not keep.any():
            return float("-inf")
        return -0.691 + 10 * math.log10(z[keep].mean())


class TruePeakMeter:
    """Largest absolute value of the 4× oversampled signal (linear); :meth:`dbtp` in dBTP."""

    CHUNK = 4096

    def __init__(self, channels: int = 2):
        self._h = interpolation_filter()
        self._bound = float(np.abs(self._h.reshape(-1, OVERSAMPLE)).sum(axis=0).max())
        self._ctx = TAPS_PER_PHASE
        self._prev = np.zeros((self._ctx, channels))
        self.peak = 0.0

    def feed(self, block: np.ndarray) -> None:
        block = np.asarray(block, dtype=np.float64).reshape(len(block), -1)
        x = np.concatenate([self._prev, block])
        self._prev = x[-self._ctx:]
        for a in range(self._ctx, len(x), self.CHUNK):
            seg = x[a - self._ctx:min(len(x), a + self.CHUNK)]
            sp = float(np.max(np.abs(seg))) if len(seg) else 0.0
            self.peak = max(self.peak, float(np.max(np.abs(x[a:a + self.CHUNK]))) if sp else 0.0)
            if sp * self._bound <= self.peak:
                continue
            up = signal.upfirdn(self._h, seg, up=OVERSAMPLE, axis=0)
            self.peak = max(self.peak, float(np.max(np.abs(up))))

    def dbtp(self) -> float:
        return 20 * math.log10(self.peak) if self.peak > 0 else float("-inf")


def true_peak_envelope(x: np.ndarray) -> np.ndarray:
    """Per input sample, the largest |value| among its oversampled neighbours, over channels.

    ``x`` is (n, channels); the result has n values and is ≥ the sample magnitudes.
    """
    h = interpolation_filter()
    up = np.abs(signal.upfirdn(h, x, up=OVERSAMPLE, axis=0))
    delay = (len(h) - 1) // 2
    up = up[delay:delay + OVERSAMPLE * len(x)]
    env = up.reshape(len(x), OVERSAMPLE, -1).max(axis=(1, 2))
    return np.maximum(env, np.abs(x).max(axis=1))


def integrated_loudness(x: np.ndarray, sample_rate: int) -> float:
    """Integrated loudness of a whole (n, channels) array, LUFS."""
    m = LoudnessMeter(sample_rate, x.shape[1] if x.ndim == 2 else 1)
    m.feed(x)
    return m.integrated()


def true_peak_dbtp(x: np.ndarray) -> float:
    """True peak of a whole (n, channels) array, dBTP."""
    m = TruePeakMeter(x.shape[1] if x.ndim == 2 else 1)
    m.feed(x)
    return m.dbtp()

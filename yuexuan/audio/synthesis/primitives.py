"""Building blocks of the synthesis (:mod:`yuexuan.audio.synthesis.synth`, :mod:`yuexuan.audio.voice.takes`):
noise, filters, envelopes, wavetables: float32 arrays (normalise scales its argument in place)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from yuexuan.audio.dsp import lfilter

#: a mode is computed until it has decayed by this many time constants (−50 dB).
DECAY_SPAN = 5.75
RELEASE_S = 0.12          # release of sustained notes (pipe, voice), s


def noise(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    return rng.standard_normal(n).astype(np.float32)


def onepole_lowpass(x: npt.NDArray[np.float32], cutoff_hz: float,
                    sample_rate: int) -> npt.NDArray[np.float32]:
    a = math.exp(-2 * math.pi * min(cutoff_hz, 0.49 * sample_rate) / sample_rate)
    return lfilter([1 - a], [1, -a], x).astype(np.float32)


def burst(rng: np.random.Generator, n_total: int, tau_s: float, sample_rate: int,
          cutoff_hz: float | None = None,
          highpass: bool = False) -> npt.NDArray[np.float32]:
    """Exponentially decaying noise burst (a strike), length ≤ ``n_total``."""
    n = min(n_total, int(DECAY_SPAN * tau_s * sample_rate) + 1)
    x = noise(rng, n)
    if cutoff_hz:
        low = onepole_lowpass(x, cutoff_hz, sample_rate)
        x = x - low if highpass else low
    env = np.exp(-np.arange(n, dtype=np.float32) / np.float32(tau_s * sample_rate))
    return x * env


def normalise(x: npt.NDArray[np.float32], level: float) -> npt.NDArray[np.float32]:
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    if peak > 0:
        x *= np.float32(level / peak)
    return x


def wavetable(harm_amps: Iterable[float], size: int = 4096) -> npt.NDArray[np.float32]:
    """One period from harmonic amplitudes (sine phase), with a wrap-around sample."""
    t = np.arange(size) / size
    table = np.zeros(size + 1)
    for h, a in enumerate(harm_amps, start=1):
        if a:
            table[:size] += a * np.sin(2 * np.pi * h * t)
    table[size] = table[0]
    return table.astype(np.float32)


def sustained(table: npt.NDArray[np.float32], hz: float, n: int, sample_rate: int, vib_cents: float,
              vib_hz: float, vib_phase: float) -> npt.NDArray[np.float32]:
    """Read a wavetable at ``hz`` with vibrato (depth ``vib_cents``, rate ``vib_hz``)."""
    t = np.arange(n, dtype=np.float64) / sample_rate
    d = vib_cents * math.log(2) / 1200.0
    cycles = hz * t
    if d and vib_hz:
        cycles += hz * d * (np.cos(vib_phase) - np.cos(2 * np.pi * vib_hz * t + vib_phase)) \
            / (2 * np.pi * vib_hz)
    size = len(table) - 1
    pos = (cycles % 1.0) * size
    i = pos.astype(np.int64)
    frac = (pos - i).astype(np.float32)
    return table[i] + (table[i + 1] - table[i]) * frac


def envelope(n: int, n_on: int, attack_s: float, sample_rate: int) -> npt.NDArray[np.float32]:
    env = np.ones(n, dtype=np.float32)
    na = max(1, min(n_on, int(attack_s * sample_rate)))
    env[:na] = np.linspace(0, 1, na, dtype=np.float32) ** 2
    nr = n - n_on
    if nr > 0:
        env[n_on:] = np.linspace(1, 0, nr, dtype=np.float32) ** 2
    return env

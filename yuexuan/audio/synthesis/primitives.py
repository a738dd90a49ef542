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
RELEASE_S = 0.2           # release of a pipe's note, s (the voice has its own: voice/articulation.py)
#: a pipe's release falls 60 dB in this long, s: FluidR3_GM's Pan Flute (bamboo panpipes), T60 of a
#: held note from its end 0.12 s (bench/bench_instruments.py, key 65, 2026-12-03); over RELEASE_S
#: that is −100 dB, the last RELEASE_TAPER_S tapered to zero
RELEASE_T60_S = 0.12
RELEASE_TAPER_S = 0.01


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
    return without_dc(x * env, env)


def without_dc(x: npt.NDArray[np.floating], shape: npt.NDArray[np.floating]) -> npt.NDArray[np.floating]:
    """``x`` less the multiple of ``shape`` (its envelope, say) that leaves it summing to zero: a
    sound's DC taken out along its own envelope, in place (nothing moves its start)."""
    total = float(np.sum(shape, dtype=np.float64))
    if total > 0:
        x -= (float(np.sum(x, dtype=np.float64)) / total * shape).astype(x.dtype)
    return x


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


def envelope(n: int, n_on: int, attack_s: float, sample_rate: int,
             release_t60_s: float = RELEASE_T60_S) -> npt.NDArray[np.float32]:
    """A held note's envelope: a quadratic rise over ``attack_s`` (10 → 90 % in 0.63 of it), held
    to sample ``n_on``, then an exponential release falling 60 dB per ``release_t60_s`` to the end
    (``n``), its last RELEASE_TAPER_S tapered to zero (a smooth end, far below −60 dB)."""
    env = np.ones(n, dtype=np.float32)
    na = max(1, min(n_on, int(attack_s * sample_rate)))
    env[:na] = np.linspace(0, 1, na, dtype=np.float32) ** 2
    nr = n - n_on
    if nr > 0:
        t = np.arange(nr, dtype=np.float64) / sample_rate
        rel = np.exp(-t * math.log(1000.0) / release_t60_s)
        nt = min(nr, max(1, int(RELEASE_TAPER_S * sample_rate)))
        rel[nr - nt:] *= 0.5 * (1 + np.cos(np.pi * (np.arange(nt) + 1) / nt))
        env[n_on:] = rel.astype(np.float32)
    return env

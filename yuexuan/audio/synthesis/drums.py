"""Drum synthesis: the 建鼓 and the 鼙 struck with a stick, the 鼗's pellets (family ``drum``).

A stroke is modal synthesis driven by the stick's contact force: a half-sine force pulse
(``contact_ms`` long at full velocity, longer for softer strokes) excites

- the listed membrane modes (``modes`` × ``fundamental_hz``, ``amplitudes``, ``decay_s``: τ in s),
  each a two-pole resonator (:func:`yuexuan.audio.dsp.lfilter`), so the attack is the force pulse's own
  rise (≈ 1 ms) and each mode's level follows the pulse's spectrum (a shorter contact is brighter);
- the modes above them, too dense to list, as octave bands of noise (``upper_level``, each band
  ``upper_slope_db`` below the one beneath) decaying with τ = ``upper_decay_s`` × (lowest band's
  frequency / band's frequency)^``upper_decay_exponent`` (a statistical stand-in for a dense modal
  spectrum);
- the stick's own click on the hide: a ~1 ms high-passed noise burst (``click``).

With ``rattle_strokes`` > 1 (the 鼗) the stroke is a twirl: ``rattle_strokes`` pellet strikes at
``rattle_rate_hz`` (each half-twist swings a pellet onto a head), alternating between the two
heads (the second tuned ``head_ratio`` × the first), each a short hard-contact stroke, softening
as the twirl ends. Sources of every figure: the instruments' files and docs/render.md, "Drums".

Pure functions of (``[synth]`` table, velocity, sample rate, seed); float32 mono, peak 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.dsp import butter_bandpass_sos, lfilter, sosfilt
from yuexuan.audio.synthesis.primitives import DECAY_SPAN, burst, normalise

RING_CAP_S = 4.0             # the longest a stroke rings, s (its last 10 % faded)
TWIRL_JITTER = 0.12          # pellet strike times vary ± half this fraction of an interval
UPPER_BANDS = 6              # octave bands of the dense upper modes


@dataclass(frozen=True)
class Membrane:
    """One drum's ``[synth]`` table, read once (frequencies Hz, times s)."""

    fundamental_hz: float
    modes: tuple[float, ...]    # ratios to the fundamental
    amplitudes: tuple[float, ...]
    decay_s: tuple[float, ...]  # τ of each mode, s
    contact_ms: float           # stick (or pellet) contact time at velocity 127, ms
    upper_level: float
    upper_decay_s: float
    upper_decay_exponent: float  # τ of a band ∝ (lowest band / band)^this
    upper_slope_db: float       # level of each octave band re the one below at velocity 127, dB
    click: float

    @classmethod
    def of(cls, p: dict[str, Any]) -> Membrane:
        modes = tuple(float(m) for m in p.get("modes", (1.0, 1.59, 2.14, 2.3)))
        return cls(float(p.get("fundamental_hz", 100.0)), modes,
                   tuple(float(a) for a in p.get("amplitudes", (1.0,) * len(modes))),
                   tuple(float(t) for t in p.get("decay_s", (0.5,) * len(modes))),
                   float(p.get("contact_ms", 2.0)), float(p.get("upper_level", 0.2)),
                   float(p.get("upper_decay_s", 0.1)), float(p.get("upper_decay_exponent", 0.5)),
                   float(p.get("upper_slope_db", -6.0)), float(p.get("click", 0.2)))

    def scaled(self, ratio: float) -> Membrane:
        """The same drum with every frequency × ``ratio`` (the 鼗's second head)."""
        return replace(self, fundamental_hz=self.fundamental_hz * ratio)


def _contact_s(m: Membrane, velocity: int) -> float:
    """Softer strokes stay longer on the head (INFERENCE: up to 1.6 × at the softest)."""
    return m.contact_ms * 1e-3 * (1.0 + 0.6 * (1.0 - velocity / 127.0))


def _force_pulse(contact_s: float, sample_rate: int) -> npt.NDArray[np.floating[Any]]:
    n = max(2, int(round(contact_s * sample_rate)))
    return np.sin(np.pi * (np.arange(n) + 0.5) / n)


def _modes(m: Membrane, force: npt.NDArray[np.floating[Any]], n: int,
           sample_rate: int) -> npt.NDArray[np.floating[Any]]:
    """Σ of two-pole resonators, one per mode (a unit impulse rings at the mode's amplitude),
    driven by the force pulse of unit area. lfilter runs in C, one pass per mode."""
    out = np.zeros(n, dtype=np.float64)
    drive = np.zeros(n)
    drive[:len(force)] = force / force.sum()
    for ratio, amp, tau in zip(m.modes, m.amplitudes, m.decay_s):
        f = m.fundamental_hz * ratio
        if f >= 0.45 * sample_rate or amp == 0 or tau <= 0:
            continue
        span = min(n, int(DECAY_SPAN * tau * sample_rate) + len(force))
        r = math.exp(-1.0 / (tau * sample_rate))
        w = 2 * math.pi * f / sample_rate
        # impulse response amp·r^k·sin((k+1)w): a sine of amplitude amp decaying with τ
        y = lfilter([amp * math.sin(w)], [1.0, -2 * r * math.cos(w), r * r], drive[:span])
        out[:span] += y
    return out


def _upper(m: Membrane, velocity: int, n: int, sample_rate: int,
           rng: np.random.Generator) -> npt.NDArray[np.floating[Any]]:
    """The dense modes above the listed ones: octave bands of decaying noise, each
    ``upper_slope_db`` below the one beneath it (steeper for softer strokes: INFERENCE, 1.5 × at
    the softest)."""
    slope_db = m.upper_slope_db * (1.0 + 0.5 * (1.0 - velocity / 127.0))
    lo = m.fundamental_hz * max(m.modes) * 1.1
    out = np.zeros(n, dtype=np.float64)
    if m.upper_level <= 0:
        return out
    for b in range(UPPER_BANDS):
        f1, f2 = lo * 2 ** b, lo * 2 ** (b + 1)
        if f2 >= 0.45 * sample_rate:
            break
        fc = math.sqrt(f1 * f2)
        tau = m.upper_decay_s * (lo / fc) ** m.upper_decay_exponent
        span = min(n, int(DECAY_SPAN * tau * sample_rate) + 1)
        sos = butter_bandpass_sos(2, f1, f2, sample_rate)
        band = sosfilt(sos, rng.standard_normal(span))
        band *= np.exp(-np.arange(span) / (tau * sample_rate))
        out[:span] += m.upper_level * 10 ** (slope_db * b / 20.0) * band
    return out


def membrane_stroke(m: Membrane, velocity: int, sample_rate: int, rng: np.random.Generator,
                    n: int) -> npt.NDArray[np.floating[Any]]:
    """One stroke of a membrane drum, ``n`` samples, float64 (not normalised)."""
    contact = _contact_s(m, velocity)
    force = _force_pulse(contact, sample_rate)
    out = _modes(m, force, n, sample_rate)
    scale = float(np.max(np.abs(out[:int(0.05 * sample_rate)]))) or 1.0
    out += scale * _upper(m, velocity, n, sample_rate, rng)
    if m.click > 0:
        hit = burst(rng, n, 0.0008, sample_rate, cutoff_hz=2000.0, highpass=True)
        out[:len(hit)] += scale * m.click * (velocity / 127.0) * hit
    return out


def _ring_samples(m: Membrane, sample_rate: int) -> int:
    return int(min(RING_CAP_S, DECAY_SPAN * max((*m.decay_s, m.upper_decay_s))) * sample_rate)


def _fade_tail(x: npt.NDArray[np.floating[Any]], fraction: float = 0.1) -> npt.NDArray[np.floating[Any]]:
    k = max(1, int(len(x) * fraction))
    x[-k:] *= np.linspace(1.0, 0.0, k)
    return x


def _twirl_samples(p: dict[str, Any], sample_rate: int) -> int:
    strokes = int(p.get("rattle_strokes", 1))
    return int(strokes / float(p.get("rattle_rate_hz", 12.0)) * sample_rate) if strokes > 1 else 0


def length(p: dict[str, Any], sample_rate: int) -> int:
    """Samples :func:`drum` returns for this ``[synth]`` table."""
    return _ring_samples(Membrane.of(p), sample_rate) + _twirl_samples(p, sample_rate)


def twirl(p: dict[str, Any], velocity: int, sample_rate: int,
          rng: np.random.Generator) -> npt.NDArray[np.floating[Any]]:
    """The 鼗: pellet strikes at ``rattle_rate_hz``, alternating heads, softening at the end."""
    heads = (Membrane.of(p), Membrane.of(p).scaled(float(p.get("head_ratio", 1.0))))
    strokes = int(p["rattle_strokes"])
    interval = 1.0 / float(p.get("rattle_rate_hz", 12.0))
    one = _ring_samples(heads[0], sample_rate)
    out = np.zeros(length(p, sample_rate), dtype=np.float64)
    for i in range(strokes):
        start = int(((i + TWIRL_JITTER * (rng.random() - 0.5)) * interval) * sample_rate)
        start = max(0, start)
        vel = max(1, int(velocity * (1.0 - 0.5 * i / strokes)))   # the twirl slows, pellets soften
        s = membrane_stroke(heads[i % 2], vel, sample_rate, rng, one)
        end = min(len(out), start + one)
        out[start:end] += (vel / velocity) * s[:end - start]
    return out


def drum(p: dict[str, Any], velocity: int, sample_rate: int, seed: int) -> npt.NDArray[np.float32]:
    """One drum note: a stick stroke, or (``rattle_strokes`` > 1) the 鼗's twirl. Peak 1."""
    rng = np.random.default_rng(seed)
    if int(p.get("rattle_strokes", 1)) > 1:
        out = twirl(p, velocity, sample_rate, rng)
    else:
        m = Membrane.of(p)
        out = membrane_stroke(m, velocity, sample_rate, rng, _ring_samples(m, sample_rate))
    return normalise(_fade_tail(out).astype(np.float32), 1.0)

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

No two strokes are alike (a drummer's never are): the renderer plays each stroke as one of
:data:`STROKES` variants (:func:`stroke_variants`, never the same twice running), each with its own
strike force (:func:`stroke`: a level offset of SD :data:`FORCE_SD_DB`, the timbre of a harder or
softer stroke with it, so the brighter strokes are the louder), its own strike position (mode
(m, n), ``mode_shapes``, is excited as its shape J_m(j_mn r/a) at the point struck) and its own
noise. Each resonator has a double zero at DC, so a stroke carries no
DC (it is a sum of band-limited parts) and its attack starts on the force pulse as before.

With ``rattle_strokes`` > 1 (the 鼗) the stroke is a twirl: ``rattle_strokes`` pellet strikes at
``rattle_rate_hz`` (each half-twist swings a pellet onto a head), alternating between the two
heads (the second tuned ``head_ratio`` × the first), each a short hard-contact stroke, softening
as the twirl ends. Sources of every figure: the instruments' files and docs/render.md, "Drums".

Pure functions of (``[synth]`` table, velocity, sample rate, seed, stroke); float32 mono, peak 1.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.audio.dsp import butter_bandpass_sos, lfilter, sosfilt
from yuexuan.audio.synthesis.primitives import DECAY_SPAN, burst, normalise

RING_CAP_S = 4.0             # the longest a stroke rings, s (its last 10 % faded)
TWIRL_JITTER = 0.12          # pellet strike times vary ± half this fraction of an interval
UPPER_BANDS = 6              # octave bands of the dense upper modes
#: distinct strokes a drum plays in turn (each a cached waveform of its own)
STROKES = 8
#: strike force from stroke to stroke, SD of the level, dB (INFERENCE: a player repeating one
#: stroke; issue 29 asks 1–3 dB)
FORCE_SD_DB = 2.0
#: where the stick lands, as a fraction of the head's radius: spread evenly over STRIKE_LIMITS (3 to
#: 9 cm from the middle of the 建鼓's 74 cm head), on the side of the centre of the hand that
#: strikes; the files' amplitudes are those of a stroke at STRIKE_RHO (INFERENCE). Strokes farther
#: out on the left turned the (1,1) pair against the (0,1) so far that the attack's first 30–250 Hz
#: hump came 6–7 ms late (the drum finder of yuexuan/check/drum/band.py); within 0.25 it stays
#: within ±1.1 ms of the true start
STRIKE_RHO = 0.25
STRIKE_LIMITS = (0.08, 0.25)
#: the most a mode gains over its level at STRIKE_RHO, × (INFERENCE: the files' amplitudes are
#: radiated levels, and the modes of many nodal diameters that an off-centre stroke excites most
#: radiate least; uncapped, a stroke at ρ 0.47 raised J_5's mode 15× and its peaks 3 dB at one
#: loudness)
POSITION_GAIN_CAP = 1.5
#: zeros j_mn of the Bessel function J_m: mode (m, n) of a membrane has the shape J_m(j_mn r/a)
#: (Fletcher & Rossing 1998, ch. 3.4)
BESSEL_ZEROS = {(0, 1): 2.4048, (1, 1): 3.8317, (2, 1): 5.1356, (3, 1): 6.3802, (4, 1): 7.5883,
                (5, 1): 8.7715, (6, 1): 9.9361, (0, 2): 5.5201, (1, 2): 7.0156, (2, 2): 8.4172,
                (3, 2): 9.7610, (0, 3): 8.6537}


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
    shapes: tuple[tuple[int, int], ...] = ()   # (m, n) of each mode (none: position ignored)

    @classmethod
    def of(cls, p: dict[str, Any]) -> Membrane:
        modes = tuple(float(m) for m in p.get("modes", (1.0, 1.59, 2.14, 2.3)))
        return cls(float(p.get("fundamental_hz", 100.0)), modes,
                   tuple(float(a) for a in p.get("amplitudes", (1.0,) * len(modes))),
                   tuple(float(t) for t in p.get("decay_s", (0.5,) * len(modes))),
                   float(p.get("contact_ms", 2.0)), float(p.get("upper_level", 0.2)),
                   float(p.get("upper_decay_s", 0.1)), float(p.get("upper_decay_exponent", 0.5)),
                   float(p.get("upper_slope_db", -6.0)), float(p.get("click", 0.2)),
                   tuple((int(m), int(k)) for m, k in p.get("mode_shapes", ())))

    def scaled(self, ratio: float) -> Membrane:
        """The same drum with every frequency × ``ratio`` (the 鼗's second head)."""
        return replace(self, fundamental_hz=self.fundamental_hz * ratio)


class Stroke(NamedTuple):
    """One way of striking: the force's level re the nominal stroke (dB), where the stick lands
    (fraction of the radius) and on which side of the centre (+1 the right hand's, −1 the left's:
    a mode with an odd number of nodal diameters moves the other way there)."""

    force_db: float
    rho: float
    side: int = 1


NOMINAL = Stroke(0.0, STRIKE_RHO)
HANDS = 2                       # the 建鼓 is struck with a stick (桴) in each hand, in turn


def stroke(variant: int) -> Stroke:
    """Stroke ``variant`` (0 … STROKES − 1; −1: the nominal stroke): the first half the right
    hand's, the second the left's. The forces are the normal quantiles of their rank, scaled to
    an SD of exactly FORCE_SD_DB, the hardest at 0 dB (the files' sound powers are peak powers,
    their velocity's hardest stroke), so every render's strokes spread alike; the order and the
    positions are drawn from a fixed seed."""
    if variant < 0:
        return NOMINAL
    return _strokes()[variant % STROKES]


@functools.cache
def _strokes() -> tuple[Stroke, ...]:
    """The STROKES strokes of :func:`stroke`, made once (a render asks for one a note)."""
    rng = np.random.default_rng(0x5EED_D8)
    ranks = rng.permutation(STROKES)
    z = np.array([_normal_quantile((r + 0.5) / STROKES) for r in ranks])
    z = (z - z.mean()) / z.std()
    z -= z.max()                     # the hardest stroke is the file's sound power (a peak power)
    lo, hi = STRIKE_LIMITS
    rho = lo + (hi - lo) * (rng.permutation(STROKES) + 0.5) / STROKES
    return tuple(Stroke(float(FORCE_SD_DB * z[k]), float(rho[k]), 1 if k < STROKES // HANDS else -1)
                 for k in range(STROKES))


def _normal_quantile(q: float) -> float:
    """Φ⁻¹(q) by bisection on math.erf (scipy.stats is not imported by the render)."""
    lo, hi = -8.0, 8.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < q:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def stroke_variants(count: int, seed: int) -> list[int]:
    """The variants of ``count`` successive strokes of one drum: the hands in turn (the first
    drawn), each stroke one of its hand's variants (drawn from ``seed``), so no stroke repeats the
    one before."""
    rng = np.random.default_rng(seed)
    per_hand = STROKES // HANDS
    first = int(rng.integers(HANDS))
    picks = rng.integers(per_hand, size=count).tolist()
    return [((first + i) % HANDS) * per_hand + pick for i, pick in enumerate(picks)]


def timeline_strokes(instruments: Sequence[str], drum_names: Collection[str]) -> dict[int, int]:
    """{index: stroke variant} of the notes (named by their instruments, in time order) of the
    drums ``drum_names``: each drum's strokes in turn by :func:`stroke_variants`, seeded by its
    name, so the same timeline always plays the same strokes."""
    out: dict[int, int] = {}
    for name in sorted(set(instruments) & set(drum_names)):
        mine = [j for j, nm in enumerate(instruments) if nm == name]
        out.update(zip(mine, stroke_variants(len(mine), zlib.crc32(f"{name}|strokes".encode()))))
    return out


def stroke_gain(variant: int) -> float:
    """The amplitude of stroke ``variant`` re the nominal stroke (its force)."""
    return float(10 ** (stroke(variant).force_db / 20))


def _force_velocity(velocity: float, force_db: float) -> float:
    """The velocity whose timbre a stroke ``force_db`` harder than ``velocity`` has (the inverse
    of :func:`yuexuan.audio.synthesis.synth.velocity_gain`'s power 1.6), 1..127."""
    return float(min(127.0, max(1.0, velocity * 10 ** (force_db / 32.0))))


def _contact_s(m: Membrane, velocity: float) -> float:
    """Softer strokes stay longer on the head (INFERENCE: up to 1.6 × at the softest)."""
    return m.contact_ms * 1e-3 * (1.0 + 0.6 * (1.0 - velocity / 127.0))


def _force_pulse(contact_s: float, sample_rate: int) -> npt.NDArray[np.floating[Any]]:
    n = max(2, int(round(contact_s * sample_rate)))
    return np.sin(np.pi * (np.arange(n) + 0.5) / n)


def bessel_j(m: int, x: float) -> float:
    """J_m(x) by its power series (exact to 1e-12 for x ≤ 12; scipy.special is not imported by
    the render)."""
    term = (x / 2) ** m / math.factorial(m)
    total = term
    for k in range(1, 60):
        term *= -(x / 2) ** 2 / (k * (k + m))
        total += term
        if abs(term) < 1e-16:
            break
    return total


def position_gain(shape: tuple[int, int], rho: float) -> float:
    """How much more mode ``shape`` = (m, n) is excited struck at ``rho`` (fraction of the
    radius) than at STRIKE_RHO: |J_m(j_mn ρ)| / |J_m(j_mn STRIKE_RHO)|, at most
    :data:`POSITION_GAIN_CAP`."""
    j = BESSEL_ZEROS.get(shape)
    if j is None:
        return 1.0
    ref = abs(bessel_j(shape[0], j * STRIKE_RHO))
    return min(POSITION_GAIN_CAP, abs(bessel_j(shape[0], j * rho)) / ref) if ref > 0 else 1.0


def _modes(m: Membrane, force: npt.NDArray[np.floating[Any]], n: int, sample_rate: int,
           rho: float = STRIKE_RHO, side: int = 1) -> npt.NDArray[np.floating[Any]]:
    """Σ of two-pole resonators, one per mode (a unit impulse rings at the mode's amplitude),
    driven by the force pulse of unit area, each mode scaled by :func:`position_gain` at ``rho``
    and, with an odd number of nodal diameters, turned over on the left (``side`` −1).
    lfilter runs in C, one pass per mode."""
    out = np.zeros(n, dtype=np.float64)
    drive = np.zeros(n)
    drive[:len(force)] = force / force.sum()
    shapes = m.shapes if len(m.shapes) == len(m.modes) else ((0, 0),) * len(m.modes)
    for ratio, amp, tau, shape in zip(m.modes, m.amplitudes, m.decay_s, shapes):
        f = m.fundamental_hz * ratio
        if f >= 0.45 * sample_rate or amp == 0 or tau <= 0:
            continue
        amp *= position_gain(shape, rho) * (side if shape[0] % 2 else 1)
        span = min(n, int(DECAY_SPAN * tau * sample_rate) + len(force))
        r = math.exp(-1.0 / (tau * sample_rate))
        w = 2 * math.pi * f / sample_rate
        # g (1 − z⁻¹)² over the resonator: a double zero at DC (no DC at all), impulse response
        # ≈ amp·r^k·sin(kw) for g = −amp·sin w / (4 sin²(w/2)): a sine of amplitude amp decaying
        # with τ, starting from zero as the plain resonator's
        g = -amp * math.sin(w) / (4 * math.sin(w / 2) ** 2)
        y = lfilter([g, -2 * g, g], [1.0, -2 * r * math.cos(w), r * r], drive[:span])
        out[:span] += y
    return out


def _upper(m: Membrane, velocity: float, n: int, sample_rate: int,
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


def membrane_stroke(m: Membrane, velocity: float, sample_rate: int, rng: np.random.Generator,
                    n: int, how: Stroke = NOMINAL) -> npt.NDArray[np.floating[Any]]:
    """One stroke of a membrane drum, ``n`` samples, float64 (not normalised): ``how`` sets the
    force (the timbre of a stroke that much harder) and the position."""
    velocity = _force_velocity(velocity, how.force_db)
    contact = _contact_s(m, velocity)
    force = _force_pulse(contact, sample_rate)
    out = _modes(m, force, n, sample_rate, how.rho, how.side)
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


def twirl(p: dict[str, Any], velocity: int, sample_rate: int, rng: np.random.Generator,
          how: Stroke = NOMINAL) -> npt.NDArray[np.floating[Any]]:
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
        s = membrane_stroke(heads[i % 2], vel, sample_rate, rng, one, how)
        end = min(len(out), start + one)
        out[start:end] += (vel / velocity) * s[:end - start]
    return out


def drum(p: dict[str, Any], velocity: int, sample_rate: int, seed: int,
         variant: int = -1) -> npt.NDArray[np.float32]:
    """One drum note: a stick stroke, or (``rattle_strokes`` > 1) the 鼗's twirl, struck as stroke
    ``variant`` (:func:`stroke`; −1 the nominal one). Peak 1."""
    rng = np.random.default_rng(seed)
    how = stroke(variant)
    if int(p.get("rattle_strokes", 1)) > 1:
        out = twirl(p, velocity, sample_rate, rng, how)
    else:
        m = Membrane.of(p)
        out = membrane_stroke(m, velocity, sample_rate, rng, _ring_samples(m, sample_rate), how)
    return normalise(_fade_tail(out).astype(np.float32), 1.0)

"""The 笙 and the 和 (family ``free_reed``): a free reed swinging through its slot, the air it lets
through filtered by the pipe it sounds in.

The physics, each step with the measurement or model it follows (the data's values and their
sources: instruments/笙.toml ``[synth]``):

1. **The reed** swings nearly sinusoidally, unlike the sound it makes (J. P. Cottingham, C. J. Lilly
   and C. H. Reed, "The motion of air-driven free reeds", ASA/EAA meeting, Berlin 1999), about an
   equilibrium pushed downstream by the blowing pressure (1–2 mm against a swing of several mm,
   Koopman and Cottingham, reported there): ``x = offset + A sin θ`` in units of the full swing,
   ``offset`` = ``reed_offset`` growing with the pressure (the velocity).
2. **The flow** through the slot is Bernoulli's, u = F(x)·√(2p/ρ) (N. H. Fletcher's reed model, as
   J. Woodhouse, *Euphonics* §11.6.1 gives it), with the free reed's area function: while the
   tongue is inside its slot only the clearance leaks (``gap``), outside it the escape area grows
   with the distance beyond the slot's depth (``slot_depth``) (L. Millot and C. Baumann, "A proposal
   for a minimal model of free reeds", Acta Acustica united with Acustica; arXiv:2401.01606). A
   free reed never seals its slot (Cottingham, "Acoustics of free-reed instruments", Physics Today
   64(3), 44–48, 2011): the flow pulses on both sides of the slot, unequally because of the
   offset, so its spectrum has **odd and even harmonics** — a clarinet's reed closes a pipe
   stopped at the reed and sounds mostly the odd ones.
3. **The pipe** passes that flow through its resonances, near every harmonic of its first one
   (the slot at its foot never closed: INFERENCE, open at both ends), tuned a little above the
   reed (``pipe_detune``, INFERENCE). Each resonance's Q is that of a bamboo bore of radius
   ``pipe_radius_m``: wall losses α = 2.98·10⁻⁵ √f / R per metre (the viscous and thermal boundary
   admittances 2.03·10⁻⁵ √f and 0.95·10⁻⁵ √f, J. A. Kemp, PhD thesis, Edinburgh 2002, eq. 2.54,
   after Bruneau et al.) and the open ends' radiation, |R| ≈ 1 − (ka)²/2 (H. Levine and J.
   Schwinger, Phys. Rev. 73, 383, 1948). The pipe's end radiates as a monopole: pressure ∝ the
   flow's time derivative. (The reed-and-pipe structure: W. Kuang, P. Ji, P. Leistner, J. Angster
   and J. Yang, "A physical model and sound synthesis method of Chinese Sheng", 声学学报 41(5),
   628–637, 2016.)
4. **The attack**: the swing grows from the displaced equilibrium to its steady value (J.
   Cottingham and D. Wolff, "Experimental study of free reed initial transients", Third Vienna
   Talk on Music Acoustics, 2015), slowly, and more slowly for the longer, lower reeds (Cottingham,
   "Modes of reed vibration and transient phenomena in free reed instruments"): a self-excited
   oscillation growing by a fixed fraction a cycle, logistic, its 10–90 % rise ``attack_cycles``
   periods long, kept within :data:`ATTACK_RANGE_S` (INFERENCE). When the breath stops the swing
   dies with the time constant ``release_s`` (INFERENCE).
5. **The 和音**: with the note's pipe sound the pipes of ``dyad`` (ratios to the note, at
   ``dyad_level``: the 笙's fifth above, INFERENCE). A group of players (the three 笙) sounds as one
   body, as the four 瑟 do; their number is in the instrument's sound power.

Hand-written: no library synthesises a free reed. Cheap by construction: the steady waveform of
one period is computed at a few swings (:data:`LEVELS`), its harmonics shaped by the pipe in the
frequency domain, and the note read from those wavetables as its swing grows (numpy, a few array
operations a pipe). The pipe's own ring-up (a Q of about 20, some 20 ms) is left out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.synthesis.primitives import RELEASE_S, normalise

SPEED_OF_SOUND_M_S = 343.0
#: the 10–90 % rise of a reed's swing is kept within these, s (INFERENCE: a soft attack, 30–120 ms)
ATTACK_RANGE_S = (0.035, 0.12)
#: swings (of the steady one) at which one period is computed; the note crossfades between them
LEVELS = np.array([0.05, 0.2, 0.4, 0.6, 0.8, 1.0])
PERIOD_BITS = 11
PERIOD = 2 ** PERIOD_BITS    # samples of a wavetable period
START_SWING = 0.02           # the swing when the breath starts, of the steady one
STEADY = 1e-3                # a swing within this of the steady one is the steady one (−60 dB)


def _flow(theta: npt.NDArray[np.float64], swing: float, offset: float, slot: float, gap: float,
          edge: float) -> npt.NDArray[np.float64]:
    """The flow through the slot (units of the steady peak's escape area) at phases ``theta``:
    the clearance ``gap`` while the tongue is in the slot, plus the distance beyond it, the corner
    rounded over ``edge`` (the tongue's thickness: the escape area opens gradually)."""
    beyond = (np.abs(offset + swing * np.sin(theta)) - slot) / edge
    return gap + edge * np.logaddexp(0.0, beyond)


def pipe_q(f_hz: npt.NDArray[np.float64], radius_m: float, length_m: float) -> npt.NDArray[np.float64]:
    """Q of an open pipe's resonances at ``f_hz``: wall losses (Kemp 2002) and radiation from two
    open ends (Levine and Schwinger 1948), as an attenuation per metre; Q = k / 2α."""
    k = 2 * math.pi * f_hz / SPEED_OF_SOUND_M_S
    wall = 2.98e-5 * np.sqrt(f_hz) / radius_m
    radiation = (k * radius_m) ** 2 / (2 * length_m)      # two ends, |R| ≈ 1 − (ka)²/2 each
    return k / (2 * (wall + radiation))


def tables(p: dict[str, Any], hz: float, velocity: int, sample_rate: int) -> npt.NDArray[np.float32]:
    """One period of the radiated pressure at each swing of :data:`LEVELS` (rows, each with a
    wrap-around sample), for a reed sounding ``hz`` in its pipe."""
    pressure = velocity / 127.0
    offset = float(p.get("reed_offset", 0.6)) * (0.8 + 0.2 * pressure)
    slot, gap = float(p.get("slot_depth", 0.2)), float(p.get("gap", 0.03))
    edge = float(p.get("edge", 0.03))
    theta = 2 * np.pi * np.arange(PERIOD) / PERIOD
    flows = np.stack([_flow(theta, a, offset, slot, gap, edge) for a in LEVELS])
    u = np.fft.rfft(flows, axis=1) / PERIOD                  # harmonics of the flow, k = 0 … PERIOD/2
    k = np.arange(u.shape[1])
    keep = (k >= 1) & (k * hz < 0.45 * sample_rate)
    f_pipe = hz * float(p.get("pipe_detune", 1.02))          # the pipe's first resonance
    length_m = SPEED_OF_SOUND_M_S / (2 * f_pipe)
    modes = np.arange(1, int(0.45 * sample_rate / f_pipe) + 2)
    fn = modes.astype(np.float64) * f_pipe
    q = pipe_q(fn, float(p.get("pipe_radius_m", 0.004)), length_m)
    f = np.maximum(k[keep] * hz, 1e-9)[:, None]
    # the pipe: its resonances summed (a modal model of the transfer from reed to open end)
    transfer = np.sum(1.0 / (1.0 + 1j * q[None, :] * (f / fn[None, :] - fn[None, :] / f)), axis=1)
    shaped = np.zeros_like(u)
    shaped[:, keep] = u[:, keep] * (1j * k[keep]) * transfer[None, :]    # monopole: ∝ d/dt
    period = np.fft.irfft(shaped * PERIOD, PERIOD, axis=1)
    out = np.empty((len(LEVELS), PERIOD + 1), dtype=np.float32)
    out[:, :PERIOD] = period
    out[:, PERIOD] = period[:, 0]
    return out


def attack_s(p: dict[str, Any], hz: float) -> float:
    """The 10–90 % rise of the swing, s: ``attack_cycles`` periods, within :data:`ATTACK_RANGE_S`."""
    lo, hi = ATTACK_RANGE_S
    return min(hi, max(lo, float(p.get("attack_cycles", 20.0)) / hz))


def swing(n: int, n_on: int, start: int, rise_s: float, release_s: float,
          sample_rate: int) -> npt.NDArray[np.float64]:
    """The reed's swing (of the steady one) over ``n`` samples: 0 before ``start``, logistic
    growth from :data:`START_SWING` (10–90 % in ``rise_s``) to exactly 1 once within
    :data:`STEADY` of it, exponential decay (time constant ``release_s``) after ``n_on``."""
    a = np.zeros(n)
    tau = rise_s / (2 * math.log(9))                         # logistic: 10→90 % in 2 ln 9 τ
    centre = tau * math.log(1 / START_SWING - 1)
    full = start + int(math.ceil((centre + tau * math.log(1 / STEADY - 1)) * sample_rate))
    stop = min(n, max(start, n_on))
    grow = min(full, stop)
    if grow > start:
        t = np.arange(grow - start) / sample_rate
        a[start:grow] = 1.0 / (1.0 + np.exp((centre - t) / tau))
    a[grow:stop] = 1.0
    if stop < n:
        last = a[stop - 1] if stop > start else 0.0
        a[stop:] = last * np.exp(-np.arange(1, n - stop + 1) / (release_s * sample_rate))
    return a


def reed(table: npt.NDArray[np.float32], hz: float, amp: npt.NDArray[np.float64], phase: float,
         sample_rate: int) -> npt.NDArray[np.float32]:
    """The note of one reed: its wavetables read at ``hz``, crossfaded by the swing ``amp``
    (and scaled by it below the smallest level); where the swing is steady, the last table alone."""
    n = len(amp)
    # a 32-bit phase accumulator (wrapping is the period; 1e-5 Hz steps at 48 kHz): numpy's float
    # remainder costs ten times as much
    step = np.uint32(round(hz / sample_rate * 2 ** 32) % 2 ** 32)
    acc = np.arange(n, dtype=np.uint32)
    acc *= step
    acc += np.uint32(int(phase * 2 ** 32) % 2 ** 32)
    i = (acc >> np.uint32(32 - PERIOD_BITS)).astype(np.intp)
    frac = (acc & np.uint32(2 ** (32 - PERIOD_BITS) - 1)).astype(np.float32)
    frac *= np.float32(2.0 ** -(32 - PERIOD_BITS))
    out = np.empty(n, dtype=np.float32)
    steady = amp >= LEVELS[-1]                      # one run: the swing rises, holds, falls
    a = int(steady.argmax()) if steady.any() else n
    b = n - int(steady[::-1].argmax()) if a < n else n
    top, ib = table[-1], i[a:b]
    lo_s = top[ib]
    np.subtract(top[ib + 1], lo_s, out=out[a:b])
    out[a:b] *= frac[a:b]
    out[a:b] += lo_s
    for part in (slice(0, a), slice(b, n)):          # the attack and the release: crossfaded
        ip, fp, ap = i[part], frac[part], amp[part]
        lv = np.interp(ap, LEVELS, np.arange(len(LEVELS), dtype=np.float64))
        j = np.minimum(lv.astype(np.int64), len(LEVELS) - 2)
        w = (lv - j).astype(np.float32)
        lo = table[j, ip] + (table[j, ip + 1] - table[j, ip]) * fp
        hi = table[j + 1, ip] + (table[j + 1, ip + 1] - table[j + 1, ip]) * fp
        seg = lo + (hi - lo) * w
        quiet = ap < LEVELS[0]
        seg[quiet] *= (ap[quiet] / LEVELS[0]).astype(np.float32)
        out[part] = seg
    return out


def free_reed(p: dict[str, Any], hz: float, velocity: int, duration_s: float, sample_rate: int,
              seed: int) -> npt.NDArray[np.float32]:
    """A held note: the reed of ``hz`` and those of ``dyad`` (ratios to it, at ``dyad_level``),
    each in its pipe, ``duration_s`` of breath and :data:`RELEASE_S` of release; peak 1. The
    players of a group (the three 笙) sound as one body, their number in its sound power."""
    n_on = max(1, int(duration_s * sample_rate))
    n = n_on + int(RELEASE_S * sample_rate)
    rng = np.random.default_rng(seed)
    release = float(p.get("release_s", 0.012))
    pipes = [(1.0, 1.0)] + [(float(r), float(p.get("dyad_level", 0.5))) for r in p.get("dyad", [])]
    out = np.zeros(n, dtype=np.float32)
    for ratio, level in pipes:
        f0 = hz * ratio
        if f0 >= 0.45 * sample_rate:
            continue
        amp = swing(n, n_on, 0, attack_s(p, f0), release, sample_rate)
        out += np.float32(level) * reed(tables(p, f0, velocity, sample_rate), f0, amp, float(rng.random()),
                                        sample_rate)
    return normalise(out, 1.0)


__all__ = ["free_reed", "tables", "attack_s", "swing", "pipe_q", "ATTACK_RANGE_S"]

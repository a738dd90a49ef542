"""The voice source: one period of the Liljencrants–Fant (LF) glottal flow derivative shaped by
Fant's Rd (:func:`lf_period`), and the pitch of a singer or speaker over a note (:func:`f0_track`:
onset glide, vibrato varying cycle to cycle, slow drift, jitter; a tone's contour for speech).

Hand-written: no maintained Python library synthesises an LF source. Figures and sources:

- LF model: Fant, Liljencrants & Lin 1985 (STL-QPSR 26(4)); its one-parameter form Rd, with
  Ra, Rk, Rg from Rd: Fant 1995 (STL-QPSR 36(2–3)), eqs. 2–4. Rd about 0.3 (pressed, loud, bright)
  to 2.7 (breathy, soft): a louder voice has a smaller Rd, a flatter spectral tilt;
- vibrato of a chanted ode, not opera: a setting inside 4.5–6.5 Hz and ±15–50 cents (operatic
  singers 5.5–7.5 Hz and ±50–100 cents: Prame 1994, JASA 96(4); 1997, JASA 102(1)), each cycle
  with its own rate and extent (Prame 1994 measured cycle-to-cycle variation), starting 150–300 ms
  into a held note;
- onset glide: the pitch rises 20–50 cents into the note (Saitou et al. 2005, "preparation" in
  singing F0, Proc. IEEE WASPAA);
- jitter: a setting of 0.2–0.6 % (healthy voices 0.2–1 %: Baken & Orlikoff 2000, Clinical
  Measurement of Speech and Voice, 2nd ed.), per glottal period;
- tones: Chao's five-level tone letters (Chao 1930, Le Maître Phonétique 45): 1 = 55, 2 = 35,
  3 = 214, 4 = 51, neutral short and mid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

CONTROL_HZ = 1000                  # pitch control rate

#: Chao 1930 tone letters (levels 1 low … 5 high) at the start, middle and end of the syllable
TONE_LEVELS = {1: (5.0, 5.0, 5.0), 2: (3.0, 4.0, 5.0), 3: (2.0, 1.0, 4.0), 4: (5.0, 3.0, 1.0),
               5: (3.0, 3.0, 2.5)}
SEMITONES_PER_LEVEL = 2.5          # a male speaker's tone range of about 10 semitones (INFERENCE)


@lru_cache(maxsize=64)
def lf_period(rd: float, size: int = 2048) -> npt.NDArray[np.float32]:
    """One period (``size`` points, phase 0 = glottal opening) of the LF flow derivative for
    ``rd`` (Fant 1995), negative peak −1, zero mean flow."""
    rd = min(2.7, max(0.3, rd))
    rap = (-1.0 + 4.8 * rd) / 100.0
    rkp = (22.4 + 11.8 * rd) / 100.0
    rgp = 1.0 / (4.0 * rkp * (0.11 * rd / (0.5 + 1.2 * rkp) - rap))
    tp = 1.0 / (2.0 * rgp)
    te = min(0.95, tp * (1.0 + rkp))
    ta = rap
    eps = 1.0 / ta
    for _ in range(50):                          # ε·ta = 1 − exp(−ε (1 − te))
        eps = (1.0 - math.exp(-eps * (1.0 - te))) / ta
    t = np.arange(size) / size
    ret = -(np.exp(-eps * (t - te)) - math.exp(-eps * (1.0 - te))) / (eps * ta)
    wg = math.pi / tp

    def shape(alpha: float) -> npt.NDArray[np.float64]:
        e0 = -1.0 / (math.exp(alpha * te) * math.sin(wg * te))
        return np.where(t <= te, e0 * np.exp(alpha * t) * np.sin(wg * t), ret)

    lo, hi = -50.0, 200.0                        # α: the flow returns to zero over the period
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if shape(mid).sum() > 0:
            lo = mid
        else:
            hi = mid
    x = shape(0.5 * (lo + hi))
    x -= x.mean()
    return (x / -x.min()).astype(np.float32)


def rd_of(velocity: int, shout: float = 0.0) -> float:
    """Rd for a MIDI velocity: 127 → 0.9, 1 → 2.0 (soft, more tilt); a shout presses it by 0.3."""
    return 2.0 - 1.1 * (max(1, min(127, velocity)) / 127.0) - 0.3 * shout


@dataclass(frozen=True)
class Pitch:
    """How one voice holds a pitch (a singer of the ensemble, or a caller)."""

    offset_cents: float = 0.0           # the singer's own intonation (ensemble scatter)
    vibrato_hz: float = 5.5
    vibrato_cents: float = 30.0         # extent (± cents)
    vibrato_cv: float = 0.15            # cycle-to-cycle variation of rate and of extent
    vibrato_delay_s: float = 0.2        # from the vowel's onset
    glide_cents: float = 35.0           # onset glide from below
    glide_s: float = 0.08
    drift_cents: float = 4.0            # slow random fluctuation (Saitou's "fine fluctuation")
    jitter: float = 0.004               # local jitter (fraction of a period)


def _vibrato(t: npt.NDArray[np.float64], p: Pitch, start_s: float, end_s: float,
             rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """Vibrato in cents at times ``t``: cycles of their own rate and extent from ``start_s``."""
    out = np.zeros(len(t))
    if p.vibrato_cents <= 0 or p.vibrato_hz <= 0 or end_s <= start_s:
        return out
    n = int((end_s - start_s) * p.vibrato_hz * 1.6) + 2
    rates = p.vibrato_hz * np.clip(1.0 + p.vibrato_cv * rng.standard_normal(n), 0.6, 1.4)
    extents = p.vibrato_cents * np.clip(1.0 + p.vibrato_cv * rng.standard_normal(n), 0.4, 1.6)
    bounds = start_s + np.concatenate(([0.0], np.cumsum(1.0 / rates)))
    inside = (t >= start_s) & (t < bounds[-1])
    k = np.clip(np.searchsorted(bounds, t[inside], side="right") - 1, 0, n - 1)
    phase = (t[inside] - bounds[k]) * rates[k]
    fade = np.minimum(1.0, (t[inside] - start_s) * p.vibrato_hz)     # one cycle to full depth
    out[inside] = extents[k] * fade * np.sin(2 * math.pi * phase)
    return out


def f0_track(hz: float, total_s: float, vowel_s: float, end_s: float, p: Pitch, seed: int,
             tone: int | None = None, contour_st: tuple[float, ...] | None = None) -> npt.NDArray[np.float64]:
    """F0 (Hz) at :data:`CONTROL_HZ` over ``total_s``: sung (``tone`` None) the note's pitch with
    the onset glide at ``vowel_s`` and vibrato; spoken, from ``vowel_s`` to ``end_s`` around ``hz``
    the contour ``contour_st`` (semitones, at equal steps; the compiler's prosody) or else the
    tone's own (Chao's letters). Jitter is per glottal period, slow drift throughout."""
    rng = np.random.default_rng(seed)
    n = max(2, int(math.ceil(total_s * CONTROL_HZ)) + 1)
    t = np.arange(n) / CONTROL_HZ
    cents = np.full(n, p.offset_cents)
    if tone is None:
        cents -= p.glide_cents * np.exp(-np.maximum(t - vowel_s, 0.0) / max(p.glide_s / 3, 1e-3))
        cents += _vibrato(t, p, vowel_s + p.vibrato_delay_s, end_s, rng)
    else:
        u = np.clip((t - vowel_s) / max(end_s - vowel_s, 1e-3), 0.0, 1.0)
        if contour_st is not None and len(contour_st) >= 2:
            cents += 100.0 * np.interp(u, np.linspace(0.0, 1.0, len(contour_st)), contour_st)
        else:
            level = np.interp(u, (0.0, 0.5, 1.0), TONE_LEVELS.get(tone, TONE_LEVELS[5]))
            cents += 100.0 * SEMITONES_PER_LEVEL * (level - 3.0)
    knots = rng.standard_normal(int(total_s * 8) + 3)            # drift: a knot every 125 ms
    cents += p.drift_cents * np.interp(t * 8, np.arange(len(knots)), knots)
    f0 = hz * np.exp2(cents / 1200.0)
    if p.jitter > 0:                                # one factor per nominal glottal period
        periods = np.floor(np.cumsum(f0) / CONTROL_HZ).astype(np.int64)
        # Praat's local jitter of independent periods is 2/√π ≈ 1.128 × their relative SD
        factors = 1.0 + (p.jitter / 1.128) * rng.standard_normal(int(periods[-1]) + 1)
        f0 = f0 / factors[periods]
    return f0

"""One voice singing, calling or speaking one syllable: an LF glottal source
(:mod:`yuexuan.audio.voice.glottal`) with jitter, shimmer and aspiration noise, through a cascade of five
formant resonators that follow the syllable's articulation (:mod:`yuexuan.audio.voice.articulation`),
with its consonant's bursts and frication added as band-pass noise (a Klatt-style cascade/parallel
synthesiser: Klatt 1980, JASA 67(3)).

The resonators are Klatt's two-pole sections (unity gain at 0 Hz), switched every 5 ms while the
formants move and run as one filter where they hold: numpy/scipy has no time-varying formant
filter. Figures: shimmer as a setting (healthy voices' local shimmer under about 3.8 %, Praat's
own pathology bound, after Baken & Orlikoff 2000: the settings are lower, since the breath,
jitter and vibrato add to what Praat measures); aspiration noise that flows with the glottal
cycle (open for :data:`OPEN_PHASE` of each period, a leak of :data:`CLOSED_BREATH` while closed:
the breath of a voice is pulsed at F0, Klatt & Klatt 1990, JASA 87(2)) through the formants, and
its part above the cascade, 4–9 kHz (the tract's upper resonances: Klatt 1980's parallel F6 lies
at 4.9 kHz), gated by the same cycle at the full rate, set so that a held vowel's (1–3 kHz) −
(5–8 kHz) is about 32–35 dB (FluidR3's Choir Aahs 27.4 dB, espeak-ng 20.9 dB, measured for
issue 30).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio import dsp
from yuexuan.audio.voice import glottal
from yuexuan.audio.voice.articulation import Articulation, articulate, release_s
from yuexuan.pronunciation import Reading

STEP_S = 0.005                    # formant control step while they move
OPEN_PHASE = 0.6                  # the share of a glottal period the glottis is open (breath flows)
CLOSED_BREATH = 0.3               # breath while it is closed, re open (a glottal chink's leak)
HIGH_BAND_HZ = (5000.0, 10000.0)   # the breath's band above the cascade: the tract's upper resonances
SPEAKING_HZ = 110.0               # a man's speaking F0 (Peterson & Barney 1952: men's mean ≈ 132 Hz)


@dataclass(frozen=True)
class Voice:
    """The settings of a voice (an instrument's ``[synth]`` table, read by :func:`voice_of`)."""

    pitch: glottal.Pitch = field(default_factory=glottal.Pitch)
    shimmer: float = 0.01             # local shimmer (fraction of a period's amplitude)
    aspiration: float = 0.03          # breath noise re the voiced source, through the formants
    high_band: float = 0.05           # breath noise above 4 kHz, re the voiced output's RMS
    shout: float = 0.0                # 0 sung/normal, 1 a shout: F0 up, F1 up, Rd pressed
    attack_s: float = 0.04


def voice_of(p: dict[str, Any]) -> Voice:
    """A :class:`Voice` from an instrument's ``[synth]`` table (defaults for missing keys)."""
    d = glottal.Pitch()
    pitch = glottal.Pitch(
        vibrato_hz=float(p.get("vibrato_hz", d.vibrato_hz)),
        vibrato_cents=float(p.get("vibrato_cents", d.vibrato_cents)),
        vibrato_cv=float(p.get("vibrato_cv", d.vibrato_cv)),
        vibrato_delay_s=float(p.get("vibrato_delay_s", d.vibrato_delay_s)),
        glide_cents=float(p.get("glide_cents", d.glide_cents)),
        jitter=float(p.get("jitter_percent", 100 * d.jitter)) / 100.0)
    return Voice(pitch, float(p.get("shimmer_percent", 100 * Voice.shimmer)) / 100.0,
                 float(p.get("aspiration", Voice.aspiration)), float(p.get("high_band", Voice.high_band)),
                 float(p.get("shout", 0.0)), float(p.get("attack_s", 0.04)))


NOISE_S = 8.0                     # the noise tables' length, s
HALF_TAPS = 8                     # the interpolator's taps each side (Kaiser β 8: images < −60 dB)
_K = np.arange(-HALF_TAPS, HALF_TAPS) + 0.5
HALF_BAND = (np.sinc(_K) * np.kaiser(2 * HALF_TAPS, 8.0)).astype(np.float32)
HALF_BAND /= HALF_BAND.sum()


@lru_cache(maxsize=256)
def _band(lo_hz: float, hi_hz: float, sample_rate: int) -> npt.NDArray[np.float64]:
    """The band cut to what ``sample_rate`` holds: a band above 0.45 × the rate (a fricative's at
    8 kHz) becomes its top third below that, so the consonant keeps a noise of its own."""
    hi = min(hi_hz, 0.45 * sample_rate)
    lo = min(lo_hz, 0.3 * sample_rate)
    return dsp.butter_bandpass_sos(2, lo, hi, sample_rate)


@lru_cache(maxsize=64)
def _noise(sample_rate: int, band: tuple[float, float] | None = None) -> npt.NDArray[np.float32]:
    """A fixed table of Gaussian noise (white, or band-passed to ``band``; unit RMS): a take reads
    it from its own seeded offset, so no take draws noise sample by sample."""
    if band is None:
        return np.random.default_rng(20251202).standard_normal(int(NOISE_S * sample_rate)).astype(np.float32)
    # each band from the one white table (drawing it took half of a band's 10 ms), in float32
    x = dsp.sosfilt(_band(band[0], band[1], sample_rate).astype(np.float32), _noise(sample_rate))
    x *= np.float32(1.0 / math.sqrt(float(np.mean(np.square(x, dtype=np.float64)))))
    return x


def _slice(table: npt.NDArray[np.float32], n: int, rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """``n`` samples of a noise table from a random offset (wrapping if the table is shorter)."""
    if n >= len(table):
        return np.resize(table, n)
    a = int(rng.integers(0, len(table) - n))
    return table[a:a + n]


def _resonators(fb: npt.NDArray[np.float64], sample_rate: int) -> npt.NDArray[np.float64]:
    """Klatt two-pole resonators for rows of (F, B) pairs: (…, 5, 6) second-order sections."""
    f = np.minimum(fb[..., 0], 0.45 * sample_rate)
    r = np.exp(-math.pi * fb[..., 1] / sample_rate)
    a1 = -2.0 * r * np.cos(2 * math.pi * f / sample_rate)
    a2 = r * r
    sos = np.zeros((*f.shape, 6))
    sos[..., 0] = 1.0 + a1 + a2                 # unity gain at 0 Hz
    sos[..., 3] = 1.0
    sos[..., 4] = a1
    sos[..., 5] = a2
    return sos


def _formant_filter(x: npt.NDArray[np.float32], art: Articulation, total_s: float,
                    sample_rate: int) -> npt.NDArray[np.float32]:
    """``x`` through the cascade, its formants following ``art``'s keyframes (a 5 ms step where a
    formant moves by more than 1 %, one run where they hold). Works in place on ``x``."""
    times = np.array([k[0] for k in art.formants])
    fb = np.array([k[1] for k in art.formants])                   # (keys, 5, 2)
    grid = np.arange(0.0, total_s + STEP_S, STEP_S)
    flat = fb.reshape(len(times), -1)
    track = np.stack([np.interp(grid, times, flat[:, j]) for j in range(flat.shape[1])], axis=1)
    starts = [0]
    rows = track.tolist()               # floats: a step's ten comparisons in Python, not numpy calls
    ref = rows[0]
    for k in (np.flatnonzero(np.any(np.abs(track[1:] - track[:-1]) > 1e-9, axis=1)) + 1).tolist():
        row = rows[k]
        if any(abs(v - r) > 0.01 * r for v, r in zip(row, ref)):
            starts.append(k)
            ref = row
    sos_all = _resonators(track[starts].reshape(len(starts), 5, 2), sample_rate).astype(x.dtype)
    zi = np.zeros((1, 5, 2), dtype=x.dtype)
    bounds = [int(round(grid[s] * sample_rate)) for s in starts] + [len(x)]
    row = x.reshape(1, -1)
    kernel = dsp.SOS_KERNEL.get()   # in place, the state carried in zi from one run to the next
    for run in range(len(starts)):
        a, b = bounds[run], min(bounds[run + 1], len(x))
        if b > a:
            kernel(np.ascontiguousarray(sos_all[run]), row[:, a:b], zi)
    return x


def render(reading: Reading, hz: float | None, held_s: float, velocity: int, sample_rate: int,
           seed: int, voice: Voice = Voice(),
           f0_st: tuple[float, ...] | None = None) -> tuple[npt.NDArray[np.float32], int]:
    """One syllable: (float32 mono, peak 1; the samples before the vowel's onset). ``hz`` None:
    spoken around a speaking pitch raised by ``voice.shout``, on the F0 contour ``f0_st``
    (semitones re that pitch, the compiler's prosody) or else on the syllable's tone alone."""
    sung = hz is not None
    shout = voice.shout
    art = articulate(reading, max(0.05, held_s), f1_factor=1.0 + 0.3 * shout, sung=sung)
    release = release_s(sung)
    total_s = art.end_s + release
    n = int(math.ceil(total_s * sample_rate))
    lead = int(round(art.lead_s * sample_rate))
    # the voiced sound (source, breath, formants: nothing of it above 6 kHz matters) is made at half
    # the rate and interpolated up; the noise bands above it are added at the full rate
    half = sample_rate >= 32000 and sample_rate % 2 == 0
    rate = sample_rate // 2 if half else sample_rate
    m_int = int(math.ceil(total_s * rate)) + 1
    rng = np.random.default_rng(seed)
    base = hz if hz is not None else SPEAKING_HZ * 2 ** (shout * 0.8)   # a shout: up to ~0.8 octave
    pitch = voice.pitch if sung else glottal.Pitch(vibrato_cents=0.0, glide_cents=0.0,
                                                   jitter=voice.pitch.jitter, drift_cents=8.0)
    f0 = glottal.f0_track(base, total_s, art.lead_s, art.end_s, pitch, int(rng.integers(2**31)),
                          tone=None if sung else reading.tone, contour_st=None if sung else f0_st)
    # glottal phase per sample (F0 held over each 1 ms control step)
    step = rate // glottal.CONTROL_HZ if rate % glottal.CONTROL_HZ == 0 else 0
    if step:
        phase = np.cumsum(np.repeat(f0 / rate, step)[:m_int])
    else:
        t_ctl = np.arange(m_int) * (glottal.CONTROL_HZ / rate)
        phase = np.cumsum(f0[np.minimum(t_ctl.astype(np.int64), len(f0) - 1)] / rate)
    period = phase.astype(np.int64)
    table = glottal.lf_period(round(glottal.rd_of(velocity, shout), 2))
    size = len(table)
    pos = ((phase - period) * size).astype(np.int32)
    shim = (1.0 + (voice.shimmer / 1.128) * rng.standard_normal(int(period[-1]) + 2)).astype(np.float32)
    kt = np.array([key[0] for key in art.voicing] + [total_s])
    kv = np.array([key[1] for key in art.voicing] + [0.0])
    if not sung:                                    # speech: the voice falls over the syllable
        kv = kv * np.interp(kt, (art.lead_s, total_s), (1.0, 0.45))
    voicing = np.interp(np.arange(m_int, dtype=np.float32), kt * rate, kv).astype(np.float32)
    x = table[pos]
    x *= shim[period]
    x *= voicing
    # the glottis open (breath flows) or closed, each sample: the breath follows the glottal cycle
    gate = np.where(pos < int(OPEN_PHASE * size), np.float32(1.0), np.float32(CLOSED_BREATH)) * voicing
    noise = _slice(_noise(rate), m_int, rng)
    breath = noise * gate
    breath *= np.float32(voice.aspiration)
    a0, a1 = art.aspiration
    if a1 > a0:                                    # aspiration of a stop or affricate (its VOT)
        i0, i1 = int(a0 * rate), int(a1 * rate)
        breath[i0:i1] += noise[i0:i1] * np.linspace(0.6, 0.25, i1 - i0, dtype=np.float32)
    x += breath
    low = _formant_filter(x, art, total_s, rate)
    if half:                                       # ×2: the odd samples from a half-band FIR
        out = np.empty(2 * m_int - 1, dtype=np.float32)
        out[0::2] = low
        out[1::2] = dsp.convolve_short(low, HALF_BAND)[HALF_TAPS:HALF_TAPS + m_int - 1]
        out = out[:n]
        full_gate = np.repeat(gate, 2)[:n]
    else:
        out, full_gate = low[:n], gate[:n]
    core = out[lead:max(lead + 1, int(art.end_s * sample_rate))]
    rms = float(np.sqrt(np.mean(core * core))) or 1.0
    if voice.high_band > 0 and sample_rate > 9000:  # the breath above 4 kHz (none below 9 kHz rate):
        hb = _slice(_noise(sample_rate, HIGH_BAND_HZ), n, rng) * full_gate    # in the glottal cycle
        hb *= np.float32(voice.high_band * rms)
        out += hb
    for start_s, len_s, band, level in art.noises:
        a = int(start_s * sample_rate)
        m = max(1, min(int(len_s * sample_rate), n - a))
        seg = _slice(_noise(sample_rate, band), m, rng)
        if len_s > 0.03:                            # frication: 8 ms attack, fading under the vowel
            env = np.minimum(1.0, np.arange(m) / (0.008 * sample_rate)) \
                * np.minimum(1.0, (m - np.arange(m)) / (0.4 * m))
        else:                                       # a burst
            env = np.exp(-np.arange(m) / (0.3 * m))
        out[a:a + m] += (seg * env * (level * rms)).astype(np.float32)
    peak = float(np.max(np.abs(out))) or 1.0
    out *= np.float32(1.0 / peak)
    return out, lead

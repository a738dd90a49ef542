"""Synthesis of one note by instrument family, in numpy.

Every function here is pure: :func:`note` depends only on the family, the instrument's ``[synth]``
table, the frequency (Hz), the velocity, the duration (s), the sample rate and the noise seed, and
returns a new array. Nothing is cached here; the renderer's cache of waveforms (filled on worker
threads) is :mod:`yuexuan.audio.engine.notecache`.

Families (``instruments/*.toml`` ``family``):

- ``bell``   two-tone Zhou bell struck at the 正鼓: one decaying mode at each measured partial
  (``partials``, ratios to the 正鼓 tone: the 侧鼓 tone ``second_tone_ratio``, its octave, the
  (3,0) doublet 2.81/3), shorter decays for higher partials (docs/render.md, "Bells and stones").
- ``stone``  磬: inharmonic modes (``partials``) with a bright noise click at the attack.
- ``drum``   :mod:`yuexuan.audio.synthesis.drums`: a stick's contact pulse driving membrane modes and the
  dense modes above them; ``rattle_strokes`` makes the 鼗's twirl of pellet strikes.
- ``string`` 瑟: modal plucked string (harmonics with slight stiffness, higher ones decaying faster,
  pluck-position spectrum, body resonances ``body_hz``).
- ``pipe``   簜: harmonics (``harmonics``), breath noise, vibrato.
- ``free_reed`` 笙 and 和: :mod:`yuexuan.audio.synthesis.free_reed`: a free reed's pulsed flow
  through its pipe's resonances (odd and even harmonics), its swing growing over 30–120 ms.
- ``voice``  歌 and the calls: a singer's take of the syllable (:mod:`yuexuan.audio.voice.takes`: an LF
  glottal source through moving formants, its consonant before the note's time); without a pitch
  (``hz`` None: a spoken call) on the syllable's tone. An ensemble's singer is ``singer`` ≥ 0.

A pitched note's nominal frequency is always its strongest partial over the first second. Noise
comes from ``seed`` (derive it from the note's identity: :func:`seed_of`). Output: float32 mono,
peak about 1 at velocity 127.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.dsp import butter_bandpass_sos, sosfilt
from yuexuan.audio.synthesis import drums, free_reed
from yuexuan.audio.synthesis.primitives import (
    DECAY_SPAN,
    RELEASE_S,
    RELEASE_T60_S,
    burst,
    envelope,
    noise,
    normalise,
    sustained,
    wavetable,
    without_dc,
)
from yuexuan.audio.voice import takes
from yuexuan.pronunciation import Reading

#: the longest a struck body rings, s (its tail is faded out over the last 10 %).
RING_CAP_S = {"bell": 9.0, "stone": 5.0, "string": 6.0}   # drums: drums.RING_CAP_S
SUSTAINED = ("pipe", "voice", "free_reed")   # families held for the note's duration; the others ring out
#: time constants a stone with a ``loss_factor`` (or a string with a ``t60_s``) rings for: e^−8 is
#: −69 dB, so with the fade of its last 10 % the note ends below −60 dB re its peak, never cut
STONE_SPAN = 8.0
T60_PER_TAU = math.log(1000.0)   # T60 = 6.91 τ


def seed_of(*identity: object) -> int:
    """A 32-bit noise seed from a note's identity (instrument, Hz, velocity bucket, …)."""
    return zlib.crc32(repr(identity).encode("utf-8"))


def velocity_gain(velocity: int) -> float:
    """Amplitude for a MIDI velocity (1..127): 127 → 1, 64 → about −10 dB."""
    return (max(1, min(127, int(velocity))) / 127.0) ** 1.6


# ---------------------------------------------------------------------------------------------
# building blocks


def _decaying_sines(out: npt.NDArray[np.float32], start: int, freqs: Sequence[float], amps: Sequence[float],
                    taus: Sequence[float], sample_rate: int,
                    phases: Sequence[float] | None = None) -> None:
    """Add Σ amp·e^(−t/τ)·sin(2πft + φ) into ``out[start:]``, each mode only while it lasts.

    Uses a complex power series built by doubling (≈ 2 flops a sample), float64 ratios cast to
    complex64: frequency error far below a cent.
    """
    n_out = len(out) - start
    nyq = 0.45 * sample_rate
    work = None
    for k, (f, a, tau) in enumerate(zip(freqs, amps, taus)):
        if f <= 0 or f >= nyq or a == 0 or tau <= 0:
            continue
        n = min(n_out, int(math.ceil(DECAY_SPAN * tau * sample_rate)))
        if n <= 0:
            continue
        if work is None or len(work) < n:
            work = np.empty(n_out, dtype=np.complex64)
        w = work[:n]
        z = complex(np.exp(complex(-1.0 / (tau * sample_rate), 2 * math.pi * f / sample_rate)))
        ph = 0.0 if phases is None else phases[k]
        w[0] = a * complex(math.cos(ph), math.sin(ph))
        filled = 1
        while filled < n:
            m = min(filled, n - filled)
            np.multiply(w[:m], np.complex64(z ** filled), out=w[filled:filled + m])
            filled += m
        out[start:start + n] += w.imag


def _fade_tail(x: npt.NDArray[np.float32], fraction: float = 0.1) -> npt.NDArray[np.float32]:
    n = max(1, int(len(x) * fraction))
    x[-n:] *= np.linspace(1.0, 0.0, n, dtype=np.float32)
    return x


def _dc_free(x: npt.NDArray[np.float32], tau_s: float, sample_rate: int) -> npt.NDArray[np.float32]:
    """``x`` without DC (in place): a decaying sine starting from zero sums to about 1/ω of its
    amplitude, so a 鑮's note alone carried DC at −57 to −62 dB re its RMS; it is taken out along
    the slowest mode's envelope (e^(−t/τ)), which starts with the note."""
    shape = np.exp(-np.arange(len(x), dtype=np.float64) / (max(tau_s, 1e-3) * sample_rate))
    return without_dc(x, shape)


def _ring_samples(family: str, taus: Sequence[float], sample_rate: int) -> int:
    return int(min(RING_CAP_S[family], DECAY_SPAN * max(taus)) * sample_rate)


# ---------------------------------------------------------------------------------------------
# families


#: Shen 1987 (Sci. Am. 256(4), p. 107): the partials of a minor-third zhong, ratios to the 正鼓 tone.
MINOR_THIRD_BELL = (1.0, 1.2, 2.4, 2.81, 3.0)


def bell(p: dict[str, Any], hz: float, velocity: int, sample_rate: int, seed: int) -> npt.NDArray[np.float32]:
    """Two-tone bell struck at the 正鼓: one exponentially decaying mode per measured partial
    (``partials`` × hz, the 侧鼓 tone among them), the higher ones brighter when struck harder;
    a soft strike thump."""
    partials = list(p.get("partials", MINOR_THIRD_BELL))
    amps = list(p.get("amplitudes", [1.0] + [0.3] * (len(partials) - 1)))
    taus = list(p.get("decay_s", [1.0] * len(partials)))
    bright = 0.55 + 0.45 * velocity / 127.0
    n = _ring_samples("bell", taus, sample_rate)
    out = np.zeros(n, dtype=np.float32)
    _decaying_sines(out, 0, [hz * m for m in partials],
                    [a * bright ** k for k, a in enumerate(amps)], taus, sample_rate)
    rng = np.random.default_rng(seed)
    thump = burst(rng, n, 0.004, sample_rate, cutoff_hz=2.5 * hz)
    out[:len(thump)] += 0.25 * bright * thump
    return normalise(_dc_free(_fade_tail(out), max(taus), sample_rate), 1.0)


def stone_taus(p: dict[str, Any], hz: float) -> list[float]:
    """Time constants (s) of the 磬's modes (``partials`` × hz). With ``loss_factor`` η (the
    stone's material damping, constant Q = 1/η) a mode at f decays as e^(−π η f t): τ = 1/(π η f),
    so T60 = 3 ln 10 · τ; else the file's ``decay_s``."""
    partials = list(p.get("partials", [1.0, 2.76, 5.4, 8.93]))
    eta = p.get("loss_factor")
    if eta is None:
        return list(p.get("decay_s", [1.6, 0.7, 0.35, 0.2]))
    return [1.0 / (math.pi * float(eta) * hz * m) for m in partials]


def _stone_samples(p: dict[str, Any], hz: float | None, sample_rate: int) -> int:
    """A stone rings until its slowest mode is :data:`STONE_SPAN` time constants down (below
    −60 dB re its peak: never cut); without ``loss_factor``, as the other struck bodies."""
    if p.get("loss_factor") is None or hz is None:
        return _ring_samples("stone", list(p.get("decay_s", [1.0])), sample_rate)
    return int(math.ceil(STONE_SPAN * max(stone_taus(p, hz)) * sample_rate))


def stone(p: dict[str, Any], hz: float, velocity: int, sample_rate: int,
          seed: int) -> npt.NDArray[np.float32]:
    """磬: inharmonic modes decaying by the stone's loss factor, bright attack click."""
    partials = list(p.get("partials", [1.0, 2.76, 5.4, 8.93]))
    amps = list(p.get("amplitudes", [1.0, 0.5, 0.25, 0.12]))
    taus = stone_taus(p, hz)
    bright = 0.6 + 0.4 * velocity / 127.0
    n = _stone_samples(p, hz, sample_rate)
    out = np.zeros(n, dtype=np.float32)
    _decaying_sines(out, 0, [hz * m for m in partials], [a * bright ** k for k, a in enumerate(amps)],
                    taus, sample_rate)
    rng = np.random.default_rng(seed)
    click = burst(rng, n, 0.003, sample_rate, cutoff_hz=3000.0, highpass=True)
    out[:len(click)] += float(p.get("attack_noise", 0.15)) * 2.0 * bright * click
    return normalise(_dc_free(_fade_tail(out), max(taus), sample_rate), 1.0)


def string_tau(p: dict[str, Any]) -> float:
    """τ of a string's fundamental, s: ``t60_s`` / 6.91, else the file's ``decay_s``."""
    t60 = p.get("t60_s")
    return float(t60) / T60_PER_TAU if t60 is not None else float(p.get("decay_s", 2.5))


def _string_samples(p: dict[str, Any], sample_rate: int) -> int:
    """A string with ``t60_s`` rings until its fundamental is :data:`STONE_SPAN` time constants
    down (below −60 dB re its peak, never cut); else as the other struck bodies."""
    if p.get("t60_s") is None:
        return _ring_samples("string", [string_tau(p)], sample_rate)
    return int(math.ceil(STONE_SPAN * string_tau(p) * sample_rate))


def string(p: dict[str, Any], hz: float, velocity: int, sample_rate: int,
           seed: int) -> npt.NDArray[np.float32]:
    """瑟: modal plucked string (harmonics, stiffness, faster decay for higher harmonics)."""
    tau1 = string_tau(p)
    bright = float(p.get("brightness", 0.6)) * (0.6 + 0.4 * velocity / 127.0)
    body = list(p.get("body_hz", []))
    pluck = 0.22
    stiff = 1.5e-4
    k = np.arange(1, 41)
    fk = k * hz * np.sqrt(1 + stiff * k * k) / math.sqrt(1 + stiff)
    keep = fk < min(0.45 * sample_rate, 9000.0)
    k, fk = k[keep], fk[keep]
    amps = np.abs(np.sin(k * math.pi * pluck)) / k ** (2.0 - bright)
    for b in body:                                         # body resonances lift nearby harmonics
        amps = amps * (1 + 0.6 / (1 + ((fk - b) / (0.25 * b)) ** 2))
    amps = np.minimum(amps, 0.9 * amps[0])
    amps[0] = amps[0] / 0.9
    taus = tau1 / (1 + 0.12 * (k - 1) + 0.002 * (k - 1) ** 2)
    n = _string_samples(p, sample_rate)
    out = np.zeros(n, dtype=np.float32)
    _decaying_sines(out, 0, fk, amps, taus, sample_rate)
    rng = np.random.default_rng(seed)
    pick = burst(rng, n, 0.002, sample_rate, cutoff_hz=4000.0)
    out[:len(pick)] += 0.1 * amps[0] * pick
    return normalise(_dc_free(_fade_tail(out), tau1, sample_rate), 1.0)


def pipe(p: dict[str, Any], hz: float, velocity: int, duration_s: float, sample_rate: int,
         seed: int) -> npt.NDArray[np.float32]:
    """簜: harmonics plus breath noise in a band (``breath_band_hz``, × the note's frequency at
    its low edge), a slow attack, light vibrato, an exponential release (``release_t60_s``)."""
    harm = list(p.get("harmonics", [1.0, 0.35, 0.5, 0.12, 0.15]))
    harm = [a for h, a in enumerate(harm, start=1) if h * hz < 0.45 * sample_rate]
    n_on = max(1, int(duration_s * sample_rate))
    n = n_on + int(RELEASE_S * sample_rate)
    rng = np.random.default_rng(seed)
    tone = sustained(wavetable(harm), hz, n, sample_rate, float(p.get("vibrato_cents", 6.0)),
                     float(p.get("vibrato_hz", 4.5)), rng.random() * 2 * math.pi)
    low, high = (float(v) for v in p.get("breath_band_hz", (0.7, 4000.0)))
    low_hz = min(low * hz, 0.4 * sample_rate)
    high_hz = min(max(high, 1.5 * low_hz), 0.45 * sample_rate)
    breath = sosfilt(butter_bandpass_sos(2, low_hz, high_hz, sample_rate), noise(rng, n)).astype(np.float32)
    nb = float(p.get("breath_noise", 0.12)) * (0.7 + 0.6 * velocity / 127.0)
    out = tone + nb * breath
    out *= envelope(n, n_on, float(p.get("attack_s", 0.06)), sample_rate,
                    float(p.get("release_t60_s", RELEASE_T60_S)))
    return normalise(out, 1.0)


# ---------------------------------------------------------------------------------------------
# the entry point


def note(family: str, params: dict[str, Any], hz: float | None, velocity: int, duration_s: float,
         sample_rate: int, seed: int = 0, lyric: str | None = None,
         reading: Reading | None = None, singer: int = -1, name: str = "",
         f0_st: tuple[float, ...] | None = None, stroke: int = -1) -> npt.NDArray[np.float32]:
    """One note as float32 mono samples (peak 1). ``hz`` None for unpitched drums and for a
    spoken voice (a call on its syllable's tone).

    Struck families ring out (up to :data:`RING_CAP_S`) whatever the duration; pipe, free reed and
    voice sustain for ``duration_s`` and release over :data:`RELEASE_S`. A voice sings ``reading`` (else
    the reading of ``lyric``), its take starting ``takes.lead_samples`` before the note's time; a
    spoken one follows its F0 contour ``f0_st`` (the note's) where it has one. A drum plays
    ``stroke`` (:func:`yuexuan.audio.synthesis.drums.stroke`; −1 the nominal one).
    """
    velocity = max(1, min(127, int(velocity)))
    if family == "drum":
        return drums.drum(params, velocity, sample_rate, seed, stroke)
    if family == "voice":
        if hz is not None and not hz > 0:
            raise ValueError(f"a voice note needs a positive frequency or None, got {hz!r}")
        return takes.take(params, reading or takes.reading_of(lyric), hz, velocity, duration_s,
                          sample_rate, seed, name, singer, f0_st)
    if hz is None or not hz > 0:
        raise ValueError(f"a {family} note needs a positive frequency, got {hz!r}")
    if family == "bell":
        return bell(params, hz, velocity, sample_rate, seed)
    if family == "stone":
        return stone(params, hz, velocity, sample_rate, seed)
    if family == "string":
        return string(params, hz, velocity, sample_rate, seed)
    if family == "pipe":
        return pipe(params, hz, velocity, duration_s, sample_rate, seed)
    if family == "free_reed":
        return free_reed.free_reed(params, hz, velocity, duration_s, sample_rate, seed)
    raise ValueError(f"unknown instrument family {family!r}")


def length(family: str, params: dict[str, Any], duration_s: float, sample_rate: int,
           hz: float | None = None, reading: Reading | None = None) -> int:
    """Samples :func:`note` returns for these arguments (without rendering); a stone's depends
    on its ``hz``, a voice's on its syllable's ``reading`` (the consonant before the note)."""
    if family == "voice":
        return takes.length(reading or takes.NO_WORDS, duration_s, sample_rate, hz is not None)
    if family in SUSTAINED:
        return max(1, int(duration_s * sample_rate)) + int(RELEASE_S * sample_rate)
    if family == "string":
        return _string_samples(params, sample_rate)
    if family == "drum":
        return drums.length(params, sample_rate)
    if family == "stone":
        return _stone_samples(params, hz, sample_rate)
    return _ring_samples(family, list(params.get("decay_s", [1.0])), sample_rate)

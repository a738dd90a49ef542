"""The voices (歌 and the calls): a sung vowel by formant synthesis at a pitch, or a spoken call
without one (noise through the same formants); the vowel of a syllable."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.blocks import RELEASE_S, burst, envelope, noise, normalise, sustained, wavetable
from yuexuan.audio.dsp import lfilter

#: formants (Hz) and bandwidths (Hz) of sung vowels, a low male voice.
VOWELS = {
    "a": ((800, 80), (1150, 90), (2800, 120)),
    "o": ((450, 70), (800, 80), (2830, 100)),
    "e": ((500, 70), (1100, 90), (2500, 110)),
    "i": ((270, 60), (2290, 100), (3010, 120)),
    "u": ((300, 60), (870, 80), (2240, 100)),
}
#: vowels of syllables that the rite calls or sings often; any other syllable gets a vowel chosen
#: from its code point (no pronunciation dictionary is shipped).
SYLLABLE_VOWEL = {"诺": "o", "获": "o", "呦": "o", "鹿": "u", "鸣": "i", "我": "o", "有": "o",
                  "嘉": "a", "宾": "i", "鼓": "u", "瑟": "e", "吹": "u", "笙": "e", "之": "i",
                  "食": "i", "野": "e", "苹": "i", "人": "e", "好": "a", "示": "i", "周": "o",
                  "行": "a", "曾": "e", "孙": "u", "侯": "o", "氏": "i", "以": "i", "燕": "a",
                  "射": "e", "君": "u", "子": "i", "大": "a", "夫": "u", "乐": "e", "琴": "i",
                  "留": "o", "扬": "a", "方": "a"}


def vowel_of(syllable: str | None) -> str:
    """The sung vowel (a key of :data:`VOWELS`) for a syllable; ``a`` when there are no words."""
    if not syllable:
        return "a"
    ch = syllable[0]
    return SYLLABLE_VOWEL.get(ch) or "aoeiu"[ord(ch) % 5]


def sung(p: dict[str, Any], hz: float, velocity: int, duration_s: float, sample_rate: int, seed: int,
         vowel: str = "a", consonant: bool = False) -> npt.NDArray[np.float32]:
    """Sung vowel by formant synthesis: a glottal harmonic source shaped by the vowel's formants.

    The fundamental is kept the strongest harmonic (the nominal pitch leads).
    """
    formants = VOWELS.get(vowel, VOWELS["a"])
    kmax = int(min(0.45 * sample_rate, 5000.0) / hz)
    h = np.arange(1, max(2, kmax + 1))
    f = h * hz
    env = np.zeros(len(h))
    for i, (fc, bw) in enumerate(formants):
        env += (0.7 ** i) / np.sqrt((1 - (f / fc) ** 2) ** 2 + (f * bw / fc ** 2) ** 2)
    amps = env / h                                        # −6 dB/octave source incl. radiation
    amps = amps / amps.max()
    amps[1:] = np.minimum(amps[1:], 0.9 * max(amps[0], 0.05))
    amps[0] = max(amps[0], amps[1:].max(initial=0) / 0.9)
    n_on = max(1, int(duration_s * sample_rate))
    n = n_on + int(RELEASE_S * sample_rate)
    rng = np.random.default_rng(seed)
    out = sustained(wavetable(amps), hz, n, sample_rate, float(p.get("vibrato_cents", 12.0)),
                    float(p.get("vibrato_hz", 5.0)), rng.random() * 2 * math.pi)
    out *= envelope(n, n_on, float(p.get("attack_s", 0.06)), sample_rate)
    if consonant:
        fricative_onset(out, rng, sample_rate)
    return normalise(out, 1.0)


def fricative_onset(out: npt.NDArray[np.float32], rng: np.random.Generator, sample_rate: int) -> None:
    """Add a short fricative onset for the syllable into ``out`` (peak about 1)."""
    c = burst(rng, len(out), 0.012, sample_rate, cutoff_hz=2500.0, highpass=True)
    out[:len(c)] += 0.25 * c


def spoken(p: dict[str, Any], velocity: int, duration_s: float, sample_rate: int, seed: int, vowel: str = "a",
           consonant: bool = False) -> npt.NDArray[np.float32]:
    """A spoken call without a pitch: noise through the vowel's formants (parallel two-pole
    resonators, bandwidths ``whisper_bandwidth`` times the sung ones), so no harmonic series;
    the voice falls by half over the syllable. Hand-written resonators: scipy has no formant filter."""
    widen = float(p.get("whisper_bandwidth", 3.5))
    n_on = max(1, int(duration_s * sample_rate))
    n = n_on + int(RELEASE_S * sample_rate)
    rng = np.random.default_rng(seed)
    source = noise(rng, n)
    out = np.zeros(n, dtype=np.float32)
    for i, (fc, bw) in enumerate(VOWELS.get(vowel, VOWELS["a"])):
        r = math.exp(-math.pi * bw * widen / sample_rate)
        den = [1.0, -2.0 * r * math.cos(2 * math.pi * fc / sample_rate), r * r]
        out += ((0.7 ** i) * (1.0 - r) * lfilter([1.0], den, source)).astype(np.float32)
    out = normalise(out, 1.0)
    out *= envelope(n, n_on, float(p.get("attack_s", 0.04)), sample_rate)
    out *= np.linspace(1.0, 0.5, n, dtype=np.float32)
    if consonant:
        fricative_onset(out, rng, sample_rate)
    return normalise(out, 1.0)

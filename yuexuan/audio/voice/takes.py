"""The voices (歌 and the calls): one take of one voice on one syllable, sung at a pitch or spoken
(called) on its tone, by :mod:`yuexuan.audio.voice.singer` from the syllable's reading
(:mod:`yuexuan.pronunciation`); the singers of an ensemble (:mod:`yuexuan.audio.voice.ensemble`).

A take starts at its consonant's onset: :func:`lead_samples` before the note's time, so that the
vowel lands on the note's time (the beat stays where the timeline puts it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan import pronunciation
from yuexuan.audio.voice import ensemble, singer
from yuexuan.audio.voice.articulation import lead_s, release_s
from yuexuan.pronunciation import Reading

NO_WORDS = Reading("", "a", 5)         # a voice without words sings "a"


def reading_of(syllable: str | None) -> Reading:
    """The reading of a syllable alone (pinyin with tone number, or a character); "a" without words."""
    if not syllable:
        return NO_WORDS
    if syllable[0].isascii():
        return pronunciation.split(syllable)
    return pronunciation.read_syllable(syllable)


def lead_samples(reading: Reading, sample_rate: int) -> int:
    """Samples of a take before its vowel's onset (the consonant)."""
    return int(round(lead_s(reading) * sample_rate))


def length(reading: Reading, held_s: float, sample_rate: int, sung: bool = True) -> int:
    """Samples of a take (consonant, held vowel, release: a spoken one's shorter)."""
    return int(math.ceil((lead_s(reading) + max(0.05, held_s) + release_s(sung)) * sample_rate))


def take(params: dict[str, Any], reading: Reading, hz: float | None, velocity: int, held_s: float,
         sample_rate: int, seed: int, name: str = "", index: int = -1,
         f0_st: tuple[float, ...] | None = None) -> npt.NDArray[np.float32]:
    """One voice's take (float32 mono, peak 1): singer ``index`` of the ensemble ``name`` (own
    intonation and vibrato), or the instrument's single voice (``index`` −1); spoken (``hz`` None)
    on the F0 contour ``f0_st`` where given (semitones re its speaking pitch)."""
    v = singer.voice_of(params)
    if index >= 0:
        v = replace(v, pitch=ensemble.singer_pitch(v.pitch, name, index, ensemble.settings_of(params)))
    x, _ = singer.render(reading, hz, held_s, velocity, sample_rate, seed, v, f0_st)
    n = length(reading, held_s, sample_rate, hz is not None)
    if len(x) != n:
        x = np.pad(x, (0, max(0, n - len(x))))[:n]
    return x


def dry_line(params: dict[str, Any], said: Sequence[tuple[Reading, float, float, tuple[float, ...]]],
             velocity: int, sample_rate: int, seed: int, name: str = "",
             level: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]] = lambda x: x,
             ) -> npt.NDArray[np.float32]:
    """Syllables said one after another by the instrument's voice, unplaced (``yuexuan note`` of a
    formula): each (reading, onset s, held s, F0 contour st) spoken from its onset, its consonant
    before it, each take scaled by ``level`` (the render's levelling), as the render places them.
    Peak 1; sample 0 is the first consonant's onset."""
    starts = [int(round(t * sample_rate)) - lead_samples(r, sample_rate) for r, t, _, _ in said]
    first = min(starts)
    parts = [level(take(params, r, None, velocity, held, sample_rate, seed + 7919 * k, name, f0_st=f0))
             for k, (r, _, held, f0) in enumerate(said)]
    out = np.zeros(max(s - first + len(x) for s, x in zip(starts, parts)), dtype=np.float32)
    for s, x in zip(starts, parts):
        out[s - first:s - first + len(x)] += x
    return out * np.float32(1.0 / (float(np.abs(out).max()) or 1.0))


def dry_ensemble(params: dict[str, Any], reading: Reading, hz: float | None, velocity: int,
                 held_s: float, sample_rate: int, seed: int, name: str,
                 count: int) -> npt.NDArray[np.float32]:
    """``count`` singers together, unplaced (``yuexuan note --voices N``): each its own take, onset
    and level (one rendition); one voice alone is the instrument's own voice. Peak 1."""
    if count <= 1:
        return take(params, reading, hz, velocity, held_s, sample_rate, seed, name)
    st = ensemble.settings_of(params)
    offsets, gains = ensemble.rendition(seed, count, st)
    shift = np.round((offsets - offsets.min()) * sample_rate).astype(int)
    n = length(reading, held_s, sample_rate, hz is not None)
    out = np.zeros(n + int(shift.max()), dtype=np.float32)
    for i in range(count):
        x = take(params, reading, hz, velocity, held_s, sample_rate, seed + 7919 * (i + 1), name, i)
        out[shift[i]:shift[i] + n] += np.float32(gains[i]) * x
    return out * np.float32(1.0 / (float(np.abs(out).max()) or 1.0))

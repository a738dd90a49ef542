"""Which notes share one rendered waveform (:class:`NoteKey`), and the bounded cache of them.

Notes of one instrument with equal frequency, velocity bucket, held length (sustained families,
per 50 ms) and vowel sound identical up to gain, so each key is synthesised once. The cache is
the only state of the renderer's synthesis: :meth:`NoteCache.prefetch` fills it on worker
threads; an evicted waveform is rebuilt identically (synthesis is a pure function of the key).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.audio import synth
from yuexuan.audio.voice import vowel_of

VELOCITY_BUCKETS = (40, 80, 112)     # timbre is rendered at these velocities; gain is exact
DURATION_STEP_S = 0.05               # sustained notes are cached per 50 ms of duration


class NoteKey(NamedTuple):
    """Identity of a cached waveform: notes with equal keys sound identical (up to gain)."""

    instrument: str
    hz: float | None                 # None for unpitched bodies
    velocity: int                    # the velocity bucket the timbre is rendered at
    duration_s: float                # held length (sustained families), else 0.0
    vowel: str | None                # voices: the sung vowel, else None
    sung: bool                       # voices: the note has a syllable (a consonant onset)

    def seed(self) -> int:
        """The noise seed of this waveform (from its identity, never a global RNG)."""
        syllable = None if self.vowel is None else (self.vowel, self.sung)
        return synth.seed_of(self.instrument, self.hz, self.velocity, self.duration_s, syllable)


def velocity_bucket(velocity: int) -> int:
    """The representative velocity whose timbre a note of ``velocity`` uses."""
    return min(VELOCITY_BUCKETS, key=lambda b: abs(b - velocity))


def note_key(instrument: str, family: str, hz: float | None, velocity: int, duration_s: float,
             lyric: str | None) -> NoteKey:
    """The :class:`NoteKey` of a note."""
    dur = round(round(duration_s / DURATION_STEP_S) * DURATION_STEP_S, 3) \
        if family in synth.SUSTAINED else 0.0
    voice = family == "voice"
    return NoteKey(instrument, None if hz is None else round(float(hz), 6),
                   velocity_bucket(velocity), dur, vowel_of(lyric) if voice else None,
                   voice and bool(lyric))


def note_from_key(key: NoteKey, family: str, params: dict[str, Any],
                  sample_rate: int) -> npt.NDArray[np.float32]:
    """Render the waveform ``key`` stands for (float32 mono; seeded by the key)."""
    return synth.note(family, params, key.hz, key.velocity, key.duration_s, sample_rate,
                      seed=key.seed(), lyric="·" if key.sung else None, vowel=key.vowel)


class NoteCache:
    """Bounded LRU of rendered waveforms by :class:`NoteKey` (bytes limit ``max_bytes``).

    ``make(key)`` builds a waveform on a miss; an evicted entry is rebuilt identically.
    """

    def __init__(self, make: Callable[[Any], npt.NDArray[np.float32]],
                 max_bytes: int = 160 * 2 ** 20) -> None:
        self._make = make
        self._max = max_bytes
        self._data: OrderedDict[Hashable, npt.NDArray[np.float32]] = OrderedDict()
        self._bytes = 0
        self.hits = self.misses = 0

    def prefetch(self, keys: Iterable[Hashable], workers: int = 2,
                 tick: Callable[[], None] | None = None) -> None:
        """Build the missing waveforms of ``keys`` (in that order) on ``workers`` threads, while
        they fit in the byte limit. The result is the same as building them on demand.

        ``tick()`` is called in this thread after each waveform; if it raises, the waveforms not
        yet started are cancelled and the exception goes on once the running ones end."""
        todo = [k for k in dict.fromkeys(keys) if k not in self._data]
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            for key, arr in zip(todo, pool.map(self._make, todo)):
                if tick is not None:
                    tick()
                if self._bytes + arr.nbytes > self._max:
                    break
                self._data[key] = arr
                self._bytes += arr.nbytes
                self.misses += 1
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def get(self, key: Hashable) -> npt.NDArray[np.float32]:
        arr = self._data.get(key)
        if arr is not None:
            self._data.move_to_end(key)
            self.hits += 1
            return arr
        self.misses += 1
        arr = self._make(key)
        self._data[key] = arr
        self._bytes += arr.nbytes
        while self._bytes > self._max and len(self._data) > 1:
            _, old = self._data.popitem(last=False)
            self._bytes -= old.nbytes
        return arr

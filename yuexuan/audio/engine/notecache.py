"""Which notes share one rendered waveform (:class:`NoteKey`), and the bounded cache of them.

Notes of one instrument with equal frequency, velocity bucket, held length (sustained families,
per 50 ms) and, for a voice, syllable (its reading; the tone only when spoken) and singer sound
identical up to gain, so each key is synthesised once. An ensemble's singers are keys of their own
(per-singer takes); :mod:`yuexuan.audio.engine.plan` varies each rendition's onsets and levels. The cache is
the only state of the renderer's synthesis: :meth:`NoteCache.prefetch` fills it in forked worker
processes (:mod:`yuexuan.audio.engine.workers`); an evicted waveform is rebuilt identically
(synthesis is a pure function of the key).
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.audio.engine import arena as shared
from yuexuan.audio.engine import workers
from yuexuan.audio.synthesis import synth
from yuexuan.audio.voice import takes
from yuexuan.pronunciation import Reading

VELOCITY_BUCKETS = (40, 80, 112)     # timbre is rendered at these velocities; gain is exact
DURATION_STEP_S = 0.05               # sustained notes are cached per 50 ms of duration
BATCH_KEYS = 8                       # waveforms a worker process builds per task


class NoteKey(NamedTuple):
    """Identity of a cached waveform: notes with equal keys sound identical (up to gain)."""

    instrument: str
    hz: float | None                 # None for unpitched bodies
    velocity: int                    # the velocity bucket the timbre is rendered at
    duration_s: float                # held length (sustained families), else 0.0
    syllable: str | None             # voices: "initial|final|tone" (tone 0 when sung: a note's pitch)
    singer: int = -1                 # voices: the ensemble's singer, −1 for the single voice
    f0_st: tuple[float, ...] | None = None   # a spoken syllable's F0 contour (the note's), else None
    stroke: int = -1                 # drums: which of the drum's strokes (drums.stroke), −1 nominal

    def seed(self) -> int:
        """The noise seed of this waveform (from its identity, never a global RNG)."""
        contour = () if self.f0_st is None else (self.f0_st,)
        stroke = (self.stroke,) if self.stroke >= 0 else ()
        return synth.seed_of(self.instrument, self.hz, self.velocity, self.duration_s, self.syllable,
                             self.singer, *contour, *stroke)

    def reading(self) -> Reading | None:
        if self.syllable is None:
            return None
        initial, final, tone = self.syllable.split("|")
        return Reading(initial, final, int(tone))


def velocity_bucket(velocity: int) -> int:
    """The representative velocity whose timbre a note of ``velocity`` uses."""
    return min(VELOCITY_BUCKETS, key=lambda b: abs(b - velocity))


def note_key(instrument: str, family: str, hz: float | None, velocity: int, duration_s: float,
             lyric: str | None, reading: Reading | None = None, singer: int = -1,
             f0_st: tuple[float, ...] | None = None, stroke: int = -1) -> NoteKey:
    """The :class:`NoteKey` of a note (a voice's ``reading``: else that of ``lyric`` alone; a
    spoken voice's F0 contour ``f0_st``, the note's; a drum's ``stroke``)."""
    dur = round(round(duration_s / DURATION_STEP_S) * DURATION_STEP_S, 3) \
        if family in synth.SUSTAINED else 0.0
    syllable = None
    if family == "voice":
        r = reading or takes.reading_of(lyric)
        syllable = f"{r.initial}|{r.final}|{r.tone if hz is None else 0}"
    return NoteKey(instrument, None if hz is None else round(float(hz), 6),
                   velocity_bucket(velocity), dur, syllable, singer if family == "voice" else -1,
                   tuple(f0_st) if f0_st is not None and family == "voice" and hz is None else None,
                   stroke if family == "drum" else -1)


def lead_samples(key: NoteKey, sample_rate: int) -> int:
    """Samples a key's waveform starts before its note's time (a voice's consonant)."""
    r = key.reading()
    return 0 if r is None else takes.lead_samples(r, sample_rate)


def note_from_key(key: NoteKey, family: str, params: dict[str, Any],
                  sample_rate: int) -> npt.NDArray[np.float32]:
    """Render the waveform ``key`` stands for (float32 mono; seeded by the key)."""
    return synth.note(family, params, key.hz, key.velocity, key.duration_s, sample_rate,
                      seed=key.seed(), reading=key.reading(), singer=key.singer, name=key.instrument,
                      f0_st=key.f0_st, stroke=key.stroke)


class NoteCache:
    """Bounded cache of rendered waveforms by :class:`NoteKey` (bytes limit ``max_bytes``).

    ``make(key)`` builds a waveform (anything with ``nbytes``) on a miss; an evicted entry is
    rebuilt identically. With a ``schedule`` ({key: (start samples, end samples) of its uses, in
    order}) and the mixer's position (:meth:`advance`), the entry evicted is the one needed again
    last (Belady's rule: an ensemble's many takes recur stanza after stanza, which
    least-recently-used would rebuild every time); without one, the least recently used.
    """

    def __init__(self, make: Callable[[Any], Any],
                 max_bytes: int = 192 * 2 ** 20,
                 schedule: dict[Hashable, tuple[list[int], list[int]]] | None = None) -> None:
        self._make = make
        self._max = max_bytes
        self._data: OrderedDict[Hashable, Any] = OrderedDict()     # each with .nbytes
        self._bytes = 0
        self._schedule = schedule
        self._now = 0
        self._pinned: set[Hashable] = set()     # in a shared arena: evicting them frees nothing
        self.misses = 0                         # waveforms built (a prefetch's and on demand)

    def advance(self, sample: int) -> None:
        """The mixer has reached ``sample``: uses ending before it are over."""
        self._now = sample

    def _next_use(self, key: Hashable) -> float:
        if self._schedule is None or key not in self._schedule:
            return math.inf
        starts, ends = self._schedule[key]
        i = bisect.bisect_right(ends, self._now)
        return math.inf if i == len(ends) else max(starts[i], self._now)

    def _evict(self, keep: Hashable) -> None:
        if self._bytes <= self._max:
            return
        if self._schedule is None:                                  # least recently used first
            order = [k for k in self._data if k != keep and k not in self._pinned]
        else:                       # needed again last first; down to 90 % (fewer rounds of this)
            order = sorted((k for k in self._data if k != keep and k not in self._pinned),
                           key=self._next_use, reverse=True)
        for victim in order:
            if self._bytes <= (0.9 * self._max if self._schedule is not None else self._max):
                break
            self._bytes -= self._data.pop(victim).nbytes

    def prefetch(self, keys: Iterable[Hashable], workers_count: int = 2,
                 tick: Callable[[], None] | None = None,
                 group: Callable[[Any], Hashable] | None = None,
                 meanwhile: Callable[[], None] | None = None) -> None:
        """Build the missing waveforms of ``keys`` (in that order) in ``workers_count`` processes,
        this one and forked ones (all here, where the platform cannot fork), while they fit in the
        byte limit. The result is the same as building them on demand.

        Processes, not threads: the synthesis is many numpy calls on arrays of a second or so, and
        two threads waiting on each other for the GIL were hardly faster than one. The forked
        processes put their waveforms' arrays in an :class:`~yuexuan.audio.engine.arena.Arena` of
        the cache's free bytes, not through the pipe; those stay for the cache's life. This one
        keeps its own where they are (no copy: with two forked workers and this one only waiting,
        the copies cost 0.2 s of CPU in the whole ceremony's render). Keys with equal
        ``group(key)`` are built in one task (one process: what they share is made once).
        ``tick()`` is called here while they work; what it raises ends them and goes on.
        ``meanwhile()`` runs here while they work (:func:`workers.share`)."""
        todo = [k for k in dict.fromkeys(keys) if k not in self._data]
        groups: dict[Hashable, list[Hashable]] = {}
        for k in todo:
            groups.setdefault(group(k) if group is not None else k, []).append(k)
        tasks: list[list[Hashable]] = []
        for ks in groups.values():            # small groups share a task, in order
            if tasks and len(tasks[-1]) + len(ks) <= BATCH_KEYS:
                tasks[-1].extend(ks)
            else:
                tasks.append(list(ks))
        forking = workers.available() and workers_count > 0 and len(tasks) > 1
        where = shared.Arena(self._max - self._bytes) if forking else None

        def build(i: int, here: bool) -> list[tuple[Any, bool]]:
            """Task ``i``'s waveforms, each (value, whether its arrays are in the arena)."""
            if where is None or here:
                return [(self._make(k), False) for k in tasks[i]]
            return [shared.pack(self._make(k), where) for k in tasks[i]]

        built = workers.share(build, len(tasks), children=workers_count - 1 if forking else 0,
                              here=True, tick=tick or (lambda: None),
                              meanwhile=meanwhile or (lambda: None))
        for ks, arrs in zip(tasks, built):
            for key, (arr, pinned) in zip(ks, arrs):
                if where is not None and pinned:
                    arr = shared.unpack(arr, where)
                    self._pinned.add(key)
                elif self._bytes + arr.nbytes > self._max:
                    return
                self._data[key] = arr
                self._bytes += arr.nbytes
                self.misses += 1

    def get(self, key: Hashable) -> Any:
        arr = self._data.get(key)
        if arr is not None:
            self._data.move_to_end(key)
            return arr
        self.misses += 1
        arr = self._make(key)
        self._data[key] = arr
        self._bytes += arr.nbytes
        self._evict(key)
        return arr


class Recent:
    """A small thread-safe cache of waveforms by key (least recently used dropped past
    ``max_bytes``): an ensemble's dry takes, made for its seats and used again for its tail."""

    def __init__(self, make: Callable[[Any], npt.NDArray[np.float32]], max_bytes: int) -> None:
        self._make = make
        self._max = max_bytes
        self._data: OrderedDict[Hashable, npt.NDArray[np.float32]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __call__(self, key: Hashable) -> npt.NDArray[np.float32]:
        with self._lock:
            arr = self._data.get(key)
            if arr is not None:
                self._data.move_to_end(key)
                return arr
        arr = self._make(key)
        with self._lock:
            if key not in self._data:
                self._data[key] = arr
                self._bytes += arr.nbytes
            while self._bytes > self._max and len(self._data) > 1:
                _, old = self._data.popitem(last=False)
                self._bytes -= old.nbytes
        return arr

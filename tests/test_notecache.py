"""The note cache's prefetch in forked worker processes: the waveforms come back through the shared
arena (yuexuan/audio/engine/arena.py) equal to those made here, pinned; where the arena is too small,
through the pipe, equal too."""

from __future__ import annotations

import mmap
import os
import time
from typing import NamedTuple

import numpy as np
import pytest

from yuexuan.audio.engine import arena, notecache, workers


class Wave(NamedTuple):
    samples: np.ndarray
    unit: float

    @property
    def nbytes(self) -> int:
        return int(self.samples.nbytes)


def _root(a: np.ndarray) -> object:
    """What an array's memory belongs to, past views."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a.obj if isinstance(a, memoryview) else a


TEST_PROCESS = os.getpid()


def _make(key: int) -> Wave:
    """A waveform per key, of its own length, made in whichever process runs it (slowly in this
    one: the forked worker surely takes some of the tasks)."""
    if os.getpid() == TEST_PROCESS:
        time.sleep(0.02)
    rng = np.random.default_rng(key)
    return Wave((rng.standard_normal((1000 + 37 * key, 2)) * 3000).astype(np.int16), 0.5 + key)


@pytest.mark.skipif(not workers.available(), reason="forked workers are Linux's")
@pytest.mark.parametrize("room", [10 ** 7, 30_000])
def test_prefetch_through_the_arena_gives_what_make_gives(room):
    """All 40 waveforms fit (room 10 MB): those the forked worker made are views of the arena,
    pinned, the others this process's own. Or a few fit (30 kB): the prefetch stops there, the rest
    are made here on demand and evicted in turn, the arena's never (evicting them would free
    nothing)."""
    cache = notecache.NoteCache(_make, max_bytes=room)
    cache.prefetch(range(40))
    pinned = set(cache._pinned)
    # (with little room, which tasks' waveforms reach the arena first is the workers' race)
    if room > 10 ** 6:
        assert 0 < len(pinned) < 40 and len(cache._data) == 40 and cache.misses == 40
    else:
        assert len(pinned) < 40
    for k in range(40):
        got = cache.get(k)
        assert got.unit == 0.5 + k and np.array_equal(got.samples, _make(k).samples)
        assert isinstance(_root(got.samples), mmap.mmap) == (k in pinned)
    assert pinned <= set(cache._data)
    if room < 10 ** 6:                             # the rest made here on demand, evicted in turn
        assert cache.misses == 40 and len(cache._data) < 40
        assert cache._bytes <= room + _make(39).nbytes


def test_arena_put_and_view_round_trip():
    a = arena.Arena(1000)
    x = np.arange(100, dtype=np.int16).reshape(50, 2)
    where = a.put(x)
    assert where is not None and where.offset == 0
    assert np.array_equal(a.view(where), x)
    assert a.put(np.zeros(500, np.int16)) is None          # 200 + 1000 bytes: does not fit
    second = a.put(np.ones(3, np.float32))
    assert second is not None and second.offset == arena.ALIGN * 4     # 200 bytes, aligned to 256
    packed, ok = arena.pack(Wave(x, 2.0), a)
    assert ok and isinstance(packed.samples, arena.Placed)
    back = arena.unpack(packed, a)
    assert back.unit == 2.0 and np.array_equal(back.samples, x)

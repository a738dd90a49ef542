"""Memory shared with forked worker processes, for the arrays they make.

The note cache's synthesis runs in forked processes (:mod:`yuexuan.audio.engine.notecache`). Pickling
their waveforms back through a pipe copied the ceremony's 190 MB four times (pickle, pipe, read,
unpickle): about 0.7 s of CPU. Here a worker copies each array once into an anonymous shared
mapping made before the fork, at an offset taken from a bump pointer under a lock, and sends
back only where it lies; the parent's array is a view of the mapping, no copy. The mapping lasts
as long as any array viewing it. Nothing is ever freed within it (the cache keeps what it holds
for the render's length), so it is sized to the cache's byte limit and a worker whose array does
not fit pickles it as before.
"""

from __future__ import annotations

import mmap
import multiprocessing
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

ALIGN = 64                      # bytes: each array starts on a cache line


class Placed(NamedTuple):
    """Where an array lies in an :class:`Arena`."""

    offset: int
    shape: tuple[int, ...]
    dtype: str


class Arena:
    """``size`` bytes shared by this process and the children it forks afterwards."""

    def __init__(self, size: int) -> None:
        self.size = max(ALIGN, int(size))
        self._buf = mmap.mmap(-1, self.size)            # MAP_SHARED | MAP_ANONYMOUS: kept across fork
        ctx = multiprocessing.get_context("fork")
        self._top = ctx.RawValue("q", 0)
        self._lock = ctx.Lock()

    def put(self, a: npt.NDArray[Any]) -> Placed | None:
        """Copy ``a`` in (any process); None if it does not fit."""
        n = a.nbytes
        with self._lock:
            offset = self._top.value
            if offset + n > self.size:
                return None
            self._top.value = -(-(offset + n) // ALIGN) * ALIGN
        self.view(Placed(offset, a.shape, a.dtype.str))[...] = a
        return Placed(offset, a.shape, a.dtype.str)

    def view(self, where: Placed) -> npt.NDArray[Any]:
        """The array at ``where`` (a view of the shared mapping)."""
        count = int(np.prod(where.shape, dtype=np.int64))
        return np.frombuffer(self._buf, dtype=where.dtype, count=count,
                             offset=where.offset).reshape(where.shape)


def pack(value: Any, arena: Arena) -> tuple[Any, bool]:
    """``value`` with each array (itself, or a field of a named tuple) put into ``arena`` and
    replaced by its :class:`Placed`; and whether all of them fitted (else ``value`` as it was)."""
    if isinstance(value, np.ndarray):
        where = arena.put(value)
        return (value, False) if where is None else (where, True)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        fields = [pack(v, arena) if isinstance(v, np.ndarray) else (v, True) for v in value]
        if all(ok for _, ok in fields):
            return type(value)(*(v for v, _ in fields)), True
    return value, False


def unpack(value: Any, arena: Arena) -> Any:
    """What :func:`pack` put away, as views of ``arena``."""
    if isinstance(value, Placed):
        return arena.view(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(arena.view(v) if isinstance(v, Placed) else v for v in value))
    return value

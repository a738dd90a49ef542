"""Keeping the renderer's memory bounded: glibc's malloc raises its mmap threshold each time a large
block is freed, after which the many take-sized buffers (0.1–1 MB) of the synthesis come from the
heap arenas, one arena per worker thread, and fragment them (the whole ceremony's peak memory grew
by ~250 MB). One arena for the process (:func:`limit_arenas`) keeps the freed buffers reusable by
every thread. Hand-written: neither numpy nor the standard library exposes mallopt."""

from __future__ import annotations

import ctypes
import ctypes.util

M_ARENA_MAX = -8                 # glibc <malloc.h>


def limit_arenas(count: int = 1) -> bool:
    """Let glibc's malloc use at most ``count`` arenas (no effect, False, on another C library)."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_ARENA_MAX, count))
    except (OSError, AttributeError):
        return False

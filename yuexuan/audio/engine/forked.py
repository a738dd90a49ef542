"""A function run in a forked child process, its result pickled back through a pipe.

The renderer's second core: a forked child has the plan and every cached waveform already (copy on
write), so it can mix and write its own stretch of blocks with nothing sent to it. Hand-written
over ``os.fork`` because ``multiprocessing`` pickles the function (a closure over the plan cannot
be pickled) and starts helper threads of its own. Fork only where no other thread of this process
runs (a lock held by one would stay held in the child). Linux and macOS; see :func:`available`.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
PR_SET_PDEATHSIG = 1          # <linux/prctl.h>


def available() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent thread ends (a SIGKILLed render leaves none)."""
    name = ctypes.util.find_library("c")
    if name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))


class Child(Generic[T]):
    """``fn()`` running in a forked child; :meth:`result` waits for what it returned (or raises
    what it raised); :meth:`kill` ends it at once. The child ignores SIGINT and SIGTERM: the
    parent acts on them and kills it."""

    def __init__(self, fn: Callable[[], T]) -> None:
        r, w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:                                   # the child: never returns
            os.close(r)
            code = 0
            try:
                for s in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(s, signal.SIG_IGN)
                _die_with_parent()
                if os.getppid() != parent:            # the parent ended before prctl
                    os._exit(1)
                try:
                    out: tuple[str, object] = ("ok", fn())
                except BaseException as exc:
                    out = ("error", exc)
                try:
                    data = pickle.dumps(out)
                except Exception as exc:
                    data = pickle.dumps(("error", RuntimeError(f"{out[1]!r} ({exc})")))
                view = memoryview(data)
                while view:
                    view = view[os.write(w, view):]
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        self.pid = pid
        self._r: int | None = r

    def result(self) -> T:
        chunks = []
        assert self._r is not None, "result() or kill() was called already"
        try:
            while chunk := os.read(self._r, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(self._r)
            self._r = None
            os.waitpid(self.pid, 0)
        if not chunks:
            raise RuntimeError(f"the render's child process {self.pid} ended without a result")
        kind, value = pickle.loads(b"".join(chunks))
        if kind == "error":
            assert isinstance(value, BaseException)
            raise value
        return value

    def kill(self) -> None:
        if self._r is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.close(self._r)
        self._r = None
        os.waitpid(self.pid, 0)

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
from typing import Any, Generic, TypeVar

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


class Helper:
    """A child forked now that runs ``prepare()`` (a slow import, say) while this process goes on,
    then answers one request: :meth:`call` sends ``request`` (pickled) and returns
    ``answer(request)`` computed there, or None if the child failed (the caller then computes it
    itself, and meets any error there). :meth:`close` ends the child, asked or not. The child
    ignores SIGINT and SIGTERM and dies with this process."""

    def __init__(self, prepare: Callable[[], None], answer: Callable[[Any], Any]) -> None:
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:                                   # the child: never returns
            os.close(self._out)
            os.close(self._in)
            code = 0
            try:
                for s in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(s, signal.SIG_IGN)
                _die_with_parent()
                if os.getppid() != parent:
                    os._exit(1)
                prepare()
                with os.fdopen(to_child, "rb") as r:
                    request = pickle.load(r)
                data = pickle.dumps(answer(request))
                view = memoryview(data)
                while view:
                    view = view[os.write(from_child, view):]
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(to_child)
        os.close(from_child)
        self.pid: int | None = pid

    def call(self, request: Any) -> Any:
        """``answer(request)`` from the child, or None if it failed or was closed."""
        if self.pid is None:
            return None
        try:
            out, self._out = self._out, -1
            with os.fdopen(out, "wb") as w:
                pickle.dump(request, w)
            chunks = []
            while chunk := os.read(self._in, 1 << 20):
                chunks.append(chunk)
            return pickle.loads(b"".join(chunks)) if chunks else None
        except (OSError, pickle.UnpicklingError, EOFError):
            return None
        finally:
            self.close()

    def close(self) -> None:
        if self.pid is None:
            return
        for fd in (self._out, self._in):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.pid = None

"""The render engine's processes: workers forked from this one, sharing a list of tasks.

A forked child has this process's memory (copy on write): the plan and every cached waveform, so
it works with nothing sent to it. Hand-written over ``os.fork`` because ``multiprocessing``
pickles the function (a closure over the plan cannot be pickled) and starts helper threads of its
own. Fork only where no other thread of this process runs (a lock held by one would stay held in
the child): the engine forks before its writer threads start and after they end. Linux only
(:func:`available`); elsewhere every task runs in this process.

The tasks are handed out as 4-byte indices through one pipe filled before the fork: each worker
reads the next one (a 4-byte read of a pipe is atomic) until none is left, so a long task does not
hold the others up. Each child sends back what its tasks returned (or the exception one raised),
pickled, through a pipe of its own, once it has run out of tasks.

A child ends with its parent however the parent ends, SIGKILL included: it asks the kernel for
SIGKILL when its parent thread ends (``PR_SET_PDEATHSIG``, then checks that the parent has not
ended already, which the request would miss), and a parent that is gone leaves its result pipe
without a reader (the child's write fails and it exits). It ignores SIGINT and SIGTERM: the parent
acts on them (at its ``tick``) and kills its children.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import pickle
import select
import signal
import struct
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
PR_SET_PDEATHSIG = 1           # <linux/prctl.h>
INDEX = struct.Struct("<I")    # a task's index in the task pipe
TICK_S = 0.1                   # how often a parent that only waits calls its tick


def available() -> bool:
    """Whether tasks can go to forked workers here (Linux)."""
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def _nothing() -> None:
    """The default tick: nothing to check."""


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """The C library's ``prctl`` (looked up in this process, before any fork), or None."""
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    except (OSError, AttributeError):
        return None


def _die_with_parent(parent: int, prctl: Callable[..., int] | None) -> None:
    """In a new child: SIGKILL when the parent thread ends; exit now if it has ended already."""
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != parent:          # ended before the request: nothing will signal us
        os._exit(1)


def _take(tasks: int) -> int | None:
    """The next task's index from the task pipe, or None when none is left."""
    raw = os.read(tasks, INDEX.size)
    return INDEX.unpack(raw)[0] if len(raw) == INDEX.size else None


def _worker(run: Callable[[int, bool], T], tasks: int, results: int) -> None:
    """A child's life: run the tasks it takes, send back {index: result} or the error; never returns."""
    code = 0
    try:
        done: dict[int, T] = {}
        try:
            while (i := _take(tasks)) is not None:
                done[i] = run(i, False)
            out: tuple[str, object] = ("ok", done)
        except BaseException as exc:
            out = ("error", exc)
        try:
            data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:           # an exception that cannot be pickled
            data = pickle.dumps(("error", RuntimeError(f"{out[1]!r} ({exc})")))
        view = memoryview(data)
        while view:
            view = view[os.write(results, view):]
    except BaseException:
        code = 1
    finally:
        os._exit(code)


class _Child:
    """A forked worker: its pid and the read end of its result pipe."""

    def __init__(self, run: Callable[[int, bool], Any], tasks: int, others: list[int]) -> None:
        r, w = os.pipe()
        parent = os.getpid()
        prctl = _prctl()
        pid = os.fork()
        if pid == 0:                                        # the child
            try:
                for s in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(s, signal.SIG_IGN)
                _die_with_parent(parent, prctl)
                for fd in (r, *others):                    # the other workers' pipes are not ours
                    os.close(fd)
            except BaseException:
                os._exit(1)
            _worker(run, tasks, w)
        os.close(w)
        self.pid = pid
        self.fd = r
        self.data = bytearray()

    def read(self) -> bool:
        """Read what has come; False at the end (the child closed its pipe)."""
        chunk = os.read(self.fd, 1 << 20)
        self.data += chunk
        return bool(chunk)

    def end(self, kill: bool) -> None:
        """Close the pipe and reap the child (killed first with ``kill``)."""
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        os.close(self.fd)
        os.waitpid(self.pid, 0)

    def results(self) -> dict[int, Any]:
        if not self.data:
            raise RuntimeError(f"the render's worker process {self.pid} ended without a result")
        kind, value = pickle.loads(bytes(self.data))
        if kind == "error":
            assert isinstance(value, BaseException)
            raise value
        assert isinstance(value, dict)
        return value


def share(run: Callable[[int, bool], T], count: int, *, children: int = 1, here: bool = True,
          tick: Callable[[], None] = _nothing, meanwhile: Callable[[], None] = _nothing) -> list[T]:
    """``[run(0, …), …, run(count − 1, …)]``, the tasks shared by ``children`` forked workers and,
    with ``here``, this process (each taking the next task not yet taken). ``run(i, here)`` is told
    whether it runs in this process (a child must not report progress or act on signals).
    ``meanwhile()`` runs in this process once the children are forked (first, without them): work
    of its own that the tasks do not need.

    Without forking (a platform that cannot, no children, fewer than two tasks) every task runs
    here, in order. ``tick()`` is called in this process between its own tasks, or every
    :data:`TICK_S` while it waits; whatever it raises (a signal acted on) ends the children at
    once and goes on. An exception a task raised in a child is raised here."""
    if count < 2 or children < 1 or not available():
        meanwhile()
        out = []
        for i in range(count):
            tick()
            out.append(run(i, True))
        return out
    r, w = os.pipe()
    try:
        os.write(w, b"".join(INDEX.pack(i) for i in range(count)))     # ≤ 64 KiB: 16384 tasks
    finally:
        os.close(w)
    workers: list[_Child] = []
    try:
        for _ in range(children):
            workers.append(_Child(run, r, [c.fd for c in workers]))
        meanwhile()
        mine: dict[int, T] = {}
        if here:
            while (k := _take(r)) is not None:
                tick()
                mine[k] = run(k, True)
        waiting = {c.fd: c for c in workers}
        while waiting:
            tick()
            ready, _, _ = select.select(list(waiting), [], [], TICK_S)
            for fd in ready:
                if not waiting[fd].read():
                    del waiting[fd]
        done = dict(mine)
        for c in workers:
            done.update(c.results())
    except BaseException:
        for c in workers:
            c.end(kill=True)
        workers.clear()
        raise
    finally:
        os.close(r)
        for c in workers:
            c.end(kill=False)
    return [done[i] for i in range(count)]

"""A monotonic-clock scheduler: payloads dispatched at absolute deadlines on one thread.

Every deadline is an absolute :func:`time.monotonic` value (seconds), so lateness never
accumulates the way chained ``sleep(delta)`` calls do. The thread waits on a condition until
shortly before a deadline, then spins for the last ``spin_s`` seconds. Each dispatch that sends
something records its timing error, ``sent − due`` (seconds), measured after the send returned.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class TimingSummary:
    """Timing error statistics, milliseconds (error = sent − due)."""

    count: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    min_ms: float

    def line(self) -> str:
        """One human line, e.g. for the end of a show."""
        if not self.count:
            return "timing: no messages sent"
        return (f"timing error over {self.count} messages: p50 {self.p50_ms:.3f} ms, "
                f"p95 {self.p95_ms:.3f} ms, p99 {self.p99_ms:.3f} ms, max {self.max_ms:.3f} ms")


class TimingStats:
    """Collects timing errors (seconds) and summarises them."""

    def __init__(self) -> None:
        self._errors = array("d")
        self._lock = threading.Lock()

    def add(self, error_s: float) -> None:
        with self._lock:
            self._errors.append(error_s)

    def errors_s(self) -> npt.NDArray[np.float64]:
        """All recorded errors, seconds, in dispatch order."""
        with self._lock:
            return np.frombuffer(self._errors, dtype=float).copy()

    def summary(self) -> TimingSummary:
        return summarise(self.errors_s())


def summarise(errors_s: npt.NDArray[np.float64]) -> TimingSummary:
    """p50/p95/p99/max/min of timing errors given in seconds, reported in milliseconds."""
    e = np.asarray(errors_s, dtype=float) * 1e3
    if e.size == 0:
        return TimingSummary(0, *(float("nan"),) * 5)
    p50, p95, p99 = np.percentile(e, [50, 95, 99])
    return TimingSummary(int(e.size), float(p50), float(p95), float(p99), float(e.max()),
                         float(e.min()))


class _Queued(NamedTuple):
    """A heap entry: ``seq`` keeps equal deadlines in the order they were added."""

    due: float
    seq: int
    payload: Any


class Scheduler:
    """Dispatch payloads at absolute monotonic deadlines on a dedicated thread.

    With ``rt_priority`` the thread asks for SCHED_FIFO at that priority (Linux; silently
    stays a normal thread where that is not permitted; see :attr:`realtime`).
    ``dispatch(payload) -> bool`` runs on the scheduler thread, outside the scheduler's lock
    (so it may call :meth:`add`); it returns True when it sent something, and only then is the
    timing error recorded. Payloads that become stale while queued must be recognised and
    ignored by ``dispatch`` itself (e.g. by a generation number); :meth:`cancel` removes the
    ones still queued.
    """

    def __init__(self, dispatch: Callable[[Any], bool], spin_s: float = 0.0005,
                 clock: Callable[[], float] = time.monotonic, name: str = "yuexuan-scheduler",
                 rt_priority: int | None = None):
        self._dispatch = dispatch
        self._rt_priority = rt_priority
        self.realtime = False       # True once the thread runs SCHED_FIFO
        self._spin_s = spin_s
        self._clock = clock
        self._heap: list[_Queued] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._busy = False
        self._error: BaseException | None = None
        self.stats = TimingStats()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    # -- control -----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def close(self, timeout: float = 2.0) -> None:
        """Stop the thread; queued payloads are dropped."""
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._cond.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def error(self) -> BaseException | None:
        """The exception that stopped the thread, if any."""
        return self._error

    def add(self, due: float, payload: Any) -> None:
        """Queue ``payload`` for the absolute monotonic time ``due`` (s)."""
        with self._cond:
            heapq.heappush(self._heap, _Queued(due, next(self._seq), payload))
            self._cond.notify()

    def add_many(self, items: Iterable[tuple[float, Any]]) -> None:
        """Queue many ``(due, payload)`` pairs at once."""
        with self._cond:
            new = [_Queued(due, next(self._seq), payload) for due, payload in items]
            if len(new) * max(1, len(self._heap).bit_length()) < len(self._heap):
                for entry in new:                # a few into many: k·log n < n
                    heapq.heappush(self._heap, entry)
            else:
                self._heap.extend(new)
                heapq.heapify(self._heap)
            self._cond.notify()

    def cancel(self, predicate: Callable[[Any], bool]) -> list[tuple[float, Any]]:
        """Remove and return the queued ``(due, payload)`` pairs whose payload matches."""
        with self._cond:
            gone = [(e.due, e.payload) for e in self._heap if predicate(e.payload)]
            if gone:
                self._heap = [e for e in self._heap if not predicate(e.payload)]
                heapq.heapify(self._heap)
                self._cond.notify()
            return sorted(gone, key=lambda pair: pair[0])

    def pending(self) -> int:
        with self._cond:
            return len(self._heap) + (1 if self._busy else 0)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or being dispatched; False on timeout."""
        end = None if timeout is None else self._clock() + timeout
        with self._cond:
            while (self._heap or self._busy) and not self._closed:
                left = None if end is None else end - self._clock()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(0.05 if left is None else min(left, 0.05))
            return True

    # -- the thread --------------------------------------------------------------------------
    def _next_due(self) -> _Queued | None:
        """Under the lock: the payload now due, or None after waiting a while."""
        if not self._heap:
            self._cond.wait()
            return None
        due, seq = self._heap[0].due, self._heap[0].seq
        wait = due - self._clock()
        if wait > self._spin_s:
            self._cond.wait(wait - self._spin_s)
            return None
        if wait > 0:
            self._cond.release()
            try:
                while self._clock() < due:
                    pass
            finally:
                self._cond.acquire()
            if not self._heap or self._heap[0].seq != seq:
                return None        # cancelled or pre-empted while spinning
        self._busy = True
        return heapq.heappop(self._heap)

    def _become_realtime(self) -> None:
        if self._rt_priority is None or not hasattr(os, "sched_setscheduler"):
            return
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self._rt_priority))
            self.realtime = True
        except OSError:
            pass

    def _run(self) -> None:
        self._become_realtime()
        try:
            while True:
                with self._cond:
                    if self._closed:
                        return
                    entry = self._next_due()
                if entry is None:
                    continue
                try:
                    sent = self._dispatch(entry.payload)
                    if sent:
                        self.stats.add(self._clock() - entry.due)
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
        except BaseException as exc:      # reported to the owner, who stops the show cleanly
            self._error = exc
            with self._cond:
                self._closed = True
                self._cond.notify_all()

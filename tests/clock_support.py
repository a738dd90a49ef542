"""Virtual time for the live show's state machine (``yuexuan.live.show.Show`` and its subclass).

A :class:`VirtualClock` is passed as the show's ``clock``; time then moves only when the test
moves it. :meth:`VirtualClock.advance` steps from one queued deadline of the show's scheduler to
the next: it sets the time to the deadline, wakes the scheduler thread and waits (in real time)
until that thread has dispatched everything due. So every message goes out exactly at its
deadline, whatever the load on the machine, and the test's next command comes after all that was
due before it. Real-time dispatch is measured elsewhere: the scheduler's own tests in
test_live.py, the show over JACK in test_live_jack.py, and bench/bench_live.py.
"""

from __future__ import annotations

import math
import time
from typing import Callable

SETTLE_LIMIT_S = 10.0          # real seconds the scheduler thread may take to catch up


class VirtualClock:
    def __init__(self, start: float = 1024.0):
        self.now = start
        self._sched = None

    def __call__(self) -> float:
        return self.now

    def attach(self, show) -> None:
        """Drive ``show``'s scheduler (call before ``show.start()``)."""
        self._sched = show._sched
        # no busy wait before a deadline: the clock reaches it only through advance()
        self._sched._spin_s = 0.0

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of show time pass, dispatching everything due on the way."""
        self.run(lambda: False, seconds)

    def run(self, until: Callable[[], bool], limit_s: float) -> bool:
        """Advance deadline by deadline until ``until()`` holds (True) or ``limit_s`` seconds
        have passed (False; the clock then stands at that limit)."""
        end = self.now + limit_s
        sched = self._sched
        while True:
            self._settle()
            if until():
                return True
            with sched._cond:
                due = sched._heap[0].due if sched._heap else math.inf
                self.now = max(self.now, min(due, end))
                sched._cond.notify_all()
            if due > end:
                self._settle()
                return until()

    def _settle(self) -> None:
        """Wait until the scheduler thread has dispatched every payload due by now."""
        sched = self._sched
        limit = time.monotonic() + SETTLE_LIMIT_S
        while True:
            with sched._cond:
                if sched._closed or not (sched._busy or (sched._heap and sched._heap[0].due <= self.now)):
                    return
                sched._cond.notify_all()
            if time.monotonic() > limit:
                raise AssertionError(f"the scheduler did not dispatch what was due within {SETTLE_LIMIT_S} s")
            time.sleep(0.0002)

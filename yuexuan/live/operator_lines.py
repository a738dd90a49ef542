"""The lines live judging says to the operator (verdicts, notices), bounded: a flood of bad input
keeps memory and the screen as they were.

:class:`OperatorLines` keeps three things apart: the latest verdict lines
(:attr:`OperatorLines.recent`, the ones the screen must never lose), the latest notices
(:attr:`OperatorLines.notices`: bad messages, refusals, duplicates, remote commands) and every line
in order for a printer (:meth:`OperatorLines.lines_since`, the latest :data:`LINES_KEPT` kept, the
rest counted). A throttled notice is said
:data:`NOTICES_PER_S` times a second at most; the rest are counted and summed up in one line.
Not thread-safe by itself: the hub calls it under its lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

SCREEN_LINES = 6            # latest verdicts on the operator's screen
NOTICE_LINES = 6            # latest notices
LINES_KEPT = 2000            # lines kept for printing; older ones are only counted
NOTICES_PER_S = 10             # throttled notices said a second; the rest summed up


class OperatorLines:
    """The hub's lines (see the module's docstring); ``clock``: monotonic seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.recent: deque[str] = deque(maxlen=SCREEN_LINES)
        self.notices: deque[str] = deque(maxlen=NOTICE_LINES)
        self.lines: deque[str] = deque(maxlen=LINES_KEPT)
        self.count = 0                      # lines said in all
        self.unsaid = 0                     # throttled notices not said (in all)
        self._second = float("-inf")        # the throttle's window: its start …
        self._in_window = 0                 # … the notices said in it …
        self._held = 0                      # … and those left unsaid, not yet summed up

    def say(self, text: str, recent: bool = True) -> None:
        """A line for the printer; with ``recent``, among the screen's latest verdicts too."""
        if recent:
            self.recent.append(text)
        self.lines.append(text)
        self.count += 1

    def notice(self, text: str, throttle: bool = False) -> None:
        """A notice; with ``throttle`` only :data:`NOTICES_PER_S` a second (the rest counted)."""
        if throttle:
            self.sum_up()
            if self._in_window >= NOTICES_PER_S:
                self._held += 1
                self.unsaid += 1
                return
            self._in_window += 1
        self.notices.append(text)
        self.say(text, recent=False)

    def sum_up(self, now: float | None = None) -> None:
        """Once the throttle's second is over (at ``now``, monotonic s): one line for the
        notices it left unsaid."""
        now = self.clock() if now is None else now
        if now < self._second + 1.0:
            return
        held, self._held = self._held, 0
        self._second, self._in_window = now, 0
        if held:
            self.notices.append(f"… and {held} more bad messages, refusals or duplicates "
                                "(counted, not shown)")
            self.say(self.notices[-1], recent=False)

    def lines_since(self, seen: int) -> tuple[list[str], int]:
        """The lines said after the first ``seen`` (those still kept) and the count so far:
        a printer's next ``seen``."""
        new = min(self.count - seen, len(self.lines))
        return (list(self.lines)[len(self.lines) - new:] if new > 0 else []), self.count

"""A command's progress on a terminal: a one-line bar while it renders, a line per finished stage.

Shared by ``render``, ``build`` and ``guide``. Everything goes to stderr and only when stderr is a
terminal: piped or captured runs (tests, scripts) see nothing of it.
"""

from __future__ import annotations

import sys
from typing import TextIO

BAR_CELLS = 25                  # one cell = 4 %


class Progress:
    """``progress(fraction, stage)`` draws the bar (``fraction`` 0…1 of the render, ``stage`` its
    pass: "mix", "level"); :meth:`stage` prints one finished stage; :meth:`done` clears the bar.
    The bar only moves forward: a second gain pass does not take it back."""

    def __init__(self, command: str, stream: TextIO | None = None) -> None:
        self.command = command
        self.stream = sys.stderr if stream is None else stream   # the stderr of this run, not of import time
        self.on = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last = -1                   # last percentage drawn; -1: no bar on the line
        self.width = 0                   # characters of the bar on the line

    def __call__(self, fraction: float, stage: str = "") -> None:
        if not self.on:
            return
        pct = max(0, min(100, int(fraction * 100)))
        if pct <= self.last:
            return
        self.last = pct
        cells = pct * BAR_CELLS // 100
        line = f"{self.command} [{'#' * cells}{'.' * (BAR_CELLS - cells)}] {pct:3d}% {stage:5s}"
        self.width = len(line)
        self.stream.write("\r" + line)
        self.stream.flush()

    def stage(self, text: str) -> None:
        """One line ``<command>: <text>`` for a stage just finished or begun (clears the bar)."""
        if not self.on:
            return
        self.done()
        self.stream.write(f"{self.command}: {text}\n")
        self.stream.flush()

    def done(self) -> None:
        """Clear the bar's line; the next render starts a new bar."""
        if self.on and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
        self.last, self.width = -1, 0

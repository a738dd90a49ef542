"""SIGINT and SIGTERM acted on at safe points of a long computation, not wherever they land.

A handler that raises (KeyboardInterrupt, the CLI's SIGTERM exception) can raise in the middle of
thread-pool and lock code; the renderer, which keeps worker threads busy, was seen once in CI and
once in some 200 local runs not to exit at all after such a SIGTERM. Inside
:func:`deferred_signals` the handlers only note the signal; the computation calls the checkpoint
it was given between blocks, and that runs the handler that was in place before (so the usual
exception, exit status and clean-up follow), from ordinary code.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

# what signal.getsignal answers: a handler, SIG_DFL / SIG_IGN, or None (set outside Python)
Handler = Callable[[int, FrameType | None], Any] | int | None

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _deliver(signum: int, previous: Handler) -> None:
    """Act on ``signum`` as ``previous`` (the handler before ours) would have."""
    if callable(previous):
        previous(signum, None)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)


@contextlib.contextmanager
def deferred_signals() -> Iterator[Callable[[], None]]:
    """Yield ``checkpoint()``: it raises what a SIGINT/SIGTERM received so far would have raised.

    Outside the main thread (where handlers cannot be set) nothing is deferred and the checkpoint
    does nothing. A signal still pending when the block ends is delivered then: none is lost.
    Ignored signals (SIG_IGN) stay ignored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    pending: list[int] = []
    previous: dict[int, Handler] = {}
    for s in SIGNALS:
        old = signal.getsignal(s)
        if old == signal.SIG_IGN or old is None:
            continue
        previous[s] = old
        signal.signal(s, lambda signum, frame: pending.append(signum))

    def end() -> None:
        """Put the previous handlers back, then act on the first signal noted (if any)."""
        for s, old in previous.items():
            signal.signal(s, old)
        restored = dict(previous)
        previous.clear()
        if pending:
            _deliver(pending[0], restored[pending[0]])

    def checkpoint() -> None:
        if pending and previous:
            end()

    try:
        yield checkpoint
    finally:
        if previous:
            end()

"""What ``yuexuan play`` changes for the whole process, in one place (restored on exit), and its
last words on a terminal that may have gone."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)   # each ends the show as Ctrl-C


def settings(stack: contextlib.ExitStack, quiet_root_logger: bool) -> None:
    """Set what ``play`` changes for the whole process, each restored by ``stack`` on exit:
    SIGTERM, SIGHUP (the terminal or the SSH session closed) and SIGQUIT (Ctrl-\\) end the show
    as Ctrl-C does, all notes off; a 0.5 ms GIL switch interval (the scheduler thread takes
    the GIL promptly); with ``quiet_root_logger`` a NullHandler on the root logger: python-osc's
    ``logging.warning`` on an odd datagram would print over the screen (its message is reported
    as bad anyway)."""
    old_int = signal.getsignal(signal.SIGINT)
    stack.callback(signal.signal, signal.SIGINT, signal.SIG_DFL if old_int is None else old_int)
    for sig in STOP_SIGNALS:
        stack.callback(signal.signal, sig, signal.signal(sig, on_term))
    stack.callback(sys.setswitchinterval, sys.getswitchinterval())
    sys.setswitchinterval(0.0005)
    if quiet_root_logger:
        root, quiet = logging.getLogger(), logging.NullHandler()
        root.addHandler(quiet)
        stack.callback(root.removeHandler, quiet)


def ignore_stop_signals() -> None:
    """Ctrl-C and the stop signals do nothing while the rig closes: it closes whole, nothing
    sounding."""
    for sig in (signal.SIGINT, *STOP_SIGNALS):
        signal.signal(sig, signal.SIG_IGN)


def on_term(signum: int, frame: FrameType | None) -> None:
    """A stop signal's handler: the show ends as on Ctrl-C."""
    raise KeyboardInterrupt


def tell(lines: list[str]) -> None:
    """The last lines on stderr, unless it has gone (a closed terminal: SIGHUP)."""
    try:
        for line in lines:
            print(line, file=sys.stderr, flush=True)
    except OSError:
        pass

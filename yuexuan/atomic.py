"""Atomic output: write to a temporary file beside the target, rename only when complete."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str], suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success.

    On any exception (or KeyboardInterrupt / SIGTERM turned into SystemExit) the temporary
    file is removed and ``target`` is left as it was. ``suffix`` defaults to the target's
    own suffix so that libraries choosing a format by extension still work.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    # SIGINT/SIGTERM are held while the file is made, so a handler that raises cannot land between
    # its creation and the clean-up below (a kill as the file appears left it behind)
    mask = _hold_signals()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix or target.suffix or ".tmp",
                                   dir=target.parent)
    except BaseException:
        _release_signals(mask)
        raise
    try:
        _release_signals(mask)
        os.close(fd)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)      # mkstemp makes 0600; outputs get the usual mode
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _hold_signals() -> set[int] | None:
    """Block SIGINT and SIGTERM for this thread; the mask before, or None where there are no masks."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _release_signals(mask: set[int] | None) -> None:
    """Put the mask of :func:`_hold_signals` back; a signal that came meanwhile is acted on now."""
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def write_bytes(target: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_text(target: str | os.PathLike[str], text: str) -> None:
    """Write UTF-8 ``text`` to ``target`` atomically."""
    write_bytes(target, text.encode("utf-8"))

"""Atomic output: write to a temporary file beside the target, rename only when complete."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, suffix: str | None = None):
    """Yield a temporary path beside ``target``; rename it onto ``target`` on success.

    On any exception (or KeyboardInterrupt / SIGTERM turned into SystemExit) the temporary
    file is removed and ``target`` is left as it was. ``suffix`` defaults to the target's
    own suffix so that libraries choosing a format by extension still work.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix or target.suffix or ".tmp",
                               dir=target.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)          # mkstemp makes 0600; outputs get the usual mode
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes(target: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_text(target: str | os.PathLike, text: str) -> None:
    """Write UTF-8 ``text`` to ``target`` atomically."""
    write_bytes(target, text.encode("utf-8"))

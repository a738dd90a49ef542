"""Atomic output: write to a temporary file beside the target, rename only when complete."""

from __future__ import annotations

import contextlib
import os
import secrets
import weakref
from pathlib import Path
from types import TracebackType


class atomic_path:      # lower case: used as the function it replaced, ``with atomic_path(t) as tmp``
    """A temporary path beside ``target``, renamed onto ``target`` when the block ends normally.

    On any exception (KeyboardInterrupt and the CLI's SIGTERM exception included) the temporary
    file is removed and ``target`` is left as it was. ``suffix`` defaults to the target's own
    suffix, so that libraries choosing a format by extension still work.

    Why not ``tempfile.mkstemp`` in a ``contextlib`` generator: a signal handler that raises runs
    in the main thread at the next bytecode check, whichever thread the kernel gave the signal to
    (numpy's BLAS threads, so a signal mask does not hold it off). It landed between the file's
    creation and the ``try`` meant to remove it, or in contextlib's own frames: 3 runs in 200
    killed at random left a ``.NAME.*`` behind. Here the file is made under a name known before
    it exists, and a ``weakref.finalize`` removes it if the rename never happens, however this
    object is left (at the latest when the interpreter exits).
    """

    def __init__(self, target: str | os.PathLike[str], suffix: str | None = None) -> None:
        self.target = Path(target)
        self.suffix = suffix or self.target.suffix or ".tmp"

    def __enter__(self) -> Path:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        while True:
            tmp = self.target.parent / f".{self.target.name}.{secrets.token_hex(4)}{self.suffix}"
            # armed before the file exists: an exception anywhere after os.open still removes it
            self._remove = weakref.finalize(self, _remove, tmp)
            try:
                # 0o666 under the umask: the mode of any other output (mkstemp's is 0600)
                os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                                 0o666))
            except FileExistsError:              # another writer's name: not ours to remove
                self._remove.detach()
                continue
            except BaseException:
                self._remove()
                raise
            self.tmp = tmp
            return tmp

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            try:
                os.replace(self.tmp, self.target)
            except BaseException:
                self._remove()
                raise
            self._remove.detach()
        else:
            self._remove()


def _remove(path: Path) -> None:
    """Unlink ``path`` if it is there."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def write_bytes(target: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_text(target: str | os.PathLike[str], text: str) -> None:
    """Write UTF-8 ``text`` to ``target`` atomically."""
    write_bytes(target, text.encode("utf-8"))

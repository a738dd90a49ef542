"""Pass 1's mix kept for pass 2: float32 stereo frames in an unnamed temporary file.

The gain pass needs every sample of the mix again once pass 1 has measured it. Reading them back
from the page cache (0.04 s for the whole ceremony's 590 MB here; writing them 0.12–0.6 s) is far
cheaper than mixing them again (about 2 s of CPU). The file has no name (``O_TMPFILE`` through
:func:`tempfile.TemporaryFile`): it goes when the render ends or is killed, and nothing is left
behind. Its space is reserved before pass 1 (``posix_fallocate``); where the file system has no
room for it (or no such call), there is no spool and pass 2 mixes again: the same samples.
The forked processes of a split render write and read it at their blocks' offsets.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import numpy as np
import numpy.typing as npt

from yuexuan.audio.engine import output

FRAME_BYTES = 8                  # two float32 channels


class Spool:
    """``frames`` stereo float32 frames on disk; :meth:`write` and :meth:`read` by frame offset."""

    def __init__(self, file: IO[bytes], frames: int) -> None:
        self._file = file
        self.fd = file.fileno()
        self.frames = frames

    @classmethod
    def open(cls, directory: Path, frames: int, reserve: bool = True) -> Spool | None:
        """A spool of ``frames`` frames in ``directory`` (its space reserved, or with ``reserve``
        False a sparse file: one written in a few places), or None where it cannot be made there
        (no space, no ``posix_fallocate``)."""
        try:
            file = tempfile.TemporaryFile(dir=directory, prefix=".yuexuan-spool-")  # noqa: SIM115 (kept open: the Spool closes it)
        except OSError:
            return None
        try:
            if frames > 0 and reserve:
                os.posix_fallocate(file.fileno(), 0, FRAME_BYTES * frames)
            elif frames > 0:
                os.ftruncate(file.fileno(), FRAME_BYTES * frames)
        except (OSError, AttributeError):
            file.close()
            return None
        return cls(file, frames)

    def write(self, frame: int, x: npt.NDArray[np.float32]) -> None:
        """Put ``x`` ((n, 2) float32, C-contiguous) at frame ``frame``."""
        output.pwrite_all(self.fd, x, FRAME_BYTES * frame)

    def read(self, frame: int, n: int) -> npt.NDArray[np.float32]:
        """A new (n, 2) float32 array: the frames from ``frame`` on."""
        out = np.empty((n, 2), dtype=np.float32)
        view = out.data.cast("B")
        offset = FRAME_BYTES * frame
        while view:
            got = os.preadv(self.fd, [view], offset)
            if got <= 0:
                raise OSError(f"the render's spool ended at byte {offset}")
            view, offset = view[got:], offset + got
        return out

    def blocks(self, block: int, first: int, stop: int, skip: Callable[[int], bool] = lambda k: False,
               ) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """Blocks ``first`` to ``stop`` (exclusive) of ``block`` frames: (start frame, a new array);
        zeros, not read, for a block ``k`` where ``skip(k)`` (one known silent, which pass 1 need
        not have written)."""
        for k in range(first, stop):
            b0 = k * block
            if b0 >= self.frames:
                return
            n = min(self.frames, b0 + block) - b0
            yield b0, np.zeros((n, 2), np.float32) if skip(k) else self.read(b0, n)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

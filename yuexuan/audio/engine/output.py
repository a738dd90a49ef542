"""Writing audio: the output formats, 16-bit rounding, stem file names, and the ordered writer
thread that encodes while the main thread mixes."""

from __future__ import annotations

import contextvars
import os
import struct
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import soundfile as sf

from yuexuan.errors import UserError

FORMATS = {".wav": ("WAV", "PCM_16"), ".flac": ("FLAC", "PCM_16")}   # 16-bit, rounded


def output_format(path: str | Path) -> tuple[str, str]:
    """(libsndfile format, subtype) for an output file, by its suffix; a UserError otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"unsupported audio file type {suffix or '(none)'!r}; use .wav or .flac",
                        file=str(path))
    return FORMATS[suffix]


def open_stereo(path: str | Path, sample_rate: int, fmt: str, subtype: str) -> sf.SoundFile:
    """A stereo output file; FLAC at its fastest setting (about 1 % larger, a third faster)."""
    extra = {"compression_level": 0.0} if fmt == "FLAC" else {}
    return sf.SoundFile(path, "w", sample_rate, 2, subtype=subtype, format=fmt, **extra)


def to_pcm16(x: npt.NDArray[np.float32]) -> npt.NDArray[np.int16]:
    """Float samples (±1 full scale) as 16-bit integers, rounded to nearest (deterministic)."""
    y = x * np.float32(32767.0)
    np.rint(y, out=y)
    np.clip(y, -32768, 32767, out=y)
    return y.astype(np.int16)


WAV_HEADER_BYTES = 44


def wav_header(frames: int, sample_rate: int, channels: int = 2) -> bytes:
    """The canonical 44-byte header (RIFF, ``fmt `` of PCM, ``data``) of a 16-bit PCM WAV file of
    ``frames`` frames. Hand-written (the layout of the RIFF/WAVE format, 16 bytes of ``fmt ``):
    two processes write one file at known offsets, which libsndfile cannot share."""
    data = frames * channels * 2
    if 36 + data >= 2 ** 32:
        raise ValueError(f"{frames} frames are too many for a WAV file (4 GiB)")
    return struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + data, b"WAVE", b"fmt ", 16, 1, channels,
                       sample_rate, sample_rate * channels * 2, channels * 2, 16, b"data", data)


FLOAT_WAV_HEADER_BYTES = 58


def float_wav_header(frames: int, sample_rate: int, channels: int = 2) -> bytes:
    """The 58-byte header of a 32-bit float WAV file of ``frames`` frames: RIFF, ``fmt `` of
    WAVE_FORMAT_IEEE_FLOAT (18 bytes), the ``fact`` chunk the RIFF specification asks of a
    format that is not PCM, ``data``."""
    data = frames * channels * 4
    if FLOAT_WAV_HEADER_BYTES - 8 + data >= 2 ** 32:
        raise ValueError(f"{frames} frames are too many for a WAV file (4 GiB)")
    return struct.pack("<4sI4s4sIHHIIHHH4sII4sI", b"RIFF", FLOAT_WAV_HEADER_BYTES - 8 + data, b"WAVE",
                       b"fmt ", 18, 3, channels, sample_rate, sample_rate * channels * 4, channels * 4, 32,
                       0, b"fact", 4, frames, b"data", data)


class SparseFloatWav:
    """A stereo 32-bit float WAV file of a known length, written block after block, its silent
    blocks left unwritten: the file is made that long first (sparse), so it reads zeros there.

    Hand-written (the header above; :func:`pwrite_all`): libsndfile writes every sample, and a
    stem is mostly silence — a call's is silent but for its syllables. The test fixtures' 20 stems
    of the two sung cues were 4.5 GB written out, most of it zeros."""

    def __init__(self, path: str | Path, frames: int, sample_rate: int) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0))
        try:
            pwrite_all(self._fd, float_wav_header(frames, sample_rate), 0)
            os.ftruncate(self._fd, FLOAT_WAV_HEADER_BYTES + 8 * frames)
        except BaseException:
            os.close(self._fd)
            raise
        self._frame = 0

    def write(self, x: npt.NDArray[np.float32]) -> None:
        """The next ``len(x)`` frames, (n, 2) float32."""
        if x.any():
            pwrite_all(self._fd, np.ascontiguousarray(x, dtype="<f4"),
                       FLOAT_WAV_HEADER_BYTES + 8 * self._frame)
        self._frame += len(x)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> SparseFloatWav:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pwrite_all(fd: int, data: npt.NDArray[Any] | bytes, offset: int) -> None:
    """Write all of ``data`` at byte ``offset`` of the open file ``fd`` (its position unmoved)."""
    view = (data.data if isinstance(data, np.ndarray) else memoryview(data)).cast("B")
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def stem_path(stems_dir: Path, name: str, suffix: str) -> Path:
    """``stems_dir/<instrument name><suffix>``; a UserError for a name that is not a file name."""
    if "/" in name or name in ("", ".", ".."):
        raise UserError(f"instrument name {name!r} cannot be a file name")
    return stems_dir / f"{name}{suffix}"


class Pipe:
    """Run calls in order on one worker thread, at most ``depth`` waiting (the second core takes the
    filtering and encoding while the first mixes; numpy, scipy and libsndfile release the GIL).

    As a context manager: on a normal exit it waits for every call; on an exception it cancels
    what waits and returns once the running call has finished."""

    def __init__(self, depth: int = 2):
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._pending: deque[Future[Any]] = deque()
        self._depth = depth

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the worker thread, in a copy of the caller's context (the filter
        kernel in force: :mod:`yuexuan.audio.engine.filter_kernel`)."""
        self._pending.append(self._pool.submit(contextvars.copy_context().run, fn, *args))
        while len(self._pending) > self._depth:
            self._pending.popleft().result()

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def stop(self) -> None:
        """Cancel what waits; return once the call running now (if any) has finished."""
        for f in self._pending:
            f.cancel()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> Pipe:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self.drain()
        finally:
            self.stop()

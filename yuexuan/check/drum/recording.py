"""A judge's recording as mono samples: WAV, FLAC, MP3, or the sound of a phone video (MP4/MOV).

Decoded by FFmpeg's libraries through PyAV (``av``), never by hand: ``av.open`` demuxes,
``container.decode`` decodes the first audio stream, ``av.AudioResampler`` converts to float32
planar at the rate asked. Channels are averaged into one (mono = mean of the channels, as the
earlier WAV reader did). The first decoded sample is time 0: FFmpeg drops an encoder's priming
samples itself (AAC's 1024 or 2112 through the MP4 edit list, MP3's through the LAME header), so
a stroke keeps its time in every format (tests/test_recording.py measures it).

:func:`iter_blocks` streams: it holds one block and at most one decoded frame besides, so an
hour-long recording is read in bounded memory. :func:`read_recording` fills one array sized from
the container's stated duration (grown only if the duration was short), never a second copy.
Any file that cannot be read gives one :class:`~yuexuan.errors.UserError` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:                    # PyAV is imported when a recording is opened (start-up time)
    from av.audio.stream import AudioStream
    from av.container import InputContainer

import numpy as np
import numpy.typing as npt

from yuexuan.errors import UserError

FORMATS = "WAV, FLAC, MP3, or a video with an audio track (MP4/MOV with AAC)"


def _open(path: Path) -> tuple[InputContainer, AudioStream]:
    """The opened container (PyAV) and its first audio stream; UserError when there is none."""
    import av

    if not path.exists():
        raise UserError("no such file", file=str(path))
    if path.is_dir():
        raise UserError("is a directory, not a recording", file=str(path))
    try:
        container = av.open(str(path), mode="r")
    except (av.FFmpegError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"cannot read audio (expected {FORMATS}): {_why(exc)}",
                        file=str(path)) from None
    if not container.streams.audio:
        container.close()
        raise UserError(f"cannot read audio: the file has no audio track (expected {FORMATS})",
                        file=str(path))
    return container, container.streams.audio[0]


def _why(exc: Exception) -> str:
    """FFmpeg's reason, on one line and without the file name it repeats."""
    text = getattr(exc, "strerror", None) or str(exc)
    return " ".join(str(text).split())


def _frames(path: Path, sr: int) -> Iterator[npt.NDArray[np.float32]]:
    """Mono float32 chunks of the first audio stream at ``sr`` Hz, in order, as decoded."""
    import av

    container, stream = _open(path)
    resampler = av.AudioResampler(format="fltp", rate=sr)   # keep the layout: we average
    try:
        with container:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    yield out.to_ndarray().mean(axis=0, dtype=np.float32)
            for out in resampler.resample(None):                # the resampler's tail
                yield out.to_ndarray().mean(axis=0, dtype=np.float32)
    except av.FFmpegError as exc:
        raise UserError(f"cannot read audio (expected {FORMATS}): {_why(exc)}",
                        file=str(path)) from None


def _check_rate(sr: int) -> int:
    if not (isinstance(sr, (int, np.integer)) and 1000 <= sr <= 384000):
        raise ValueError(f"sample rate must be an integer number of Hz in 1000..384000, not {sr!r}")
    return int(sr)


def iter_blocks(path: str | Path, sr: int, block_s: float) -> Iterator[npt.NDArray[np.float32]]:
    """Consecutive mono float32 blocks of ``block_s`` seconds (``round(block_s·sr)`` samples) of
    the recording at ``sr`` Hz; the last block is shorter (never empty). Raises UserError naming
    the file when it is missing, unreadable, has no audio track or no samples."""
    sr = _check_rate(sr)
    n = max(1, int(round(block_s * sr)))
    path = Path(path)
    block = np.empty(n, dtype=np.float32)
    fill = 0
    total = 0
    for chunk in _frames(path, sr):
        total += len(chunk)
        while len(chunk):
            take = min(n - fill, len(chunk))
            block[fill:fill + take] = chunk[:take]
            fill += take
            chunk = chunk[take:]
            if fill == n:
                yield block.copy()
                fill = 0
    if total == 0:
        raise UserError("the recording has no audio samples", file=str(path))
    if fill:
        yield block[:fill].copy()


def _stated_samples(path: Path, sr: int) -> int:
    """Samples at ``sr`` that the container says it holds (0 when it does not say)."""
    container, stream = _open(path)
    with container:
        if stream.duration is not None and stream.time_base is not None:
            seconds = float(stream.duration * stream.time_base)
        elif container.duration is not None:
            seconds = container.duration / 1_000_000          # AV_TIME_BASE, microseconds
        else:
            seconds = 0.0
    return max(0, int(math.ceil(seconds * sr)))


def duration_s(path: str | Path) -> float:
    """The recording's length as its container states it, s (0 when it does not say)."""
    return _stated_samples(Path(path), 1000) / 1000


def read_recording(path: str | Path, sr: int) -> npt.NDArray[np.float32]:
    """The whole recording as mono float32 samples at ``sr`` Hz (see :func:`iter_blocks`)."""
    sr = _check_rate(sr)
    path = Path(path)
    out = np.empty(_stated_samples(path, sr) + sr, dtype=np.float32)   # 1 s of slack
    fill = 0
    for chunk in _frames(path, sr):
        if fill + len(chunk) > len(out):                     # the stated duration was short
            out = np.resize(out, max(2 * len(out), fill + len(chunk)))
        out[fill:fill + len(chunk)] = chunk
        fill += len(chunk)
    if fill == 0:
        raise UserError("the recording has no audio samples", file=str(path))
    return out[:fill]            # a view: the slack (1 s, unless grown) is not copied away

"""Reading the renderer's float WAV stems, which are sparse files: the renderer leaves a silent
block of a stem as a hole, so a stem of the 10-minute guide render holds 232 MB of samples and
60 MB of data on the disk. :func:`read_float_wav` copies only the file's data extents
(``SEEK_DATA``/``SEEK_HOLE``) into an array of zeros; reading every sample with soundfile took
10.6 s of CPU for the guide render's 20 stems. The same array as ``soundfile.read(path,
dtype="float32", always_2d=True)`` (tests/test_stem_files.py); any other file is read by soundfile.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import soundfile as sf


def read_float_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """(samples × channels float32, sample rate) of a WAV file, its holes not read."""
    info = sf.info(str(path))
    nbytes = info.frames * info.channels * 4
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        offset = size - nbytes                  # the data chunk ends the file (the renderer's)
        f.seek(max(0, offset - 8))
        header = f.read(8)
        if not (info.format == "WAV" and info.subtype == "FLOAT" and offset >= 8
                and header[:4] == b"data" and int.from_bytes(header[4:], "little") == nbytes):
            x, sr = sf.read(str(path), dtype="float32", always_2d=True)
            return x, sr
        out = np.zeros((info.frames, info.channels), dtype="<f4")
        raw = memoryview(out.reshape(-1).view(np.uint8))
        fd, pos = f.fileno(), offset
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:                     # ENXIO: no data after pos
                break
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            at = start - offset
            while at < end - offset:
                n = os.preadv(fd, [raw[at:end - offset]], at + offset)
                if n <= 0:
                    raise OSError(f"{path}: short read at byte {at + offset}")
                at += n
            pos = end
    return out.astype(np.float32, copy=False), info.samplerate

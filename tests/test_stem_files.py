"""tests/stem_files.py's reader of sparse float WAVs against soundfile (the reference): float WAVs
with silent stretches, written dense by soundfile and again with their all-zero blocks left as
holes (as the renderer writes stems), and a 16-bit WAV (read by soundfile itself); shapes, rates
and silences drawn afresh (seed printed)."""

from __future__ import annotations

import os
import random

import numpy as np
import soundfile as sf
from stem_files import read_float_wav

BLOCK = 4096                     # a file-system block: a hole is at least this long


def _sparse_copy(dense, sparse) -> int:
    """Copy ``dense`` to ``sparse`` leaving every all-zero, block-aligned stretch unwritten;
    the holes made."""
    data = dense.read_bytes()
    holes = 0
    with open(sparse, "wb") as f:
        for a in range(0, len(data), BLOCK):
            chunk = data[a:a + BLOCK]
            if a and not any(chunk):
                f.seek(len(chunk), os.SEEK_CUR)
                holes += 1
            else:
                f.write(chunk)
        f.truncate(len(data))
    return holes


def test_sparse_float_wavs_read_as_soundfile_reads_them(tmp_path):
    seed = random.randrange(2 ** 32)
    rng = np.random.default_rng(seed)
    holes = 0
    for k in range(6):
        channels, n = int(rng.integers(1, 3)), int(rng.integers(1, 200_000))
        sr = int(rng.choice([8000, 16000, 44100, 48000]))
        x = (rng.standard_normal((n, channels)) * 0.1).astype(np.float32)
        for _ in range(int(rng.integers(0, 6))):             # silent stretches
            a = int(rng.integers(0, n))
            x[a:a + int(rng.integers(1, 60_000))] = 0.0
        dense, sparse = tmp_path / f"d{k}.wav", tmp_path / f"s{k}.wav"
        sf.write(dense, x, sr, subtype="FLOAT")
        holes += _sparse_copy(dense, sparse)
        ref, ref_sr = sf.read(dense, dtype="float32", always_2d=True)
        for path in (dense, sparse):
            got, got_sr = read_float_wav(path)
            assert got_sr == ref_sr == sr and got.dtype == np.float32, (seed, k)
            assert np.array_equal(got, ref), (seed, k, path.name)
    assert holes > 0, seed                    # the draws made sparse files
    pcm = tmp_path / "pcm.wav"
    sf.write(pcm, x, sr, subtype="PCM_16")
    assert np.array_equal(read_float_wav(pcm)[0], sf.read(pcm, dtype="float32", always_2d=True)[0]), seed

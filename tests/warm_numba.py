"""Compile, once, what numba compiles of librosa for the suite and the drum finder, into a seed cache.

tests/conftest.py starts it in the background when a ``pytest -n N`` run finds no seed in the venv.
numba caches its compiled code by function and argument types; each xdist worker has a cache
folder of its own (two compiling one function at once into one folder corrupted it), which a
worker fills from this seed before its first test after the seed is ready. Without it each worker
compiled the same functions, 25–35 s of CPU each on a fresh venv (librosa's onset detection alone
25 s; the seed takes 33 s; measured 2026-12-02). Compiled into a folder of its own, renamed onto
the seed when complete.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SEED = Path(sys.prefix) / "numba-cache" / "seed"


def main() -> int:
    work = SEED.with_name(f"seed.{os.getpid()}")
    os.environ["NUMBA_CACHE_DIR"] = str(work)
    work.mkdir(parents=True, exist_ok=True)
    import librosa
    import numpy as np

    from yuexuan.check.drum import band

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        y = (0.1 * rng.standard_normal(48000)).astype(dtype)
        librosa.onset.onset_detect(y=y, sr=48000, hop_length=128, units="time")
        librosa.pyin(y, fmin=80.0, fmax=800.0, sr=48000)
        librosa.feature.zero_crossing_rate(y)
        # test_speech's MFCC-DTW (tests/speech_support.py): resampled to 16 kHz, trimmed, warped
        z, _ = librosa.effects.trim(librosa.resample(y, orig_sr=48000, target_sr=16000), top_db=35)
        m = librosa.feature.mfcc(y=z, sr=16000, n_mfcc=13, n_fft=400, hop_length=160, n_mels=40)[1:]
        librosa.sequence.dtw(X=m, Y=m[:, ::2], metric="euclidean")
    band.scan_block(rng.standard_normal(band.SR * 4).astype(np.float32), 0.0, (0.0, 4.0))
    (work / "ready").write_text("librosa " + librosa.__version__ + "\n", encoding="utf-8")
    try:
        work.rename(SEED)
    except OSError:                     # another run's seed is there already
        shutil.rmtree(work, ignore_errors=True)
    print(f"numba cache seeded: {SEED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

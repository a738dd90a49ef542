"""The side-by-side bench's measuring (bench/bench_instruments.py), on signals whose attack, T60,
spectral centroid and number of strokes are known by construction (not the whole bench)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SR = 44100
BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_instruments.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_instruments", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def t_axis(seconds: float) -> np.ndarray:
    return np.arange(int(seconds * SR)) / SR


def struck(t: np.ndarray, onset_s: float, ramp_s: float, t60_s: float, hz: float) -> np.ndarray:
    """A sine at ``hz`` rising linearly over ``ramp_s`` from ``onset_s``, then decaying exponentially
    by 60 dB in ``t60_s``."""
    u = t - onset_s
    rise = np.clip(u / ramp_s, 0, 1)
    decay = np.where(u > ramp_s, 10 ** (-3 * (u - ramp_s) / t60_s), 1.0)
    return (np.where(u >= 0, rise * decay, 0) * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_attack_is_ten_to_ninety_percent_of_a_linear_ramp(bench):
    t = t_axis(3.0)
    x = struck(t, 0.2, 0.040, 1.2, 440.0)
    start, rise = bench.attack(x, SR)
    assert start == pytest.approx(0.2 + 0.004, abs=0.001)     # 10 % of a 40 ms ramp
    assert rise == pytest.approx(0.032, abs=0.0015)             # 10 → 90 % = 80 % of it
    # a file starting at full level: no rise (within half a period, 1.1 ms at 440 Hz)
    step_start, step_rise = bench.attack(np.sin(2 * np.pi * 440 * t).astype(np.float32), SR)
    assert step_start == 0 and step_rise < 0.0012
    # nothing is read before the sound: a 70 Hz tone switched on at 0.5 s starts there, not earlier
    low = np.where(t >= 0.5, np.sin(2 * np.pi * 70 * (t - 0.5)), 0).astype(np.float32)
    assert bench.attack(low, SR)[0] == pytest.approx(0.5, abs=0.002)


@pytest.mark.parametrize("t60", [0.3, 1.2, 2.5])
def test_t60_of_an_exponential_decay(bench, t60):
    t = t_axis(max(3.0, 2 * t60 + 0.5))
    x = struck(t, 0.1, 0.005, t60, 300.0)
    assert bench.t60_s(x, SR, 0.1) == pytest.approx(t60, rel=0.03)
    assert bench.describe(x, SR).t60_s == pytest.approx(t60, rel=0.03)


def test_t60_of_a_held_note_counts_from_its_end(bench):
    t = t_axis(3.0)
    u = t - 0.1
    env = np.where(u < 0, 0, np.where(u < 1.0, 1.0, 10 ** (-3 * (u - 1.0) / 0.4)))
    x = (env * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    assert bench.describe(x, SR, held_s=1.0).t60_s == pytest.approx(0.4, rel=0.05)
    assert np.isnan(bench.t60_s(x[: int(0.9 * SR)], SR))     # cut off while held: no decay to measure
    assert np.isnan(bench.t60_s(x[: int(1.3 * SR)], SR))     # cut at −30 dB: not 10 dB below the fit range


def test_spectral_centroid_per_window(bench):
    t = t_axis(1.5)
    two = np.sin(2 * np.pi * 500 * t) + np.sin(2 * np.pi * 2000 * t)
    assert bench.centroid_hz(two, SR, 0.1, 0.4) == pytest.approx(1250, rel=0.02)
    # silent before 0.3 s; 3000 Hz for 50 ms from the attack, then 600 Hz
    u = t - 0.3
    x = np.where(u < 0, 0, np.where(u < 0.05, np.sin(2 * np.pi * 3000 * t), np.sin(2 * np.pi * 600 * t)))
    first, middle, late = bench.describe(x.astype(np.float32), SR).centroids_hz
    assert first == pytest.approx(3000, rel=0.05)
    assert middle == pytest.approx(600, rel=0.05) and late == pytest.approx(600, rel=0.05)
    assert np.isnan(bench.centroid_hz(x, SR, 0.0, 0.25))          # silence has no centroid


@pytest.mark.parametrize("strokes", [1, 3])
def test_onsets_count_strokes(bench, strokes):
    t = t_axis(3.0)
    x = sum(struck(t, 0.5 + 0.6 * k, 0.002, 0.3, 200.0 * (k + 1)) for k in range(strokes))
    rng = np.random.default_rng(1)
    x = x + 1e-4 * rng.standard_normal(len(t)).astype(np.float32)
    assert bench.onset_count(x, SR) == strokes


def test_a_file_starting_on_its_attack_is_one_stroke(bench):
    """A bell-like stroke from the file's first sample, its two partials beating at 12 Hz, is one
    onset (without the lead-in the detector misses the attack at frame 0 and, normalising to a
    later peak, counts the beats as strokes)."""
    import librosa

    t = t_axis(3.0)
    x = struck(t, 0.0, 0.0005, 3.0, 300.0) + struck(t, 0.0, 0.0005, 3.0, 312.0)
    assert len(librosa.onset.onset_detect(y=x, sr=SR)) > 1      # the artefact the lead-in removes
    assert bench.onset_count(x, SR) == 1

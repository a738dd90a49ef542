"""yuexuan.audio.synthesis.source_level.fast_max_rms: the largest 125 ms RMS, against its definition (every window
by a cumulative sum over every sample) on waveforms of each kind the synthesis makes."""

import numpy as np
import pytest

from yuexuan.audio.synthesis import source_level


def by_definition(x: np.ndarray, sample_rate: int) -> float:
    w = max(1, int(round(source_level.FAST_S * sample_rate)))
    x = np.ravel(x).astype(np.float64)
    if len(x) <= w:
        return float(np.sqrt(np.sum(x * x) / w))
    c = np.concatenate([[0.0], np.cumsum(x * x)])
    return float(np.sqrt(np.max(c[w:] - c[:-w]) / w))


@pytest.mark.parametrize("sample_rate", [48000, 44100, 8000, 8017])   # 8017: a window of 1002 samples
def test_fast_max_rms_is_the_largest_window(sample_rate):
    rng = np.random.default_rng(sample_rate)
    t = np.arange(int(4.3 * sample_rate)) / sample_rate
    cases = {
        "struck": rng.standard_normal(len(t)) * np.exp(-t / 0.4),
        "held": np.sin(2 * np.pi * 220 * t) * (1 + 0.3 * np.sin(2 * np.pi * 5.5 * t)) * np.minimum(1, t / 0.05),
        "clicks": rng.standard_normal(len(t)) * (rng.random(len(t)) < 0.0005),
        "late": np.where(t > 4.25, 1.0, 0.01) * rng.standard_normal(len(t)),    # loudest at the end
        "short": rng.standard_normal(int(0.1 * sample_rate)),
        "stereo": rng.standard_normal((len(t), 2)) * np.exp(-t / 1.0)[:, None],
    }
    for name, x in cases.items():
        x = x.astype(np.float32)
        assert source_level.fast_max_rms(x, sample_rate) == pytest.approx(by_definition(x, sample_rate), rel=1e-9), name
    assert source_level.fast_max_rms(np.zeros(0, np.float32), sample_rate) == 0.0

"""A drum synthesised with its truth known, for the tests of ``check --beats-from``."""

from __future__ import annotations

import numpy as np

SR = 16000


def synth_drum(stroke_s: np.ndarray, duration_s: float, seed: int = 5) -> np.ndarray:
    """Decaying noise bursts with a low thump at the given times (s), over faint noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 0.002, int(duration_s * SR))
    n = int(0.5 * SR)
    t = np.arange(n) / SR
    for s in stroke_s:
        i = int(round(s * SR))
        burst = (rng.normal(0, 1, n) * np.exp(-t / 0.05)
                 + 0.8 * np.sin(2 * np.pi * 75 * t) * np.exp(-t / 0.2)) * rng.uniform(0.2, 0.35)
        m = min(n, len(x) - i)
        x[i:i + m] += burst[:m]
    return x

"""A limiter's gain applied without leaving DC behind.

A look-ahead limiter multiplies the mix by a gain g ≤ 1 for a few milliseconds around a peak: what
it takes away, c = x·(1 − g), is part of a half-cycle of the loudest sound (the first, positive lobe
of a 建鼓 stroke's 55 Hz fundamental), and so carries DC. Measured on 貍首 from the 宾's seat: each
limited stroke's first second at −37 dB DC re its RMS, the whole mix at −48 dB (issue 29). Here what
was taken away is given back as a slow pulse of the same area right after the limited stretch: y =
x·g + Σc·h(t − end), h a Hann window of :data:`PULSE_S` with unit sum (its spectrum lies below
2/PULSE_S = 2 Hz, under hearing and under the K-weighting). y carries the DC of x and no more, over
any stretch that holds the pulse; nothing starts earlier (the pulse follows the peak), and it is
added where the limiter has let go (a pulse of 0.25 % of full scale for a stroke limited by 6 dB).
The limiter does not see it: a shorter pulse (0.25 s, four times as tall) lifted the samples after
the whole ceremony's loudest strokes over the ceiling (true peak −0.97 dBTP from the 宾's seat,
against −1.40 without pulses and −1.33 with this one). Linear in x: stems limited each with its own
:class:`DcFreeLimiting` still add up to the mix.

Hand-written: the limiter is the project's (yuexuan/audio/engine/mix.py); no library gives a gain
whose remainder is DC-free.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

PULSE_S = 1.0           # the restoring pulse's length, s


class DcFreeLimiting:
    """Applies a limiter's gain to consecutive blocks of one signal (n, channels)."""

    def __init__(self, sample_rate: int, channels: int = 2) -> None:
        n = max(2, int(PULSE_S * sample_rate))
        h = np.hanning(n + 2)[1:-1]
        self._pulse = h / h.sum()
        self._pending = np.zeros((0, channels))        # pulses still to be added, from sample 0

    def apply(self, x: npt.NDArray[np.float32],
              g: npt.NDArray[np.floating] | None) -> npt.NDArray[np.float32]:
        """``x`` (n, channels) float32 with the gain ``g`` (n,) applied (None: 1 throughout): a new
        array, or ``x`` itself when nothing is to be done. The area taken away is summed in
        float64, the gain and the pulses applied in float32 (a pass over a block, not four: the
        pulse after each limited block lasts most of the next; the same to 1 ulp)."""
        changed = np.flatnonzero(np.asarray(g) != 1.0) if g is not None else np.zeros(0, np.intp)
        if not len(changed) and not len(self._pending):
            return x
        n = len(x)
        a, end = (int(changed[0]), int(changed[-1]) + 1) if len(changed) else (0, 0)
        if g is not None and end:
            gain = np.asarray(g[a:end], dtype=np.float64)[:, None]
            area = (x[a:end].astype(np.float64) * (1.0 - gain)).sum(axis=0)
            if np.any(area != 0.0):                    # a silent stem takes nothing away
                need = end + len(self._pulse)
                if len(self._pending) < need:
                    self._pending = np.concatenate(
                        [self._pending, np.zeros((need - len(self._pending), x.shape[1]))])
                self._pending[end:need] += self._pulse[:, None] * area[None, :]
        m = min(n, len(self._pending))
        y = x.copy()
        if g is not None and end:
            y[a:end] *= np.asarray(g[a:end], dtype=np.float32)[:, None]
        y[:m] += self._pending[:m].astype(np.float32)
        self._pending = self._pending[m:] if len(self._pending) > n else self._pending[:0]
        return y

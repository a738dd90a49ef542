"""A time-varying gain on a group of stems: the seam a produced mix (a guide mix that ducks the
music under the speech, say) uses to shape the render without touching its machinery.

The caller gives :attr:`yuexuan.audio.engine.plan.Options.envelopes`: a pure function of the
selected timeline and the placed plan returning :class:`GainEnvelope` rows, each naming the
instruments (stems) it scales and its piecewise-linear gain over time. The mixer
(:func:`yuexuan.audio.engine.mix.blocks`) multiplies each named instrument's sound, block by block,
by its envelope before it enters the mix, and the stems carry the same envelope: ``--stems``
still adds up to the mix, sample for sample (each to its 16-bit rounding). The loudness target and
the limiter act on the enveloped mix. An instrument no row names sounds as it would without
envelopes (a render with none is the same file, byte for byte).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class GainEnvelope:
    """Gain over time for the stems of ``instruments``.

    ``times_s`` (strictly increasing, seconds from the rendered file's start, which is the first
    selected cue's start) and ``gains`` (linear, ≥ 0; 0.25 is −12 dB) are breakpoints joined by
    straight lines; before the first the gain is ``gains[0]``, after the last ``gains[-1]``.
    A gain that changes within a sample period changes there: put two breakpoints a ramp apart
    for a smooth step.
    """

    instruments: tuple[str, ...]
    times_s: tuple[float, ...]
    gains: tuple[float, ...]
    #: the instruments are speech, the dialogue bus of a produced mix: their sum is limited on its
    #: own, under the ceiling (yuexuan/audio/engine/passes.py), so that their peaks do not pull the
    #: music under them down with them
    dialogue: bool = False

    def __post_init__(self) -> None:
        if not self.instruments or len(self.times_s) != len(self.gains) or not self.times_s:
            raise ValueError("a gain envelope names instruments and has as many times as gains (≥ 1)")
        if any(not math.isfinite(t) for t in self.times_s) or \
                any(b <= a for a, b in zip(self.times_s, self.times_s[1:])):
            raise ValueError(f"envelope times must be finite and increasing: {self.times_s}")
        if any(not (math.isfinite(g) and g >= 0) for g in self.gains):
            raise ValueError(f"envelope gains must be finite and ≥ 0: {self.gains}")


HELD = 1e-4        # breakpoints this close (relative: 0.0009 dB) hold the gain over a block


class Envelope:
    """One :class:`GainEnvelope` in samples of a render at ``sample_rate``: :meth:`block` gives the
    gain of each sample of a block, or None where it is 1 throughout (nothing to multiply)."""

    def __init__(self, env: GainEnvelope, sample_rate: int) -> None:
        self.at = np.asarray(env.times_s, dtype=np.float64) * sample_rate
        self.gains = np.asarray(env.gains, dtype=np.float64)
        self.dialogue = env.dialogue
        self._ramp = np.zeros(0, dtype=np.float32)      # 0, 1, 2 … for :meth:`_curve`

    def _bearing(self, b0: int, b1: int) -> tuple[int, int]:
        """The breakpoints that bear on samples ``b0`` to ``b1`` (exclusive), as a slice: the last
        at or before ``b0`` to the first at or after ``b1``."""
        i = max(0, int(np.searchsorted(self.at, b0, side="right")) - 1)
        j = min(len(self.at), int(np.searchsorted(self.at, b1 - 1, side="left")) + 1)
        return i, j

    def gain(self, b0: int, b1: int) -> float | npt.NDArray[np.float32]:
        """The gain of samples ``b0`` to ``b1`` (exclusive): one value where it holds throughout
        (the mixer then scales the notes' gains instead of summing the instrument apart: a produced
        mix levels most instruments by a gain that holds for a whole cue), else each sample's."""
        i, j = self._bearing(b0, b1)
        seg = self.gains[i:j]
        # equal to 0.0009 dB: one value. A producer's rounding makes such steps (the guide's ducks
        # at breakpoints rounded to the microsecond read 1 ± 1e-5 of a ramp): multiplying by them
        # as a curve took the guide's mixing a third longer in 950 of the ceremony's blocks
        if bool(np.all(np.abs(seg - seg[0]) <= HELD * abs(seg[0]))):
            return float(seg[0])
        return self._curve(b0, b1, i, j)

    def block(self, b0: int, b1: int) -> npt.NDArray[np.float32] | None:
        """The gain of samples ``b0`` to ``b1`` (exclusive), float32; None if all are 1."""
        i, j = self._bearing(b0, b1)
        if np.all(self.gains[i:j] == 1.0):
            return None
        return self._curve(b0, b1, i, j)

    def _curve(self, b0: int, b1: int, i: int, j: int) -> npt.NDArray[np.float32]:
        """np.interp's values over samples b0…b1 (the breakpoints i to j bearing on them), a
        straight line at a time in float32: np.interp in float64 and a cast took a third of the
        guide mix's added mixing (most of its blocks lie on one long ramp)."""
        n = b1 - b0
        out = np.empty(n, dtype=np.float32)
        at, gains = self.at[i:j] - b0, self.gains[i:j]         # block-relative samples
        # each breakpoint's first sample at or after it, within the block
        edges = np.clip(np.ceil(at), 0, n).astype(np.int64).tolist()
        out[:edges[0]] = gains[0]
        out[edges[-1]:] = gains[-1]
        if len(self._ramp) < n:
            self._ramp = np.arange(n, dtype=np.float32)
        for k in range(len(edges) - 1):
            lo, hi = edges[k], edges[k + 1]
            if hi > lo:
                slope = (gains[k + 1] - gains[k]) / (at[k + 1] - at[k])
                seg = out[lo:hi]
                np.multiply(self._ramp[:hi - lo], np.float32(slope), out=seg)
                seg += np.float32(gains[k] + (lo - at[k]) * slope)
        return out


def by_instrument(rows: Sequence[GainEnvelope], names: Sequence[str],
                  sample_rate: int) -> dict[int, Envelope]:
    """{index into ``names``: its envelope} of ``rows``; an instrument in two rows is an error, one
    not among ``names`` (no note in this render) is left out."""
    index = {name: i for i, name in enumerate(names)}
    out: dict[int, Envelope] = {}
    seen: set[str] = set()
    for row in rows:
        env = Envelope(row, sample_rate)
        for name in row.instruments:
            if name in seen:
                raise ValueError(f"instrument {name!r} is in two gain envelopes")
            seen.add(name)
            if name in index:
                out[index[name]] = env
    return out

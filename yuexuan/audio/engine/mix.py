"""Mixing a plan block by block, and the look-ahead true-peak limiter's gain."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.audio.engine.plan import Plan
from yuexuan.audio.loudness import bs1770


class Mixed(NamedTuple):
    """One block of the mix; each array a new one, the caller's."""

    start: int                                          # its first sample
    mix: npt.NDArray[np.float32]                        # (n, 2) float32
    stems: dict[int, npt.NDArray[np.float32]] | None    # {instrument index: (n, 2)}, if asked for
    speech: npt.NDArray[np.float32] | None              # the dialogue bus's part of ``mix`` (n, 2)
    #                                                     (``Plan.speech``), None where none sounds


def blocks(p: Plan, block: int, stems: bool = False, first: int = 0, stop: int | None = None,
           ) -> Iterator[Mixed]:
    """Yield each block's :class:`Mixed`, blocks ``first`` to ``stop`` (exclusive; None: the end).

    A singer's mono take is added through his seat's taps into a channel-major bus (each channel's
    row contiguous: twice as fast as a column of the interleaved mix), added to the mix once a
    block. An instrument with a gain envelope (``p.envelopes``) is summed apart, multiplied by its
    gain over the block and then added to the mix; its stem is that product (the stems add up
    to the mix). Without stems the instruments of one envelope are summed apart together (a
    guide mix's players share one: one product a block, not one an instrument). The dialogue
    bus's instruments (``p.speech``) are summed, each at its gain, into a sum of their own,
    ``speech``, which is then added to the mix.
    """
    nev = len(p.starts)
    nxt = 0
    active: list[int] = []
    scratch = np.empty(2 * block, dtype=np.float32)
    bus = np.zeros((2, block), dtype=np.float32)
    end = p.total if stop is None else min(p.total, stop * block)
    # the dialogue bus's instruments heard through taps (an ensemble speaking): summed apart
    tapped = set(np.unique(p.inst[np.fromiter(p.taps, np.int64, len(p.taps))]).tolist()) & p.speech \
        if p.speech and p.taps else set()
    for b0 in range(first * block, end, block):
        b1 = min(p.total, b0 + block)
        while nxt < nev and p.starts[nxt] < b1:
            active.append(nxt)
            nxt += 1
        p.cache.advance(b0)
        mix = np.zeros((b1 - b0, 2), dtype=np.float32)
        parts: dict[int, npt.NDArray[np.float32]] | None = {} if stems else None
        # each enveloped instrument's gain over the block, found once an envelope and only for the
        # instruments that sound here: one value (scaling its notes' gains) or a curve (its
        # sound summed apart, then multiplied by it)
        scales: dict[int, float] = {}
        by_row: dict[int, float | npt.NDArray[np.float32]] = {}
        # an instrument with a curve: what its sound is summed into, before its gain: its own
        # buffer (with stems: its stem) or its envelope's, keyed by the instrument or id(envelope)
        group: dict[int, int] = {}
        shaped: dict[int, npt.NDArray[np.float32]] = {}
        buses: dict[int, npt.NDArray[np.float32]] = {}    # a group's singers, channel-major
        gains_of: dict[int, float | npt.NDArray[np.float32]] = {}
        keep = []
        sung = False
        speech: npt.NDArray[np.float32] | None = None     # the dialogue bus's sum, (n, 2)
        for e in active:
            s, t = int(p.starts[e]), int(p.ends[e])
            if t <= b0:
                continue
            if t > b1:
                keep.append(e)
            a, z = max(s, b0), min(t, b1)
            i = int(p.inst[e])
            if i not in scales and i not in group:
                env = p.envelopes.get(i)
                if i in p.speech:              # the dialogue bus: into its own sum
                    said = 1.0 if env is None else env.gain(b0, b1)
                    if isinstance(said, float) and i not in tapped:
                        scales[i] = said
                    else:
                        group[i] = i
                        gains_of[i] = said
                elif env is None:
                    scales[i] = 1.0
                else:
                    row = by_row.get(id(env))
                    if row is None:
                        row = by_row[id(env)] = env.gain(b0, b1)
                    if isinstance(row, float):
                        scales[i] = row
                    else:
                        group[i] = i if stems else id(env)
                        gains_of[group[i]] = row
            taps = p.taps.get(e) if p.taps else None
            own: npt.NDArray[np.float32] | None = None          # where its sound goes apart
            rows: npt.NDArray[np.float32] | None = None         # … a singer's, channel-major
            if i in group and taps is not None and parts is None:
                rows = buses.get(group[i])
                if rows is None:
                    rows = buses[group[i]] = np.zeros((2, b1 - b0), dtype=np.float32)
                targets = []
            elif i in group:
                own = shaped.get(group[i])
                if own is None:
                    own = shaped[group[i]] = np.zeros((b1 - b0, 2), dtype=np.float32)
                    if parts is not None:
                        parts[i] = own
                targets = [own]
            else:
                bed = mix
                if i in p.speech:
                    if speech is None:
                        speech = np.zeros((b1 - b0, 2), dtype=np.float32)
                    bed = speech
                targets = [bed]
                if parts is not None:
                    if i not in parts:
                        parts[i] = np.zeros((b1 - b0, 2), dtype=np.float32)
                    targets.insert(0, parts[i])
            pcm = p.cache.get(p.keys[e])
            g = float(p.gains[e]) * pcm.unit * scales.get(i, 1.0)
            if taps is None:            # a stereo waveform
                src = pcm.samples.reshape(-1)[2 * (a - s):2 * (z - s)]
                for y in targets:
                    _add_scaled(y.reshape(-1)[2 * (a - b0):2 * (z - b0)], src, g, scratch)
                continue
            mono = pcm.samples           # a singer's mono take: his seat's taps added here, a
            for lag, left, right in taps:    # channel at a time (a broadcast (n, 2) product was 4x slower)
                ta, tz = max(s + lag, b0), min(s + lag + len(mono), b1)
                if tz <= ta:
                    continue
                if own is None and rows is None and not sung:
                    bus[:, :b1 - b0].fill(0.0)
                    sung = True
                dest = bus if rows is None else rows
                part = scratch[:tz - ta]
                for c, gc in ((0, left), (1, right)):
                    np.multiply(mono[ta - s - lag:tz - s - lag], np.float32(g * gc), out=part,
                                dtype=np.float32)
                    if own is not None:
                        own[ta - b0:tz - b0, c] += part
                        continue
                    dest[c, ta - b0:tz - b0] += part
                    if parts is not None:
                        parts[i][ta - b0:tz - b0, c] += part
        active = keep
        if sung:
            mix += bus[:, :b1 - b0].T
        for key, singers in buses.items():
            singers *= gains_of[key]
            mix += singers.T
        for key, own in shaped.items():
            gain = gains_of[key]
            own *= gain if isinstance(gain, float) else gain[:, None]
            if key in p.speech:
                if speech is None:
                    speech = np.zeros((b1 - b0, 2), dtype=np.float32)
                speech += own
            else:
                mix += own
        if speech is not None:
            mix += speech
        yield Mixed(b0, mix, parts, speech)


def limiter_gain(x: npt.NDArray[np.float32], ceiling: float, window: int,
                 lead: int, true_peak: bool = True) -> npt.NDArray[np.float32] | None:
    """Gain (≤ 1) for the middle of ``x`` (after ``lead`` samples of context, before the same at
    the end) that keeps the 4× oversampled peak (``true_peak`` False: the sample peak) at or
    below ``ceiling`` (linear); None if no sample needs less than unity.

    Minimum filter then moving average of the required gain, both 2·window+1 wide: the average of
    minima around a sample never exceeds the gain required there (zero latency, offline). Only
    chunks whose sample peak comes within :data:`bs1770.TP_SEARCH_DB` of the ceiling are
    oversampled.
    """
    need = np.ones(len(x), dtype=np.float32)
    magnitude = bs1770.abs_max_channels(x)
    if true_peak:
        bound = 10 ** (bs1770.TP_SEARCH_DB / 20)
        spans, _ = bs1770.hot_spans(magnitude, ceiling / bound)
        for (lo, hi), env in zip(spans, bs1770.true_peak_envelopes(x, magnitude, spans)):
            if float(env.max()) > ceiling:
                need[lo:hi] = np.minimum(1.0, ceiling / np.maximum(env, 1e-12))
    else:
        over = np.flatnonzero(magnitude > ceiling)
        need[over] = ceiling / magnitude[over]
    low = np.flatnonzero(need < 1.0)
    if not len(low):
        return None
    w = 2 * window + 1
    # the filters only where a window reaches a sample under 1 (elsewhere they give 1 exactly)
    a, b = max(0, int(low[0]) - w), min(len(x), int(low[-1]) + w + 1)
    smooth = np.ones(len(x), dtype=np.float32)
    smooth[a:b] = _moving_mean(_moving_min(need[a:b], w), w)
    g = np.minimum(smooth, 1.0)[lead:len(x) - lead]
    return g if float(g.min()) < 1.0 else None


def _add_scaled(dst: npt.NDArray[np.float32], src: npt.NDArray[Any], g: float,
                scratch: npt.NDArray[np.float32]) -> None:
    """dst += g · src in float32, through ``scratch`` (no allocation; numpy, not BLAS: importing
    scipy.linalg cost 0.2 s of a render's start, and numpy's two passes were faster here)."""
    tmp = scratch[:len(src)]
    np.multiply(src, np.float32(g), out=tmp, dtype=np.float32)
    dst += tmp


def _moving_min(x: npt.NDArray[np.float32], size: int) -> npt.NDArray[np.float32]:
    """``scipy.ndimage.minimum_filter1d(x, size, mode="nearest")`` for an odd ``size``, in O(n)
    (van Herk / Gil–Werman: running minima within blocks of ``size``, forward and backward; a
    window spans two blocks at most)."""
    h = size // 2
    n = len(x)
    p = np.pad(x, (h, h + (-(n + 2 * h)) % size), mode="edge").reshape(-1, size)
    forward = np.minimum.accumulate(p, axis=1).reshape(-1)
    backward = np.minimum.accumulate(p[:, ::-1], axis=1)[:, ::-1].reshape(-1)
    return np.minimum(backward[:n], forward[size - 1:size - 1 + n])


def _moving_mean(x: npt.NDArray[np.float32], size: int) -> npt.NDArray[np.float32]:
    """``scipy.ndimage.uniform_filter1d(x, size, mode="nearest")`` for an odd ``size`` (float64 sums)."""
    h = size // 2
    c = np.concatenate([[0.0], np.cumsum(np.pad(x.astype(np.float64), h, mode="edge"))])
    return ((c[size:] - c[:-size]) / size).astype(x.dtype)

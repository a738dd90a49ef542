"""The renderer's two passes over a stretch of blocks (:mod:`yuexuan.audio.engine.render` runs them,
the stretches in forked processes where it can).

A stretch that does not start at block 0 first mixes the block before it (the "pre-roll"), not
counted: the K-filters and the true-peak meter settle on it, and the limiter takes its look-back
from it; pass 2 also the blocks whose limiting gives back a pulse (dc_free) reaching into it. The
file written is the same, byte for byte, as one stretch's; the loudness measured may differ in its
last bits (1e-7 LU seen: the K-filters' float32 state after the pre-roll), and the re-measured
loudness of a limited block right after a limited pre-roll block starts from pass 1's filter state.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.engine import output
from yuexuan.audio.engine.mix import blocks, limiter_gain
from yuexuan.audio.engine.plan import Plan
from yuexuan.audio.engine.spool import Spool
from yuexuan.audio.loudness import bs1770, gainfit
from yuexuan.audio.loudness.dc_free import PULSE_S, DcFreeLimiting

LIMITER_WINDOW_S = 0.004       # gain falls over 2 windows before a peak and recovers after

Progress = Callable[[float], None] | None
#: where pass 2 puts block k: (k, mix (n, 2) float32 at its gain, limited, ±1 full scale;
#: {instrument index: its stem part, unscaled}; the limiter's gain or None)
Sink = Callable[[int, npt.NDArray[np.float32], dict[int, npt.NDArray[np.float32]],
                 npt.NDArray[np.floating[Any]] | None], None]


@dataclass
class Measured:
    """What pass 1 learnt of the unscaled mix, per block of a stretch."""

    hops: npt.NDArray[np.float64]                   # K-weighted mean square per 100 ms hop
    states: list[npt.NDArray[np.floating[Any]]]     # K-filter state at the start of each block (2)
    peaks: list[float]                              # sample peak of each block
    # per block, each 100 ms hop's 10 ms chunks: (hops, 2 (energy, sample peak), 10), gainfit.py
    hop_peaks: list[npt.NDArray[np.float64]] = field(default_factory=list)


def measure(p: Plan, block: int, k0: int, k1: int, checkpoint: Callable[[], None],
            progress: Progress = None, spool: Spool | None = None) -> Measured:
    """Pass 1 over blocks ``k0`` to ``k1`` (exclusive): mix, and on a worker thread measure (both
    channels K-weighted in one call: BS.1770 adds their mean squares) and put the mix in
    ``spool``. The blocks are whole hops but the ceremony's last, whose rest is not counted (as in
    the standard's block grid)."""
    sr = p.sample_rate
    hop = bs1770.hop_samples(sr)
    first = max(0, k0 - 1)
    sos = bs1770.k_weighting_sos(sr)
    guard = bs1770.guard(block // hop * hop, 2)
    zi: npt.NDArray[np.floating[Any]] = np.zeros((sos.shape[0], 2, 2))
    m = Measured(np.zeros(0), [], [])
    hops: list[npt.NDArray[np.floating[Any]]] = []

    def feed(b0: int, mix: npt.NDArray[np.float32], counted: bool) -> None:
        nonlocal zi
        stats = gainfit.chunk_stats(mix, hop)
        whole = mix[:len(stats) * hop]
        if counted:
            m.states.append(zi.copy())
            m.hop_peaks.append(stats)
            # the block's sample peak: its whole hops' chunk peaks (no second pass over the
            # block), and the samples after the last whole hop (the last block's)
            rest = mix[len(whole):]
            m.peaks.append(max(float(stats[:, 1].max()) if len(stats) else 0.0,
                               float(bs1770.abs_max_channels(rest).max()) if len(rest) else 0.0))
            if spool is not None and m.peaks[-1] > 0.0:      # pass 2 does not read a silent one
                spool.write(b0, mix)
        silent = not len(stats) or float(stats[:, 1].max()) == 0.0
        sq, zi = bs1770.k_hops(whole, sos, zi, hop, guard, silent=silent)
        if counted:
            hops.append(sq)

    with output.Pipe() as meter:
        for k, (b0, mix, _) in enumerate(blocks(p, block, first=first, stop=k1), start=first):
            checkpoint()
            meter.submit(feed, b0, mix, k >= k0)
            if progress:
                progress((k - first + 1) / (k1 - first))
    m.hops = np.concatenate(hops) if hops else np.zeros(0)
    return m


def joined(parts: list[Measured]) -> Measured:
    """The measurements of consecutive stretches as one."""
    return Measured(np.concatenate([q.hops for q in parts]),
                    [z for q in parts for z in q.states],
                    [v for q in parts for v in q.peaks], [h for q in parts for h in q.hop_peaks])


@dataclass
class Levelled:
    """What pass 2 measured of its stretch."""

    hops: dict[int, npt.NDArray[np.floating[Any]]]  # re-measured hops, by block (limited ones)
    limited: int                                    # samples the limiter pulled down
    peak: float                                     # true peak (linear) of the stretch


def level(p: Plan, block: int, k0: int, k1: int, gain: float, ceiling: float, m: Measured,
          sink: Sink, checkpoint: Callable[[], None], progress: Progress = None,
          stems: bool = False, spool: Spool | None = None) -> Levelled:
    """Pass 2 over blocks ``k0`` to ``k1``: read pass 1's mix from ``spool`` (without stems) or
    mix again (the mixer is deterministic: the same samples), scale by
    ``gain``, limit to ``ceiling`` (linear), re-measure the loudness where the limiter acted, meter
    the true peak and hand each block to ``sink`` (in order, on a worker thread). ``m``: pass 1's
    measurements of every block."""
    sr = p.sample_rate
    window = max(1, int(LIMITER_WINDOW_S * sr))
    lead = 2 * window + bs1770.TAPS_PER_PHASE
    hop = bs1770.hop_samples(sr)
    sos = bs1770.k_weighting_sos(sr)
    guard = bs1770.guard(block, 2)     # made once: the limited blocks are re-measured with it
    nblocks = len(m.peaks)
    search = 10 ** (bs1770.TP_SEARCH_DB / 20)
    # the sample peak (or, if limiting will happen, the ceiling) bounds the true peak from below:
    # only chunks within TP_SEARCH_DB of it are oversampled
    tp = bs1770.TruePeakMeter(floor=min(max(m.peaks, default=0.0) * gain * 0.999, ceiling))
    out = Levelled({}, 0, 0.0)
    dc_free = DcFreeLimiting(sr)       # the limiter takes away no DC (yuexuan/audio/loudness/dc_free.py)
    carry = None                       # K-filter state of the limited output, while it differs
    silence = np.zeros((0, 2), np.float32)
    # the pre-roll: the block before, and as many more as the limiter's restoring pulse lasts
    # (a pulse begun before the stretch reaches into it as in one process)
    first = max(0, k0 - 1 - math.ceil(PULSE_S * sr / block))
    stop = min(nblocks, k1 + 1)
    # a block pass 1 found silent is not read back (nor written to the spool): zeros
    mixed = spool.blocks(block, first, stop, skip=lambda k: m.peaks[k] == 0.0) \
        if spool is not None and not stems else blocks(p, block, stems=stems, first=first, stop=stop)

    def read_block() -> tuple[npt.NDArray[np.float32], dict[int, npt.NDArray[np.float32]]]:
        _, mix, parts = next(mixed)
        return mix * np.float32(gain), parts or {}

    with output.Pipe() as writer, output.Pipe() as peak_meter:
        nxt, nxt_parts = read_block()
        prev_tail = np.zeros((lead, 2), np.float32)
        for k in range(first, k1):
            checkpoint()
            cur, parts = nxt, nxt_parts
            nxt, nxt_parts = read_block() if k + 1 < nblocks else (silence, {})
            g = None
            if max(m.peaks[max(0, k - 1):k + 2]) * gain * search > ceiling:
                head = nxt[:lead]
                if len(head) < lead:
                    head = np.concatenate([head, np.zeros((lead - len(head), 2), np.float32)])
                g = limiter_gain(np.concatenate([prev_tail, cur, head]), ceiling, window, lead)
            y = dc_free.apply(cur, g)
            prev_tail = cur[-lead:] if len(cur) >= lead else np.concatenate([prev_tail, cur])[-lead:]
            if g is not None or carry is not None:
                zi = carry if carry is not None else m.states[k] * gain
                sq, zi = bs1770.k_hops(y, sos, zi, hop, guard)
                if k >= k0:
                    out.hops[k] = sq
                carry = zi if g is not None else None
            peak_meter.submit(tp.feed, y)
            if k < k0:
                continue
            if g is not None:
                out.limited += int(np.count_nonzero(g < 0.999))
            writer.submit(sink, k, y, parts, g)
            if progress:
                progress((k - k0 + 1) / (k1 - k0))
    if k1 >= nblocks:
        tp.flush()
    out.peak = tp.peak
    return out

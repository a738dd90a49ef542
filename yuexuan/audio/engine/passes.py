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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.engine import output
from yuexuan.audio.engine.mix import Mixed, blocks, limiter_gain
from yuexuan.audio.engine.plan import Plan
from yuexuan.audio.engine.spool import Spool
from yuexuan.audio.loudness import bs1770, gainfit
from yuexuan.audio.loudness.dc_free import PULSE_S, DcFreeLimiting

LIMITER_WINDOW_S = 0.004       # gain falls over 2 windows before a peak and recovers after
# The dialogue bus (a produced mix's speech, Plan.speech) is limited first, on its own, keyed by
# the whole mix's sample peak, this far under the ceiling: its peaks, the mix's loudest under a
# call, then rarely take the music under it down with them at the true-peak limiter (speech's
# inter-sample peaks lie within a few tenths of a dB of its samples'; the guide's duck stays the
# envelope's, issue 29). By sample peak: a second true-peak search over every call cost the
# guide's whole render about 0.3 s of its 5 s.
SPEECH_UNDER_DB = 1.0
SPEECH_FLOOR = 0.25            # its limiter never takes speech down by more than 12 dB

Progress = Callable[[float], None] | None
#: where pass 2 puts block k: (k, mix (n, 2) float32 at its gain, limited, ±1 full scale;
#: {instrument index: its stem part, unscaled}; the limiter's gain or None; the dialogue bus's
#: own limiter's gain, applied before it to the instruments of ``Plan.speech``, or None)
Gain = npt.NDArray[np.floating[Any]] | None
Sink = Callable[[int, npt.NDArray[np.float32], dict[int, npt.NDArray[np.float32]], Gain, Gain], None]


@dataclass
class Measured:
    """What pass 1 learnt of the unscaled mix, per block of a stretch."""

    hops: npt.NDArray[np.float64]                   # K-weighted mean square per 100 ms hop
    states: list[npt.NDArray[np.floating[Any]]]     # K-filter state at the start of each block (2)
    peaks: list[float]                              # sample peak of each block
    # per block, each 100 ms hop's 10 ms chunks: (hops, 2 (energy, sample peak), 10), gainfit.py
    hop_peaks: list[npt.NDArray[np.float64]] = field(default_factory=list)
    # per block, where the dialogue bus sounds: (hops, 10) of the chunks above, or None: nowhere
    speech: list[npt.NDArray[np.bool_] | None] = field(default_factory=list)


def measure(p: Plan, block: int, k0: int, k1: int, checkpoint: Callable[[], None],
            progress: Progress = None, spool: Spool | None = None,
            speech_spool: Spool | None = None) -> Measured:
    """Pass 1 over blocks ``k0`` to ``k1`` (exclusive): mix, and on a worker thread measure (both
    channels K-weighted in one call: BS.1770 adds their mean squares) and put the mix in
    ``spool``, the dialogue bus's part of it in ``speech_spool``. The blocks are whole hops but
    the ceremony's last, whose rest is not counted (as in the standard's block grid)."""
    sr = p.sample_rate
    hop = bs1770.hop_samples(sr)
    first = max(0, k0 - 1)
    sos = bs1770.k_weighting_sos(sr)
    guard = bs1770.guard(block // hop * hop, 2)
    zi: npt.NDArray[np.floating[Any]] = np.zeros((sos.shape[0], 2, 2))
    m = Measured(np.zeros(0), [], [])
    hops: list[npt.NDArray[np.floating[Any]]] = []

    def feed(b0: int, mix: npt.NDArray[np.float32], speech: npt.NDArray[np.float32] | None,
             counted: bool) -> None:
        nonlocal zi
        stats = gainfit.chunk_stats(mix, hop)
        whole = mix[:len(stats) * hop]
        if counted:
            m.states.append(zi.copy())
            m.hop_peaks.append(stats)
            m.speech.append(None if speech is None else _sounding_chunks(speech, len(stats), hop))
            if speech_spool is not None and speech is not None:
                speech_spool.write(b0, speech)
            # the block's sample peak: its whole hops' chunk peaks (no second pass over the
            # block), and the samples after the last whole hop (the last block's)
            rest = mix[len(whole):]
            m.peaks.append(max(float(stats[:, 1].max()) if len(stats) else 0.0,
                               _peak(rest)))
            if spool is not None and m.peaks[-1] > 0.0:      # pass 2 does not read a silent one
                spool.write(b0, mix)
        silent = not len(stats) or float(stats[:, 1].max()) == 0.0
        sq, zi = bs1770.k_hops(whole, sos, zi, hop, guard, silent=silent)
        if counted:
            hops.append(sq)

    with output.Pipe() as meter:
        for k, mixed in enumerate(blocks(p, block, first=first, stop=k1), start=first):
            checkpoint()
            meter.submit(feed, mixed.start, mixed.mix, mixed.speech, k >= k0)
            if progress:
                progress((k - first + 1) / (k1 - first))
    m.hops = np.concatenate(hops) if hops else np.zeros(0)
    return m


def joined(parts: list[Measured]) -> Measured:
    """The measurements of consecutive stretches as one."""
    return Measured(np.concatenate([q.hops for q in parts]),
                    [z for q in parts for z in q.states],
                    [v for q in parts for v in q.peaks], [h for q in parts for h in q.hop_peaks],
                    [b for q in parts for b in q.speech])


@dataclass
class Levelled:
    """What pass 2 measured of its stretch."""

    hops: dict[int, npt.NDArray[np.floating[Any]]]  # re-measured hops, by block (limited ones)
    limited: int                                    # samples the limiter pulled down
    peak: float                                     # true peak (linear) of the stretch


def level(p: Plan, block: int, k0: int, k1: int, gain: float, ceiling: float, m: Measured,
          sink: Sink, checkpoint: Callable[[], None], progress: Progress = None,
          stems: bool = False, spool: Spool | None = None,
          speech_spool: Spool | None = None) -> Levelled:
    """Pass 2 over blocks ``k0`` to ``k1``: read pass 1's mix from ``spool`` (and its dialogue
    bus from ``speech_spool``; without stems) or mix again (the mixer is deterministic: the same
    samples), scale by ``gain``, limit the dialogue bus to :data:`SPEECH_UNDER_DB` under
    ``ceiling`` (linear) and then the whole to ``ceiling``, re-measure the loudness where a
    limiter acted, meter the true peak and hand each block to ``sink`` (in order, on a worker
    thread). ``m``: pass 1's measurements of every block."""
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
    speech_ceiling = ceiling * 10 ** (-SPEECH_UNDER_DB / 20)
    carry = None                       # K-filter state of the limited output, while it differs
    silence = np.zeros((0, 2), np.float32)
    # the pre-roll: the block before, and as many more as the limiter's restoring pulse lasts
    # (a pulse begun before the stretch reaches into it as in one process)
    first = max(0, k0 - 1 - math.ceil(PULSE_S * sr / block))
    stop = min(nblocks, k1 + 1)
    # a block pass 1 found silent is not read back (nor written to the spool): zeros
    mixed = _from_spool(spool, block, first, stop, m) \
        if spool is not None and not stems else blocks(p, block, stems=stems, first=first, stop=stop)

    def read_block() -> Mixed:
        b = next(mixed)
        return Mixed(b.start, b.mix * np.float32(gain), b.stems or {}, b.speech)    # speech unscaled

    def spoken(k: int, mixed_speech: npt.NDArray[np.float32] | None, n: int) -> npt.NDArray[np.float32]:
        """Block k's dialogue bus, unscaled: as mixed again, or read back from pass 1's spool."""
        if mixed_speech is not None or speech_spool is None:
            return mixed_speech if mixed_speech is not None else np.zeros((n, 2), np.float32)
        return speech_spool.read(k * block, n)

    def context(cur: npt.NDArray[np.float32], head: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The block with the limiter's look-back and look-ahead."""
        head = head[:lead]
        if len(head) < lead:
            head = np.concatenate([head, np.zeros((lead - len(head), 2), np.float32)])
        return np.concatenate([prev_tail, cur, head])

    with output.Pipe() as writer, output.Pipe() as peak_meter:
        nxt = read_block()
        prev_tail = np.zeros((lead, 2), np.float32)
        for k in range(first, k1):
            checkpoint()
            cur, parts, mixed_speech = nxt.mix, nxt.stems or {}, nxt.speech
            nxt = read_block() if k + 1 < nblocks else Mixed(0, silence, {}, None)
            # the sample peak of what a limiter sees (the block, its look-back and look-ahead): a
            # limiter whose ceiling lies TP_SEARCH_DB over it gives no gain (limiter_gain: None)
            edges = max(_peak(prev_tail), _peak(nxt.mix[:lead]))
            hot = max(edges, m.peaks[k] * gain * 1.0001) * search
            # the dialogue bus first: its gain keyed by the whole mix, applied to it alone
            gs = None
            seen = None                 # the block in its context, as the limiters see it
            if m.speech[k] is not None and hot > speech_ceiling * search:
                seen = context(cur, nxt.mix)
                gs = limiter_gain(seen, speech_ceiling, window, lead, true_peak=False)
            if gs is not None:          # (speech's pulled peaks leave no DC worth a restoring pulse)
                gs = np.maximum(gs, np.float32(SPEECH_FLOOR))
                pull = (gs - np.float32(1.0)) * np.float32(gain)
                cur = cur + spoken(k, mixed_speech, len(cur)) * pull[:, None]
                hot = max(edges, _peak(cur)) * search
                seen = None
            g = None
            if hot > ceiling:
                g = limiter_gain(seen if seen is not None else context(cur, nxt.mix), ceiling, window, lead)
            y = dc_free.apply(cur, g)
            prev_tail = cur[-lead:] if len(cur) >= lead else np.concatenate([prev_tail, cur])[-lead:]
            if g is not None or gs is not None or carry is not None:
                zi = carry if carry is not None else m.states[k] * gain
                sq, zi = bs1770.k_hops(y, sos, zi, hop, guard)
                if k >= k0:
                    out.hops[k] = sq
                carry = zi if g is not None or gs is not None else None
            peak_meter.submit(tp.feed, y)
            if k < k0:
                continue
            if g is not None or gs is not None:      # samples either limiter pulled down
                pulled = [h for h in (g, gs) if h is not None]
                least = pulled[0] if len(pulled) == 1 else np.minimum(*pulled)
                out.limited += int(np.count_nonzero(least < 0.999))
            writer.submit(sink, k, y, parts, g, gs)
            if progress:
                progress((k - k0 + 1) / (k1 - k0))
    if k1 >= nblocks:
        tp.flush()
    out.peak = tp.peak
    return out


def _sounding_chunks(x: npt.NDArray[np.float32], hops: int, hop: int) -> npt.NDArray[np.bool_]:
    """(hops, 10): whether each 10 ms chunk of ``x``'s first ``hops`` whole hops has a sample ≠ 0."""
    if hop % gainfit.CHUNKS:
        return gainfit.chunk_stats(x, hop)[:, 1] > 0
    return x[:hops * hop].reshape(hops * gainfit.CHUNKS, -1).any(axis=1).reshape(hops, gainfit.CHUNKS)


def _peak(x: npt.NDArray[np.float32]) -> float:
    """The sample peak of ``x`` (n, 2); 0 if empty."""
    return float(bs1770.abs_max_channels(x).max()) if len(x) else 0.0


def _from_spool(spool: Spool, block: int, first: int, stop: int, m: Measured) -> Iterator[Mixed]:
    """Blocks ``first`` to ``stop`` of pass 1's mix as :func:`blocks` mixed them (without stems),
    read back: a block pass 1 found silent as zeros (it was not written). Their dialogue bus's part
    is left out (None): :func:`level` reads it only where its limiter acts."""
    for b0, mix in spool.blocks(block, first, stop, skip=lambda k: m.peaks[k] == 0.0):
        yield Mixed(b0, mix, None, None)


def chunk_ceilings(m: Measured, ceiling: float) -> npt.NDArray[np.float64]:
    """(hops, 10): the ceiling each 10 ms chunk of pass 1's hops is limited to (linear): the
    dialogue bus's, :data:`SPEECH_UNDER_DB` under ``ceiling``, where it sounds (for
    :mod:`yuexuan.audio.loudness.gainfit`'s prediction)."""
    out = np.full((len(m.hops), gainfit.CHUNKS), ceiling)
    at = 0
    for stats, speech in zip(m.hop_peaks, m.speech):
        if speech is not None:
            n = min(len(speech), len(out) - at)
            out[at:at + n][speech[:n]] = ceiling * 10 ** (-SPEECH_UNDER_DB / 20)
        at += len(stats)
    return out

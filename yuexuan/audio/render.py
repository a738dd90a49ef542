"""The audio renderer: Timeline → stereo file (WAV or FLAC), stems and chapter sidecars.

Streaming, in two passes over fixed-size blocks (never the whole ceremony in memory):

1. the plan (:mod:`yuexuan.audio.plan`) places every note; its waveforms are synthesised into the
   plan's cache; blocks of the mix (:mod:`yuexuan.audio.mix`) are measured
   (:class:`~yuexuan.audio.loudness.LoudnessMeter`);
2. the gain pass mixes the blocks again (the renderer is deterministic: the same samples; cheaper
   than spooling them, which cost 2.4 s of writing for the whole ceremony's 590 MB), scales them to
   the loudness target, passes them through the look-ahead true-peak limiter, measures them again
   and writes them (:mod:`yuexuan.audio.output`) to a temporary file beside the target, renamed on
   success. Stems are mixed in the same blocks with the same gain and limiter envelope, so they add
   up to the mix sample for sample.

Then the chapter sidecars (:mod:`yuexuan.formats.captions`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from yuexuan import atomic, interrupts
from yuexuan.audio import gainfit, loudness, memory, output
from yuexuan.audio.mix import blocks, limiter_gain
from yuexuan.audio.output import output_format
from yuexuan.audio.plan import Options, Plan, plan
from yuexuan.formats import captions
from yuexuan.rite import courtyard
from yuexuan.rite.courtyard import Listener
from yuexuan.timeline import Timeline, select

__all__ = ["Options", "Report", "output_format", "render"]

LIMITER_MARGIN_DB = 0.4        # the limiter aims this far under the ceiling
LIMITER_WINDOW_S = 0.004       # gain falls over 2 windows before a peak and recovers after
LOUDNESS_TOLERANCE_LU = 0.1    # re-run the gain pass if the limiter moved loudness more
MAX_GAIN_PASSES = 3


@dataclass
class Report:
    path: str
    duration_s: float
    notes: int
    loudness_lufs: float
    true_peak_dbtp: float
    gain_db: float
    limited_s: float                   # time the limiter pulled the gain down, s
    passes: int
    stems: list[str] = field(default_factory=list)
    sidecars: list[str] = field(default_factory=list)
    cache_misses: int = 0


@dataclass
class _Measured:
    """What pass 1 learnt of the unscaled mix, per block."""

    hops: npt.NDArray[np.float64]                   # K-weighted mean square per 100 ms hop
    states: list[npt.NDArray[np.floating[Any]]]           # K-filter state at the start of each block
    peaks: list[float]                 # sample peak of each block
    # per block, each 100 ms hop's 10 ms chunks: (hops, 2 (energy, sample peak), 10), gainfit.py
    hop_peaks: list[npt.NDArray[np.float64]] = field(default_factory=list)


def render(timeline: Timeline, out_path: str | Path, options: Options = Options(),
           stems_dir: str | Path | None = None, progress: Callable[[float, str], None] | None = None,
           listener_table: dict[str, Listener] | None = None) -> Report:
    """Render ``timeline`` to ``out_path`` (.wav or .flac) atomically; optional stems.

    ``options.cues``: only those cues, cut out by :func:`yuexuan.timeline.select` (the file's
    time 0 is then the first one's start). Instruments are synthesised and placed from
    ``timeline.instruments`` alone; the listener seats come from ``listener_table`` (default:
    the packaged ``ceremony/courtyard.toml``).
    ``progress(fraction, stage)`` is called after each block. Returns the measured figures.
    SIGINT and SIGTERM take effect between blocks (:mod:`yuexuan.interrupts`).

    While rendering, BLAS (the note adds, the oversampling) runs single-threaded: the renderer
    keeps both cores busy with its own threads, and BLAS's spinning helpers only slow them down.
    """
    with threadpool_limits(limits=1, user_api="blas"), \
            interrupts.deferred_signals() as checkpoint:
        return _render(select(timeline, options.cues), Path(out_path), options, stems_dir, progress,
                       listener_table if listener_table is not None else courtyard.listeners(),
                       checkpoint)


def _render(timeline: Timeline, out_path: Path, options: Options, stems_dir: str | Path | None,
            progress: Callable[[float, str], None] | None, listener_table: dict[str, Listener],
            checkpoint: Callable[[], None]) -> Report:
    fmt, subtype = output_format(out_path)
    memory.limit_arenas()
    p = plan(timeline, options, listener_table)
    sr = p.sample_rate
    hop = loudness.hop_samples(sr)
    block = max(hop, options.block // hop * hop)     # whole hops: pass 2 can re-measure a block
    nblocks = max(1, math.ceil(p.total / block))
    out_path.parent.mkdir(parents=True, exist_ok=True)

    # pass 1: mix and measure
    # one K-weighting meter per channel, each on its own worker thread (BS.1770 adds the
    # channels' mean squares, so per-channel hop energies simply add)
    meters = [loudness.LoudnessMeter(sr, channels=1) for _ in range(2)]
    states: list[list[npt.NDArray[np.floating[Any]]]] = [[], []]
    m = _Measured(np.zeros(0), [], [])

    def measure(c: int, mix: npt.NDArray[np.float32]) -> None:
        states[c].append(meters[c].zi.copy())
        meters[c].feed(mix[:, c:c + 1])
        if c == 1:
            m.hop_peaks.append(gainfit.chunk_stats(mix, hop))

    p.cache.prefetch(p.keys, tick=checkpoint, group=p.group)
    with output.Pipe() as left, output.Pipe() as right:
        for k, (_, mix, _) in enumerate(blocks(p, block)):
            checkpoint()
            m.peaks.append(float(np.max(np.abs(mix))) if len(mix) else 0.0)
            left.submit(measure, 0, mix)
            right.submit(measure, 1, mix)
            if progress:
                progress((k + 1) / nblocks / 2, "mix")
    m.hops = meters[0].hops + meters[1].hops
    m.states = [np.concatenate(z, axis=2) for z in zip(*states)]
    # the gain that the limiter's loss, predicted from each hop's peak, leaves at the target
    # (yuexuan/audio/gainfit.py); then corrections from the measured passes
    hop_peaks = np.concatenate(m.hop_peaks)[:len(m.hops)] if m.hop_peaks else np.zeros((0, 2, 1))
    ceiling = 10 ** ((options.ceiling_dbtp - LIMITER_MARGIN_DB) / 20)
    gain_db = gainfit.first_gain_db(m.hops, hop_peaks, options.target_lufs, ceiling)
    measured: list[tuple[float, float]] = []
    passes = 0
    while True:
        passes += 1
        rep = _gain_pass(p, out_path, fmt, subtype, 10 ** (gain_db / 20), options, block, m,
                         Path(stems_dir) if stems_dir else None,
                         (lambda f: progress(0.5 + f / 2, "level")) if progress else None,
                         checkpoint)
        off = options.target_lufs - rep.loudness_lufs
        if not math.isfinite(off) or abs(off) <= LOUDNESS_TOLERANCE_LU \
                or passes >= MAX_GAIN_PASSES:
            break
        measured.append((gain_db, rep.loudness_lufs))
        gain_db = gainfit.next_gain_db(measured, options.target_lufs, m.hops, hop_peaks, ceiling)
    rep.notes = len(p.starts)
    rep.passes = passes
    rep.cache_misses = p.cache.misses
    rows = captions.chapters(timeline, p.duration_s)
    rep.sidecars = captions.write_sidecars(timeline, out_path, rows)
    return rep


def _gain_pass(p: Plan, out_path: Path, fmt: str, subtype: str, gain: float,
               options: Options, block: int, m: _Measured, stems_dir: Path | None,
               progress: Callable[[float], None] | None, checkpoint: Callable[[], None]) -> Report:
    """Mix again, scale, limit, write; loudness from pass 1's hops × gain², re-measured only
    where the limiter acted (and one block after, while the K-filter forgets)."""
    sr = p.sample_rate
    ceiling = 10 ** ((options.ceiling_dbtp - LIMITER_MARGIN_DB) / 20)
    window = max(1, int(LIMITER_WINDOW_S * sr))
    lead = 2 * window + loudness.TAPS_PER_PHASE
    hop = loudness.hop_samples(sr)
    sos = loudness.k_weighting_sos(sr)
    hops = m.hops * gain ** 2
    per_block = block // hop
    nblocks = len(m.peaks)
    search = 10 ** (loudness.TP_SEARCH_DB / 20)
    # the sample peak (or, if limiting will happen, the ceiling) bounds the true peak from below:
    # only chunks within TP_SEARCH_DB of it are oversampled
    tp = loudness.TruePeakMeter(floor=min(max(m.peaks, default=0.0) * gain * 0.999, ceiling))
    limited = 0
    carry = None                       # K-filter state of the limited output, while it differs
    silence = np.zeros((0, 2), np.float32)
    mixed = blocks(p, block, stems=stems_dir is not None)

    def read_block() -> tuple[npt.NDArray[np.float32], dict[int, npt.NDArray[np.float32]]]:
        _, mix, parts = next(mixed)
        return mix * np.float32(gain), parts or {}      # a new array: the mixer reuses its own

    stem_paths = [output.stem_path(stems_dir, n, out_path.suffix) for n in p.names] \
        if stems_dir is not None else []
    # Exits run in reverse: the worker threads stop first (a write under way finishes), then each
    # file closes and is renamed onto its target, or removed if an exception (a signal acted on
    # at a checkpoint, a full disk) is passing through.
    with contextlib.ExitStack() as files:
        out = files.enter_context(output.open_stereo(
            files.enter_context(atomic.atomic_path(out_path)), sr, fmt, subtype))
        if stems_dir is not None:
            stems_dir.mkdir(parents=True, exist_ok=True)
        stem_files = [files.enter_context(output.open_stereo(
            files.enter_context(atomic.atomic_path(path)), sr, fmt, subtype)) for path in stem_paths]
        writer = files.enter_context(output.Pipe())
        peak_meter = files.enter_context(output.Pipe())

        def write(y: npt.NDArray[np.float32], parts: dict[int, npt.NDArray[np.float32]],
                  g: npt.NDArray[np.floating[Any]] | None) -> None:
            out.write(output.to_pcm16(y))
            for i, f in enumerate(stem_files):
                part = parts.get(i)
                if part is None:
                    f.write(np.zeros(y.shape, dtype=np.int16))
                    continue
                part *= np.float32(gain)
                if g is not None:
                    part *= g[:, None]
                f.write(output.to_pcm16(part))

        nxt, nxt_parts = read_block() if nblocks else (silence, {})
        prev_tail = np.zeros((lead, 2), np.float32)
        for k in range(nblocks):
            checkpoint()
            cur, parts = nxt, nxt_parts
            nxt, nxt_parts = read_block() if k + 1 < nblocks else (silence, {})
            g = None
            if max(m.peaks[max(0, k - 1):k + 2]) * gain * search > ceiling:
                head = nxt[:lead]
                if len(head) < lead:
                    head = np.concatenate([head, np.zeros((lead - len(head), 2), np.float32)])
                g = limiter_gain(np.concatenate([prev_tail, cur, head]), ceiling, window, lead)
            y = cur if g is None else cur * g[:, None]
            prev_tail = np.concatenate([prev_tail, cur])[-lead:]
            if g is not None or carry is not None:
                zi = carry if carry is not None else m.states[k] * gain
                sq, zi = loudness.k_hops(y, sos, zi, hop)
                hops[k * per_block:k * per_block + len(sq)] = sq
                carry = zi if g is not None else None
            if g is not None:
                limited += int(np.count_nonzero(g < 0.999))
            writer.submit(write, y, parts, g)
            peak_meter.submit(tp.feed, y)
            if progress:
                progress((k + 1) / nblocks)
        writer.drain()
        peak_meter.drain()
        tp.flush()
    return Report(str(out_path), p.duration_s, 0, loudness.gated_loudness(hops), tp.dbtp(),
                  20 * math.log10(gain), limited / sr, 0, [str(path) for path in stem_paths])

"""The audio renderer: Timeline → stereo file (WAV or FLAC), stems and chapter sidecars.

Streaming, in two passes over fixed-size blocks (never the whole ceremony in memory):

1. the plan (:mod:`yuexuan.audio.engine.plan`) places every note; its waveforms are synthesised into
   the plan's cache by forked workers; blocks of the mix (:mod:`yuexuan.audio.engine.mix`) are
   measured (:func:`yuexuan.audio.engine.passes.measure`) and kept in the spool
   (:mod:`yuexuan.audio.engine.spool`) where the output's folder has room for them;
2. the gain pass reads the blocks back from the spool (or mixes them again: the renderer is
   deterministic, the same samples), scales them to the loudness target, passes them through the
   look-ahead true-peak limiter, measures them again and writes them
   (:mod:`yuexuan.audio.engine.output`) to a temporary file beside the target, renamed on success.
   Stems are mixed in the same blocks with the same gain and limiter envelope, so they add up to
   the mix sample for sample.

Both passes run in stretches of blocks shared with a forked worker
(:mod:`yuexuan.audio.engine.workers`). Then the chapter sidecars (:mod:`yuexuan.formats.captions`).
"""
from __future__ import annotations

import contextlib
import itertools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from yuexuan import atomic, interrupts
from yuexuan.audio.engine import filter_kernel, output, passes, workers
from yuexuan.audio.engine.output import output_format
from yuexuan.audio.engine.plan import Options, Plan, plan, shape
from yuexuan.audio.engine.spool import Spool
from yuexuan.audio.loudness import bs1770, gainfit
from yuexuan.audio.loudness.dc_free import DcFreeLimiting
from yuexuan.data import DataSource
from yuexuan.formats import captions
from yuexuan.rite import courtyard
from yuexuan.rite.courtyard import Listener
from yuexuan.timeline import Timeline, select

__all__ = ["Options", "Report", "output_format", "render"]

LIMITER_MARGIN_DB = 0.4        # the limiter aims this far under the ceiling
SPLIT_MIN_BLOCKS = 8           # a shorter render is one stretch (not worth a second process)
STRETCH_BLOCKS = 64            # blocks of a stretch that the two processes share (about)
T = TypeVar("T")
Spools = tuple[Spool | None, Spool | None]      # pass 1's mix; its dialogue bus's part
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


def render(timeline: Timeline, out_path: str | Path, options: Options = Options(),
           stems_dir: str | Path | None = None, progress: Callable[[float, str], None] | None = None,
           listener_table: dict[str, Listener] | None = None,
           data: DataSource = DataSource()) -> Report:
    """Render ``timeline`` to ``out_path`` (.wav or .flac) atomically; optional stems.

    ``options.cues``: only those cues, cut out by :func:`yuexuan.timeline.select` (the file's
    time 0 is then the first one's start). Instruments are synthesised and placed from
    ``timeline.instruments`` alone; the venue (the courtyard's surfaces) and the readings table
    come from ``data``, the listener seats from ``listener_table`` (default: those of ``data``).
    ``progress(fraction, stage)`` is called after each block. Returns the measured figures.
    SIGINT and SIGTERM take effect between blocks (:mod:`yuexuan.interrupts`).

    While rendering, BLAS (the note adds, the oversampling) runs single-threaded: the renderer
    keeps both cores busy with its own threads, and BLAS's spinning helpers only slow them down.
    """
    with threadpool_limits(limits=1, user_api="blas"), filter_kernel.in_force(), \
            interrupts.deferred_signals() as checkpoint:
        return _render(select(timeline, options.cues), Path(out_path), options, stems_dir, progress,
                       listener_table if listener_table is not None else courtyard.listeners(source=data),
                       data, checkpoint)


def _render(timeline: Timeline, out_path: Path, options: Options, stems_dir: str | Path | None,
            progress: Callable[[float, str], None] | None, listener_table: dict[str, Listener],
            data: DataSource, checkpoint: Callable[[], None]) -> Report:
    fmt, subtype = output_format(out_path)
    p = plan(timeline, options, listener_table, data=data, shaped=False)
    sr = p.sample_rate
    hop = bs1770.hop_samples(sr)
    block = max(hop, options.block // hop * hop)     # whole hops: pass 2 can re-measure a block
    nblocks = max(1, math.ceil(p.total / block))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    # the gain envelopes (a guide mix's: 0.4 s) are made here while the workers synthesise
    p.cache.prefetch(p.keys, tick=checkpoint, group=p.group,
                     meanwhile=lambda: shape(p, timeline, options))
    # pass 1 (mix and measure) in stretches of blocks, shared with a forked child; pass 2 too where
    # the output is a WAV file (which both can write at known offsets) and no stems are made; else
    # it runs here (one FLAC encoder, the stems' files). Pass 1's mix goes to a spool where the
    # output's folder has room for it: pass 2 reads it back instead of mixing again.
    bounds = stretches(nblocks)
    shared = workers.available() and len(bounds) > 1
    split = shared and fmt == "WAV" and stems_dir is None \
        and output.WAV_HEADER_BYTES + 4 * p.total < 2 ** 32
    with contextlib.ExitStack() as stack:
        spool = Spool.open(out_path.parent, p.total) if stems_dir is None else None
        if spool is not None:
            stack.enter_context(spool)
        # the dialogue bus's part of the mix, where it sounds (a sparse file), for its own limiter
        speech_spool = Spool.open(out_path.parent, p.total, reserve=False) \
            if spool is not None and p.speech else None
        if speech_spool is not None:
            stack.enter_context(speech_spool)
        elif p.speech:
            spool = None                       # pass 2 mixes again, the dialogue bus apart

        def mix_and_measure(k0: int, k1: int, here: bool) -> passes.Measured:
            return passes.measure(p, block, k0, k1, checkpoint if here else _nothing,
                                  _share_of(progress, "mix", 0.0, k0, k1, nblocks) if here else None,
                                  spool, speech_spool)

        m = passes.joined(_shared(mix_and_measure, bounds, shared, checkpoint))
        return _gain_passes(timeline, p, out_path, fmt, subtype, options, block, m,
                            (spool, speech_spool), bounds if split else None, stems_dir, progress,
                            checkpoint)


def _gain_passes(timeline: Timeline, p: Plan, out_path: Path, fmt: str, subtype: str,
                 options: Options, block: int, m: passes.Measured, spools: Spools,
                 bounds: list[tuple[int, int]] | None, stems_dir: str | Path | None,
                 progress: Callable[[float, str], None] | None,
                 checkpoint: Callable[[], None]) -> Report:
    """Pass 2 until the loudness is on target (at most MAX_GAIN_PASSES times), then the sidecars.
    ``bounds``: pass 2's stretches, shared with a forked child; None: one stretch, here."""
    # the gain that the limiter's loss, predicted from each hop's peak, leaves at the target
    # (yuexuan/audio/loudness/gainfit.py); then corrections from the measured passes
    hop_peaks = np.concatenate(m.hop_peaks)[:len(m.hops)] if m.hop_peaks else np.zeros((0, 2, 1))
    ceiling = 10 ** ((options.ceiling_dbtp - LIMITER_MARGIN_DB) / 20)
    ceilings = passes.chunk_ceilings(m, ceiling)
    gain_db = gainfit.first_gain_db(m.hops, hop_peaks, options.target_lufs, ceilings)
    measured: list[tuple[float, float]] = []
    passes_run = 0
    while True:
        passes_run += 1
        args = (p, out_path, fmt, subtype, 10 ** (gain_db / 20), ceiling, block, m, spools,
                progress, checkpoint)
        rep = _gain_pass_split(*args, bounds) if bounds is not None else \
            _gain_pass(*args, Path(stems_dir) if stems_dir else None)
        off = options.target_lufs - rep.loudness_lufs
        if not math.isfinite(off) or abs(off) <= LOUDNESS_TOLERANCE_LU \
                or passes_run >= MAX_GAIN_PASSES:
            break
        measured.append((gain_db, rep.loudness_lufs))
        gain_db = gainfit.next_gain_db(measured, options.target_lufs, m.hops, hop_peaks, ceilings)
    rep.notes = len(p.starts)
    rep.passes = passes_run
    rows = captions.chapters(timeline, p.duration_s)
    rep.sidecars = captions.write_sidecars(timeline, out_path, rows)
    return rep


def stretches(nblocks: int) -> list[tuple[int, int]]:
    """(first, stop) of the stretches of ``nblocks`` blocks: at least two (from SPLIT_MIN_BLOCKS
    blocks on) of about STRETCH_BLOCKS blocks each, at most 255. Each but the first mixes one
    block more, its pre-roll. They depend on ``nblocks`` alone: whether one process runs them or
    two share them, the file is the same."""
    count = 1 if nblocks < SPLIT_MIN_BLOCKS else max(2, min(255, nblocks // STRETCH_BLOCKS))
    edges = [round(i * nblocks / count) for i in range(count + 1)]
    return [(a, b) for a, b in itertools.pairwise(edges) if b > a]


def _share_of(progress: Callable[[float, str], None] | None, stage: str, start: float, k0: int,
              k1: int, nblocks: int) -> Callable[[float], None] | None:
    """The progress callback of one stretch of a pass (half of the whole, from ``start``)."""
    if progress is None:
        return None
    return lambda f: progress(start + (k0 + f * (k1 - k0)) / nblocks / 2, stage)


def _shared(run: Callable[[int, int, bool], T], bounds: list[tuple[int, int]], fork: bool,
            checkpoint: Callable[[], None]) -> list[T]:
    """``run(first, stop, here)`` for each stretch of ``bounds``, in stretch order: with ``fork``,
    shared by this process (``here`` True) and a forked child, each taking the next stretch not
    yet taken until none is left (a loud stretch costs more than a quiet one: so both end
    together; :func:`yuexuan.audio.engine.workers.share`); else all here."""
    return workers.share(lambda i, here: run(*bounds[i], here), len(bounds),
                         children=1 if fork else 0, here=True, tick=checkpoint)


def _nothing() -> None:
    """The checkpoint of a forked child: the parent acts on signals and kills it."""


def _report(p: Plan, out_path: Path, block: int, gain: float, m: passes.Measured,
            parts: list[passes.Levelled],
            stem_paths: list[Path]) -> Report:
    """The figures of a gain pass: loudness from pass 1's hops × gain², re-measured where the
    limiter acted."""
    hops = m.hops * gain ** 2
    per_block = block // bs1770.hop_samples(p.sample_rate)
    for q in parts:
        for k, sq in q.hops.items():
            hops[k * per_block:k * per_block + len(sq)] = sq
    peak = max(q.peak for q in parts)
    return Report(str(out_path), p.duration_s, 0, bs1770.gated_loudness(hops),
                  20 * math.log10(peak) if peak > 0 else float("-inf"), 20 * math.log10(gain),
                  sum(q.limited for q in parts) / p.sample_rate, 0, [str(path) for path in stem_paths])


def _gain_pass_split(p: Plan, out_path: Path, fmt: str, subtype: str, gain: float, ceiling: float,
                     block: int, m: passes.Measured, spools: Spools,
                     progress: Callable[[float, str], None] | None, checkpoint: Callable[[], None],
                     bounds: list[tuple[int, int]]) -> Report:
    """The gain pass in stretches shared with a forked child, both writing 16-bit PCM into one WAV
    file at their blocks' offsets."""
    nblocks = len(m.peaks)
    with atomic.atomic_path(out_path) as tmp:
        fd = os.open(tmp, os.O_WRONLY)
        try:
            output.pwrite_all(fd, output.wav_header(p.total, p.sample_rate), 0)
            _reserve(fd, output.WAV_HEADER_BYTES + 4 * p.total)

            def sink(k: int, y: npt.NDArray[np.float32], parts: object, g: object, gs: object) -> None:
                if m.peaks[k] == 0.0 and not y.any():     # silence: the file reads zeros there
                    return
                output.pwrite_all(fd, output.to_pcm16(y), output.WAV_HEADER_BYTES + 4 * k * block)

            def level(k0: int, k1: int, here: bool) -> passes.Levelled:
                return passes.level(p, block, k0, k1, gain, ceiling, m, sink,
                                    checkpoint if here else _nothing,
                                    _share_of(progress, "level", 0.5, k0, k1, nblocks) if here else None,
                                    spool=spools[0], speech_spool=spools[1])

            parts = _shared(level, bounds, True, checkpoint)
        finally:
            os.close(fd)
    return _report(p, out_path, block, gain, m, parts, [])


def _reserve(fd: int, size: int) -> None:
    """Make the file ``size`` bytes long, its blocks allocated now where the file system can
    (``posix_fallocate``). Written into later without blocks of its own (delayed allocation), a
    file renamed over an earlier render's makes ext4 write all of it out during the rename
    (its ``auto_da_alloc``): 0.12–0.25 s of the whole ceremony's render, waited for at the end."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError:                 # no room, or a file system without it: an ordinary file
        os.ftruncate(fd, size)


def _gain_pass(p: Plan, out_path: Path, fmt: str, subtype: str, gain: float, ceiling: float,
               block: int, m: passes.Measured, spools: Spools,
               progress: Callable[[float, str], None] | None, checkpoint: Callable[[], None],
               stems_dir: Path | None) -> Report:
    """The gain pass in one stretch, here, through libsndfile (any format; the stems)."""
    sr = p.sample_rate
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
        # WAV stems in 32-bit float: one instrument alone may pass full scale where the others
        # cancel it in the mix (the 建鼓 of 貍首, limited together; issue 29), and a 16-bit stem
        # would clip there and no longer add up to the mix
        float_stems = fmt == "WAV"
        stem_files: list[Any] = [files.enter_context(
            output.SparseFloatWav(files.enter_context(atomic.atomic_path(path)), p.total, sr)
            if float_stems else
            output.open_stereo(files.enter_context(atomic.atomic_path(path)), sr, fmt, subtype))
            for path in stem_paths]
        limiting = [DcFreeLimiting(sr) for _ in stem_files]     # each stem as the mix (passes.level)

        def write(k: int, y: npt.NDArray[np.float32], parts: dict[int, npt.NDArray[np.float32]],
                  g: passes.Gain, gs: passes.Gain) -> None:
            out.write(output.to_pcm16(y))
            for i, f in enumerate(stem_files):
                part = parts.get(i)
                if part is None:
                    part = np.zeros(y.shape, dtype=np.float32)
                else:
                    part *= np.float32(gain)
                if i in p.speech and gs is not None:        # the dialogue bus's own limiter first
                    part *= gs[:, None]
                part = limiting[i].apply(part, g)
                f.write(part if float_stems else output.to_pcm16(part))

        q = passes.level(p, block, 0, len(m.peaks), gain, ceiling, m, write, checkpoint,
                         _share_of(progress, "level", 0.5, 0, len(m.peaks), len(m.peaks)),
                         stems=stems_dir is not None, spool=spools[0], speech_spool=spools[1])
    return _report(p, out_path, block, gain, m, [q], stem_paths)

"""The audio renderer: Timeline → stereo file (WAV or FLAC), stems and chapter sidecars.

Streaming, in two passes over fixed-size blocks (never the whole ceremony in memory):

1. every note's waveform comes from :mod:`yuexuan.audio.synth` through a bounded cache, already placed
   by :mod:`yuexuan.audio.space` (pan, distance gain, reflections; the travel delay shifts its start);
   blocks of the mix are measured (:class:`~yuexuan.audio.loudness.LoudnessMeter`) and spooled as float32
   to an anonymous temporary file (gone with the process, however it ends);
2. the spool is read back, scaled to the loudness target, passed through a look-ahead true-peak
   limiter, measured again and written to a temporary file beside the target, renamed on success.
   Stems are rendered again block by block (the renderer is deterministic) with the same gain and
   limiter envelope, so they add up to the mix sample for sample.
"""

from __future__ import annotations

import math
import tempfile
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy import ndimage
from scipy.linalg import blas

from yuexuan import atomic, interrupts
from yuexuan.audio import loudness, space, synth
from yuexuan.rite import instruments as instruments_mod
from yuexuan.errors import UserError
from yuexuan.timeline import Timeline

TARGET_LUFS = -16.0
CEILING_DBTP = -1.0
LIMITER_MARGIN_DB = 0.4        # the limiter aims this far under the ceiling
LIMITER_WINDOW_S = 0.004       # gain falls over 2 windows before a peak and recovers after
LOUDNESS_TOLERANCE_LU = 0.1    # re-run the gain pass if the limiter moved loudness more
BLOCK = 1 << 16                # samples a block
FORMATS = {".wav": ("WAV", "PCM_16"), ".flac": ("FLAC", "PCM_16")}   # 16-bit, rounded


@dataclass(frozen=True)
class Options:
    sample_rate: int = 48000
    listener: str = "宾"
    cues: tuple | None = None          # cue ids to render; time 0 = the first one's start
    target_lufs: float = TARGET_LUFS
    ceiling_dbtp: float = CEILING_DBTP
    block: int = BLOCK


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
    stems: list = field(default_factory=list)
    sidecars: list = field(default_factory=list)
    cache_misses: int = 0


def output_format(path: str | Path) -> tuple[str, str]:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"unsupported audio file type {suffix or '(none)'!r}; use .wav or .flac",
                        file=str(path))
    return FORMATS[suffix]


# ---------------------------------------------------------------------------------------------
# the plan: which cached waveform starts at which sample, with which gain


@dataclass
class Plan:
    sample_rate: int
    t0: float                          # timeline time of sample 0, s
    starts: np.ndarray                 # int64 start sample of each event (travel delay included)
    ends: np.ndarray                   # int64 end sample (exclusive)
    gains: np.ndarray                  # float32 amplitude of each event
    keys: list                         # synth.note_key of each event
    inst: np.ndarray                   # int index into names
    names: list                        # instrument names with events, timeline order
    total: int                         # samples in the file
    cue_ids: frozenset | None          # the selected cues (None: all)
    cache: synth.NoteCache


def _placements(names, insts: dict, timeline: Timeline, listener: space.Listener,
                sample_rate: int) -> dict:
    out = {}
    for name in names:
        pos = insts[name].position_m if name in insts else timeline.instruments[name]["position_m"]
        out[name] = space.placement(listener, pos, sample_rate, seed_name=name)
    return out


def plan(timeline: Timeline, options: Options, instrument_table: dict | None = None,
         listener_table: dict | None = None) -> Plan:
    """Place every note of the selection; waveforms are rendered lazily by the plan's cache."""
    sr = int(options.sample_rate)
    if not 8000 <= sr <= 192000:
        raise UserError(f"sample rate {sr} Hz is out of range (8000..192000)", key="--sample-rate")
    insts = instrument_table if instrument_table is not None else instruments_mod.load_all()
    listeners = listener_table if listener_table is not None else space.listeners()
    if options.listener not in listeners:
        raise UserError(f"unknown listener {options.listener!r}; choose one of "
                        f"{', '.join(listeners)}", key="--listener")
    listener = listeners[options.listener]
    cue_ids = [c.id for c in timeline.cues]
    if options.cues:
        unknown = [c for c in options.cues if c not in cue_ids]
        if unknown:
            raise UserError(f"unknown cue id(s) {', '.join(unknown)}; the timeline has "
                            f"{', '.join(cue_ids)}", key="--cues")
        chosen = set(options.cues)
        t0 = min(c.start for c in timeline.cues if c.id in chosen)
        notes = [n for n in timeline.notes if n.cue in chosen]
        t_end = max(c.end for c in timeline.cues if c.id in chosen)
    else:
        t0 = 0.0
        notes = list(timeline.notes)
        t_end = timeline.duration
    for n in notes:
        if n.instrument not in insts:
            raise UserError(f"note of cue {n.cue!r} at {n.time:.3f} s is for instrument "
                            f"{n.instrument!r}, which has no instruments/*.toml (no synthesis)")
        if insts[n.instrument].pitched and not (n.hz and 10.0 <= n.hz <= 0.45 * sr):
            raise UserError(f"note of cue {n.cue!r} at {n.time:.3f} s on {n.instrument} has "
                            f"frequency {n.hz!r} Hz; expected 10 Hz .. {0.45 * sr:.0f} Hz")
    names = [nm for nm in timeline.instrument_names() if any(n.instrument == nm for n in notes)]
    index = {nm: i for i, nm in enumerate(names)}
    places = _placements(names, insts, timeline, listener, sr)

    def make(key):
        inst = insts[key[0]]
        mono = synth.note_from_key(key, inst.family, inst.synth, sr)
        return space.spatialise(mono, places[key[0]])

    cache = synth.NoteCache(make)
    starts, ends, gains, keys, inst_idx = [], [], [], [], []
    for n in notes:
        inst = insts[n.instrument]
        key = synth.note_key(n.instrument, inst.family, n.hz if inst.pitched else None,
                             n.velocity, n.duration, n.lyric)
        s = int(round((n.time - t0) * sr)) + places[n.instrument].delay_samples
        if s < 0:
            continue
        length = _length(key, inst, sr, places[n.instrument])
        starts.append(s)
        ends.append(s + length)
        level = 10 ** (float(inst.synth.get("gain_db", 0.0)) / 20)
        gains.append(synth.velocity_gain(n.velocity) / synth.velocity_gain(key[2]) * level)
        keys.append(key)
        inst_idx.append(index[n.instrument])
    starts_a = np.asarray(starts, dtype=np.int64)
    ends_a = np.asarray(ends, dtype=np.int64)
    total = max(int(math.ceil((t_end - t0) * sr)), int(ends_a.max()) if len(ends_a) else 0)
    order = np.argsort(starts_a, kind="stable")
    return Plan(sr, t0, starts_a[order], ends_a[order], np.asarray(gains, np.float32)[order],
                [keys[i] for i in order], np.asarray(inst_idx, dtype=np.int64)[order], names,
                total, frozenset(options.cues) if options.cues else None, cache)


def _length(key, inst, sr: int, place: space.Placement) -> int:
    """Samples of a placed waveform, without rendering it."""
    return synth.length(inst.family, inst.synth, key[3], sr) + place.length_extra


# ---------------------------------------------------------------------------------------------
# block rendering


RING = 4     # mix buffers in rotation: a yielded block stays valid while 3 more are made


def blocks(p: Plan, block: int, stems: bool = False, mix_too: bool = True):
    """Yield (start sample, mix (n, 2) float32, {instrument index: (n, 2)} or None) per block
    (with ``mix_too`` False the mix is left silent: for a caller that has it already).

    The mix arrays are reused after :data:`RING` blocks (no fresh pages per block); a consumer
    must be done with a block before it asks for the RING-th next one.
    """
    nev = len(p.starts)
    nxt = 0
    active: list = []
    ring = [np.zeros((block, 2), dtype=np.float32) for _ in range(RING)]
    for k, b0 in enumerate(range(0, p.total, block)):
        b1 = min(p.total, b0 + block)
        while nxt < nev and p.starts[nxt] < b1:
            active.append(nxt)
            nxt += 1
        mix = ring[k % RING][:b1 - b0]
        mix.fill(0.0)
        flat = mix.reshape(-1)
        parts = {} if stems else None
        keep = []
        for e in active:
            s, t = int(p.starts[e]), int(p.ends[e])
            if t <= b0:
                continue
            if t > b1:
                keep.append(e)
            a, z = max(s, b0), min(t, b1)
            src = p.cache.get(p.keys[e]).reshape(-1)[2 * (a - s):2 * (z - s)]
            g = float(p.gains[e])
            if stems:
                i = int(p.inst[e])
                if i not in parts:
                    parts[i] = np.zeros((b1 - b0, 2), dtype=np.float32)
                blas.saxpy(src, parts[i].reshape(-1)[2 * (a - b0):2 * (z - b0)], a=g)
            if mix_too:
                blas.saxpy(src, flat[2 * (a - b0):2 * (z - b0)], a=g)     # in place: y += g·x
        active = keep
        yield b0, mix, parts


def limiter_gain(x: np.ndarray, ceiling: float, window: int, lead: int) -> np.ndarray | None:
    """Gain (≤ 1) for the middle of ``x`` (after ``lead`` samples of context, before the same at
    the end) that keeps the 4× oversampled peak at or below ``ceiling`` (linear); None if no
    sample needs less than unity.

    Minimum filter then moving average of the required gain, both 2·window+1 wide: the average of
    minima around a sample never exceeds the gain required there (zero latency, offline). Only
    chunks whose sample peak comes within :data:`loudness.TP_SEARCH_DB` of the ceiling are
    oversampled.
    """
    chunk, ctx = 1024, loudness.TAPS_PER_PHASE
    need = np.ones(len(x), dtype=np.float32)
    bound = 10 ** (loudness.TP_SEARCH_DB / 20)
    peaks = loudness.abs_max_channels(x)
    hot = False
    for lo in range(0, len(x), chunk):
        if float(peaks[max(0, lo - ctx):lo + chunk + ctx].max()) * bound <= ceiling:
            continue
        a = max(0, lo - ctx)
        env = loudness.true_peak_envelope(x[a:lo + chunk + ctx])[lo - a:lo - a + chunk]
        if float(env.max()) > ceiling:
            need[lo:lo + len(env)] = np.minimum(1.0, ceiling / np.maximum(env, 1e-12))
            hot = True
    if not hot:
        return None
    w = 2 * window + 1
    smooth = ndimage.uniform_filter1d(ndimage.minimum_filter1d(need, w, mode="nearest"), w,
                                      mode="nearest")
    g = np.minimum(smooth, 1.0)[lead:len(x) - lead]
    return g if float(g.min()) < 1.0 else None


def _open(path, sample_rate: int, subtype: str, fmt: str) -> sf.SoundFile:
    """A stereo output file; FLAC at its fastest setting (about 1 % larger, a third faster;
    soundfile ≥ 0.13 has the setting, older ones write at libFLAC's default)."""
    if fmt == "FLAC":
        try:
            return sf.SoundFile(path, "w", sample_rate, 2, subtype=subtype, format=fmt,
                                compression_level=0.0)
        except TypeError:
            pass
    return sf.SoundFile(path, "w", sample_rate, 2, subtype=subtype, format=fmt)


def to_pcm16(x: np.ndarray) -> np.ndarray:
    """Float samples (±1 full scale) as 16-bit integers, rounded to nearest (deterministic)."""
    y = x * np.float32(32767.0)
    np.rint(y, out=y)
    np.clip(y, -32768, 32767, out=y)
    return y.astype(np.int16)


def _stem_path(stems_dir: Path, name: str, suffix: str) -> Path:
    if "/" in name or name in ("", ".", ".."):
        raise UserError(f"instrument name {name!r} cannot be a file name")
    return stems_dir / f"{name}{suffix}"


class _Pipe:
    """Run calls in order on one worker thread, at most ``depth`` waiting (the second core takes the
    filtering and encoding while the first mixes; numpy, scipy and libsndfile release the GIL)."""

    def __init__(self, depth: int = 2):
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._pending: deque = deque()
        self._depth = depth

    def submit(self, fn, *args) -> None:
        self._pending.append(self._pool.submit(fn, *args))
        while len(self._pending) > self._depth:
            self._pending.popleft().result()

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def __enter__(self):
        return self

    def stop(self) -> None:
        """Cancel what waits; return once the call running now (if any) has finished."""
        for f in self._pending:
            f.cancel()
        self._pool.shutdown(wait=True)

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                self.drain()
        finally:
            self.stop()


@dataclass
class _Measured:
    """What pass 1 learnt of the unscaled mix, per block."""

    hops: np.ndarray                   # K-weighted mean square per 100 ms hop
    states: list                       # K-filter state at the start of each block
    peaks: list                        # sample peak of each block


def _one_blas_thread():
    """While rendering, BLAS (the note adds, the oversampling) runs single-threaded: the renderer
    keeps both cores busy with its own threads, and BLAS's spinning helpers only slow them down.
    Needs threadpoolctl; without it BLAS keeps its default."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def render(timeline: Timeline, out_path: str | Path, options: Options = Options(),
           stems_dir: str | Path | None = None, progress=None,
           instrument_table: dict | None = None, listener_table: dict | None = None) -> Report:
    """Render ``timeline`` to ``out_path`` (.wav or .flac) atomically; optional stems.

    ``progress(fraction, stage)`` is called after each block. Returns the measured figures.
    SIGINT and SIGTERM take effect between blocks (:mod:`yuexuan.interrupts`).
    """
    with _one_blas_thread(), interrupts.deferred_signals() as checkpoint:
        return _render(timeline, out_path, options, stems_dir, progress, instrument_table,
                       listener_table, checkpoint)


def _render(timeline, out_path, options, stems_dir, progress, instrument_table,
            listener_table, checkpoint) -> Report:
    out_path = Path(out_path)
    fmt, subtype = output_format(out_path)
    p = plan(timeline, options, instrument_table, listener_table)
    sr = p.sample_rate
    hop = loudness.hop_samples(sr)
    block = max(hop, options.block // hop * hop)     # whole hops: pass 2 can re-measure a block
    nblocks = max(1, math.ceil(p.total / block))
    out_path.parent.mkdir(parents=True, exist_ok=True)

    # pass 1: mix, measure, spool (an unlinked file: nothing is left behind, however we stop)
    # one K-weighting meter per channel, each on its own worker thread (BS.1770 adds the
    # channels' mean squares, so per-channel hop energies simply add)
    meters = [loudness.LoudnessMeter(sr, channels=1) for _ in range(2)]
    states: list = [[], []]
    m = _Measured(np.zeros(0), [], [])

    def measure(c, mix, spool=None):
        states[c].append(meters[c].zi.copy())
        meters[c].feed(mix[:, c:c + 1])
        if spool is not None:
            spool.write(mix.tobytes())

    p.cache.prefetch(p.keys, tick=checkpoint)
    with tempfile.TemporaryFile(dir=out_path.parent) as spool:
        with _Pipe() as left, _Pipe() as right:
            for k, (_, mix, _) in enumerate(blocks(p, block)):
                checkpoint()
                m.peaks.append(float(np.max(np.abs(mix))) if len(mix) else 0.0)
                left.submit(measure, 0, mix)
                right.submit(measure, 1, mix, spool)
                if progress:
                    progress((k + 1) / nblocks / 2, "mix")
        m.hops = meters[0].hops + meters[1].hops
        m.states = [np.concatenate(z, axis=2) for z in zip(*states)]
        l0 = loudness.gated_loudness(m.hops)
        gain = 10 ** ((options.target_lufs - l0) / 20) if math.isfinite(l0) else 1.0
        passes = 0
        while True:
            passes += 1
            rep = _gain_pass(p, spool, out_path, fmt, subtype, gain, options, block, m,
                             Path(stems_dir) if stems_dir else None,
                             (lambda f: progress(0.5 + f / 2, "level")) if progress else None,
                             checkpoint)
            off = options.target_lufs - rep.loudness_lufs
            if not math.isfinite(off) or abs(off) <= LOUDNESS_TOLERANCE_LU or passes >= 3:
                break
            gain *= 10 ** (off / 20)
    rep.notes = len(p.starts)
    rep.passes = passes
    rep.cache_misses = p.cache.misses
    rep.sidecars = write_sidecars(timeline, out_path, p)
    return rep


def _gain_pass(p: Plan, spool, out_path: Path, fmt: str, subtype: str, gain: float,
               options: Options, block: int, m: _Measured, stems_dir: Path | None,
               progress, checkpoint) -> Report:
    """Scale the spooled mix, limit, write; loudness from pass 1's hops × gain², re-measured only
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
    # the sample peak (or, if limiting will happen, the ceiling) bounds the true peak from below:
    # only chunks within TP_SEARCH_DB of it are oversampled
    tp = loudness.TruePeakMeter(floor=min(max(m.peaks, default=0.0) * gain * 0.999, ceiling))
    limited = 0
    carry = None                       # K-filter state of the limited output, while it differs
    stem_files, stem_ctx = {}, []
    frame_bytes = 2 * 4
    spool.seek(0)

    def read_block(k):
        n = min(block, p.total - k * block)
        data = spool.read(n * frame_bytes)
        return np.frombuffer(data, dtype=np.float32).reshape(n, 2) * np.float32(gain)

    def write(y, parts, g):
        out.write(to_pcm16(y))
        for i, f in stem_files.items():
            part = None if parts is None else parts.get(i)
            if part is None:
                f.write(np.zeros(y.shape, dtype=np.int16))
                continue
            part *= np.float32(gain)
            if g is not None:
                part *= g[:, None]
            f.write(to_pcm16(part))

    with atomic.atomic_path(out_path) as tmp, \
            _open(tmp, sr, subtype, fmt) as out, _Pipe() as pipe, \
            _Pipe() as peak_pipe:
        try:
            if stems_dir is not None:
                stems_dir.mkdir(parents=True, exist_ok=True)
                for i, name in enumerate(p.names):
                    ctx = atomic.atomic_path(_stem_path(stems_dir, name, out_path.suffix))
                    tmp_stem = ctx.__enter__()
                    stem_ctx.append(ctx)          # before opening: a failed open is cleaned up too
                    stem_files[i] = _open(tmp_stem, sr, subtype, fmt)
            stem_blocks = blocks(p, block, stems=True, mix_too=False) if stem_files else None
            nxt = read_block(0) if nblocks else np.zeros((0, 2), np.float32)
            prev_tail = np.zeros((lead, 2), np.float32)
            for k in range(nblocks):
                checkpoint()
                cur = nxt
                nxt = read_block(k + 1) if k + 1 < nblocks else np.zeros((0, 2), np.float32)
                g = None
                if max(m.peaks[max(0, k - 1):k + 2]) * gain * 10 ** (loudness.TP_SEARCH_DB / 20) \
                        > ceiling:
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
                parts = next(stem_blocks)[2] if stem_blocks is not None else None
                pipe.submit(write, y, parts, g)
                peak_pipe.submit(tp.feed, y)
                if progress:
                    progress((k + 1) / nblocks)
            pipe.drain()
            peak_pipe.drain()
            tp.flush()
            for f in stem_files.values():
                f.close()
            for ctx in stem_ctx:
                ctx.__exit__(None, None, None)
            stem_ctx = []
        except BaseException as exc:
            pipe.stop()                # its worker may be writing the stems: let it finish first
            for f in stem_files.values():
                f.close()
            for ctx in stem_ctx:
                try:
                    ctx.__exit__(type(exc), exc, exc.__traceback__)
                except BaseException:
                    pass
            raise
    return Report(str(out_path), p.total / sr, 0, loudness.gated_loudness(hops), tp.dbtp(),
                  20 * math.log10(gain), limited / sr, 0,
                  [str(_stem_path(stems_dir, n, out_path.suffix)) for n in p.names]
                  if stems_dir is not None else [])


# ---------------------------------------------------------------------------------------------
# chapters


def _vtt_time(t: float) -> str:
    ms = int(round(max(0.0, t) * 1000))
    h, ms = divmod(ms, 3600_000)
    m, ms = divmod(ms, 60_000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}.{ms:03d}"


def _cue_time(t: float) -> str:
    frames = int(round(max(0.0, t) * 75))
    m, frames = divmod(frames, 75 * 60)
    s, f = divmod(frames, 75)
    return f"{m:02d}:{s:02d}:{f:02d}"


def _one_line(text: str) -> str:
    return " ".join(str(text).replace("-->", "→").split())


def chapters(timeline: Timeline, p: Plan) -> list:
    """(start s, end s, cue) for each rendered cue, times relative to the file, sorted."""
    dur = p.total / p.sample_rate
    out = []
    for c in timeline.cues:
        if p.cue_ids is not None and c.id not in p.cue_ids:
            continue
        start, end = c.start - p.t0, c.end - p.t0
        if end <= 0 or start >= dur:
            continue
        out.append((max(0.0, start), min(dur, end), c))
    out.sort(key=lambda r: (r[0], r[1]))
    return out


def vtt_text(rows) -> str:
    """WebVTT chapters: one cue per ritual cue (piece · ritual moment, then the quoted source)."""
    lines = ["WEBVTT", "", "NOTE chapters of the rendered rite: piece, ritual moment, source", ""]
    for k, (a, b, c) in enumerate(rows, start=1):
        title = _one_line(c.piece)
        if c.starts_when:
            title += f" · {_one_line(c.starts_when)}"
        lines += [f"{k} {c.id}", f"{_vtt_time(a)} --> {_vtt_time(max(b, a + 0.001))}", title]
        if c.source:
            lines.append(_one_line(c.source))
        if c.gloss:
            lines.append(_one_line(c.gloss))
        lines.append("")
    return "\n".join(lines)


def cue_text(rows, audio_name: str, title: str) -> str:
    """A CUE sheet: one track per ritual cue, INDEX 01 at its start (mm:ss:ff, 75 frames/s)."""
    q = lambda s: _one_line(s).replace('"', "”")          # noqa: E731
    lines = ['REM GENERATOR "yuexuan render"', f'TITLE "{q(title)}"',
             f'FILE "{q(audio_name)}" WAVE']
    last = -1
    for k, (a, _, c) in enumerate(rows, start=1):
        frames = max(int(round(a * 75)), last + 1 if k > 1 else 0)
        last = frames
        lines += [f"  TRACK {k:02d} AUDIO", f'    TITLE "{q(c.piece)}"',
                  f'    REM CUE "{q(c.id)}"']
        if c.starts_when:
            lines.append(f'    REM MOMENT "{q(c.starts_when)}"')
        if c.source:
            lines.append(f'    REM SOURCE "{q(c.source)}"')
        lines.append(f"    INDEX 01 {_cue_time(frames / 75)}")
    return "\n".join(lines) + "\n"


def write_sidecars(timeline: Timeline, out_path: Path, p: Plan) -> list:
    rows = chapters(timeline, p)
    vtt = out_path.with_suffix(".vtt")
    cue = out_path.with_suffix(".cue")
    atomic.write_text(vtt, vtt_text(rows))
    atomic.write_text(cue, cue_text(rows, out_path.name, timeline.ceremony.name))
    return [str(vtt), str(cue)]


def render_file(timeline: Timeline, target: str | Path, **kwargs) -> Report:
    """Render ``timeline`` to ``target`` with default options (for the guide)."""
    return render(timeline, target, **kwargs)

"""The 建鼓 heard in a recording of the whole 轩县 (bells, stones, 鼙, song, crowd, wind): every
percussive onset of its low band, each with its timbre and an exact attack time.

The recording is read in blocks (:func:`yuexuan.check.drum.recording.iter_blocks`), so an hour costs
the memory of a block. In each block:

1. **STFT** (librosa, 1024-sample window = 64 ms at 16 kHz, 8 ms hop) of the bins below 1 kHz,
   where the drum's body is (a 建鼓 head sounds at tens of Hz; bells, stones and voices
   mostly above 150 Hz).
2. **HPSS** (``librosa.decompose.hpss``, median filters across time and across frequency): the
   *percussive* part keeps what is broad in frequency and short in time (a stroke), the
   harmonic part what is steady in pitch (a bell's hum, a held sung note).
3. **Onset strength** (``librosa.onset.onset_strength``, spectral flux of the percussive dB
   spectrogram) of the low band (15–190 Hz) only: the drum's strokes stand out, the song's and
   the bells' onsets (higher, and harmonic) hardly count.
4. **Candidates**: peaks of that strength (``scipy.signal.find_peaks``, ≥ 100 ms apart). Each keeps
   its *timbre* — the dB rise of each percussive bin from 0 to 1 kHz across its onset — for the
   model of :mod:`yuexuan.check.drum.finder` to judge against the drum's own strokes.
5. **Attack time**: a frame is 8 ms and its window 64 ms, too coarse to judge a shot by. The low
   band (30–250 Hz, 2nd-order zero-phase Butterworth: ``scipy.signal.sosfiltfilt``) is taken on
   the waveform, its envelope by ``scipy.signal.hilbert``. The attack is the start of the
   envelope's *first* hump: the first sample rising through half of the span's peak (above the
   level before the stroke) marks the hump, which is climbed to its own top; the attack is the
   earliest rise through 25 % of that top, up to 30 ms before it, after which the envelope
   never falls back to the level before the stroke on its way to the top. In a hall the first
   hump is often the direct sound and its reflection ~9 ms later together, the direct sound the
   lower shoulder, with a dip between but no return to the floor: taking where the envelope
   *last* rose through 25 % put the attack on the reflection's rise, 5–9 ms late (the bench's
   hall mix: 12 of 112 strokes, 95th percentile 5.9 ms; with the earliest rise, 2.6 ms at most,
   95th percentile 2.0 ms, and no change on the mixes without a room). An earlier onset that
   falls back to the floor before the stroke (a stone's, 14 ms before one there) is not taken.
   (Walking back from the span's highest peak instead put the attack ~20 ms late whenever a
   later hump was the higher: FluidR3's Taiko above key ~55 sounds two humps ~20 ms apart of
   nearly equal height, a hall's reflections add more, and noise decided which was the higher.
   At 30 % of the rise the attack lagged the true start by 1–3 ms; at 15 % it is 0.3 ms early
   to 1.8 ms late on the Taiko alone, keys 30–67, with noise, and its median within 0.6 ms in
   the mixes of tests/fluid_mix.py; extrapolating the rise's line back to the level before the stroke was
   less steady in noise and a room.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

SR = 16000                      # analysis rate, Hz
N_FFT = 1024                    # STFT window, samples (64 ms)
HOP = 128                       # STFT hop, samples (8 ms)
HPSS_MAX_HZ = 1000.0            # HPSS and onset analysis use the bins below this
HPSS_KERNEL = (31, 17)          # median filter lengths: 31 frames (248 ms) × 17 bins (266 Hz)
STRENGTH_BAND_HZ = (15.0, 190.0)
TIMBRE_MAX_HZ = 1000.0
TIMBRE_LAG = 3                  # frames either side of the onset frame the timbre's rise spans
MIN_GAP_S = 0.1                 # peaks at least this far apart
ATTACK_BAND_HZ = (30.0, 250.0)
ATTACK_ORDER = 2                # Butterworth order of the attack band (zero-phase: twice that)
ATTACK_HUMP = 0.5               # the first rise through this fraction of the span's peak is the
                                # stroke's first hump
ATTACK_HUMP_FALL = 0.15         # the hump ends where it falls this fraction of the peak below its top
ATTACK_RISE = 0.25              # fraction of the hump's rise that marks the attack
ATTACK_BACK_S = 0.03            # the direct sound's rise is sought this far before the hump's top, s
ATTACK_SEARCH_S = (-0.05, 0.04)  # where the attack is sought around the onset frame, s
BLOCK_S = 20.0                  # seconds decoded at a time (memory: bench/bench_drum.py)
MARGIN_S = 1.0                  # context either side of a block's own span, s (whole hops)
ENV_DECIMATE = 16               # each candidate keeps its attack envelope at SR / this (1 kHz) …
ENV_SPAN_S = (-0.08, 0.08)      # … over this span around its attack time, s (the stroke's
                                # template fit, :mod:`yuexuan.check.drum.template`)
ENV_LEN = int(round((ENV_SPAN_S[1] - ENV_SPAN_S[0]) * SR / ENV_DECIMATE))


@dataclass(frozen=True)
class Candidates:
    """Percussive low-band onsets of a recording (recording clock, seconds)."""

    time_s: npt.NDArray[np.float64]          # attack time of each onset, s
    strength: npt.NDArray[np.floating[Any]]        # its onset strength (low-band percussive flux, dB per bin)
    level: npt.NDArray[np.floating[Any]]           # peak of its attack-band envelope (sample amplitude)
    timbre: npt.NDArray[np.floating[Any]]          # (n, bins): dB rise of each percussive bin below 1 kHz
    strength_t_s: npt.NDArray[np.float64]    # time of each onset-strength frame, s
    strength_curve: npt.NDArray[np.floating[Any]]  # the low-band percussive onset strength per frame
    duration_s: float = 0.0                  # the recording's length, s
    envelope: npt.NDArray[np.float16] | None = None  # (n, ENV_LEN): the attack envelope around
    #                                                  each attack time (ENV_SPAN_S, SR / ENV_DECIMATE)


def _bins(hz_lo: float, hz_hi: float) -> slice:
    f = np.fft.rfftfreq(N_FFT, 1.0 / SR)
    return slice(int(np.searchsorted(f, hz_lo)), int(np.searchsorted(f, hz_hi, side="right")))


def percussive_low(y: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Magnitude of the percussive part (HPSS) of the STFT bins below ``HPSS_MAX_HZ``."""
    import librosa

    top = _bins(0.0, HPSS_MAX_HZ).stop
    spec = np.abs(librosa.stft(y, n_fft=N_FFT, hop_length=HOP, center=True))[:top]
    # librosa.decompose.hpss(spec, kernel_size=HPSS_KERNEL) to the last bit, its two median filters
    # taken by np.partition instead of scipy.ndimage.median_filter (4x slower here: 140 ms a block,
    # 44 s of the test suite's CPU)
    harm = _median(spec, HPSS_KERNEL[0], axis=1)
    perc = _median(spec, HPSS_KERNEL[1], axis=0)
    mask = librosa.util.softmask(perc, harm, power=2.0, split_zeros=True)
    return spec * mask


def _median(x: npt.NDArray[np.float32], size: int, axis: int) -> npt.NDArray[np.float32]:
    """``scipy.ndimage.median_filter(x, size)`` along ``axis`` alone, mode "reflect" (numpy's
    "symmetric" padding), for an odd ``size``: the middle of each window by np.partition."""
    h = size // 2
    pad = [(0, 0)] * x.ndim
    pad[axis] = (h, h)
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(x, pad, mode="symmetric"), size, axis=axis)
    return np.partition(windows, h, axis=-1)[..., h]


def attack_envelope(y: npt.NDArray[np.float32]) -> npt.NDArray[np.floating[Any]]:
    """The amplitude envelope of the attack band (zero-phase band-pass, Hilbert magnitude)."""
    from scipy import fft, signal

    sos = signal.butter(ATTACK_ORDER, ATTACK_BAND_HZ, btype="bandpass", fs=SR, output="sos")
    low = signal.sosfiltfilt(sos, y)
    n = fft.next_fast_len(len(low))
    return np.abs(signal.hilbert(low, N=n)[:len(low)]).astype(np.float32)


def attack_times(env: npt.NDArray[np.floating[Any]], guess_s: npt.NDArray[np.float64],
                 ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.floating[Any]]]:
    """Attack time (s, the block's clock) near each guess, and the envelope's peak there
    (:func:`rise_start` in the search span, above the level before it: its median over 30 ms).
    Hand-written: librosa's ``onset_backtrack`` finds the minimum before a peak, not where the
    rise begins."""
    out = np.array(guess_s, dtype=np.float64)
    tops = np.zeros(len(out))
    lo_s, hi_s = ATTACK_SEARCH_S
    pre = int(0.03 * SR)
    for k, t in enumerate(out):
        i0 = max(pre, int((t + lo_s) * SR))
        i1 = min(len(env), int((t + hi_s) * SR))
        if i1 - i0 < 4:
            continue
        seg = env[i0:i1]
        tops[k] = seg.max()
        out[k] = (i0 + rise_start(seg, float(np.median(env[i0 - pre:i0])))) / SR
    return out, tops


def rise_start(seg: npt.NDArray[np.floating[Any]], base: float) -> float:
    """Where the first hump of an envelope span starts (samples into ``seg``, fractional), above
    ``base``: the hump is where ``seg`` first rises through ``ATTACK_HUMP`` of its peak, up to
    where it falls ``ATTACK_HUMP_FALL`` of the peak below its running top; its start is the
    earliest rise through ``ATTACK_RISE`` of its top, at most ``ATTACK_BACK_S`` before that top,
    after which the envelope stays above ``base`` up to the top (else the last rise through it)."""
    x = np.asarray(seg, dtype=np.float64) - base
    peak = float(x.max())
    if peak <= 0:
        return float(np.argmax(x))
    first = int(np.argmax(x >= ATTACK_HUMP * peak))
    run = np.maximum.accumulate(x[first:])
    fell = np.flatnonzero(x[first:] < run - ATTACK_HUMP_FALL * peak)
    hump = first + int(np.argmax(x[first:first + (int(fell[0]) if len(fell) else len(x))]))
    rise = x[:hump + 1]
    level = ATTACK_RISE * rise[-1]
    up = np.flatnonzero((rise[:-1] < level) & (rise[1:] >= level))    # rise[a] < level <= rise[a + 1]
    if not len(up):
        return 0.0
    # the earliest of them from which the envelope stays above the level before the stroke up to
    # the top, within ATTACK_BACK_S of it: the direct sound's rise, not a reflection's after a dip
    stays = np.minimum.accumulate(rise[::-1])[::-1]         # lowest from each sample to the top
    own = up[(stays[up + 1] > 0) & (up >= hump - ATTACK_BACK_S * SR)]
    a = int(own[0]) if len(own) else int(up[-1])
    return a + (level - rise[a]) / (rise[a + 1] - rise[a])     # linear between the two


def scan_block(y: npt.NDArray[np.float32], t0_s: float, core_s: tuple[float, float]) -> Candidates:
    """The candidates of one block of samples at ``SR`` starting at ``t0_s`` (s), keeping those
    whose onset frame lies in ``core_s`` = [from, to) (recording clock, s)."""
    import librosa
    from scipy import signal

    if len(y) < N_FFT:                       # shorter than one window: nothing to find
        none = np.zeros(0)
        return Candidates(none, none, none, np.zeros((0, _bins(0.0, TIMBRE_MAX_HZ).stop),
                                                     dtype=np.float32), none, none,
                          envelope=np.zeros((0, ENV_LEN), dtype=np.float16))
    perc = percussive_low(y)
    db = librosa.amplitude_to_db(perc, ref=1.0, amin=1e-5, top_db=None)
    # center=False: perc's frames are already centred (librosa.stft center=True)
    strength = librosa.onset.onset_strength(S=db[_bins(*STRENGTH_BAND_HZ)], sr=SR,
                                            hop_length=HOP, lag=2, max_size=1, center=False)
    frame_t = t0_s + np.arange(len(strength)) * HOP / SR
    # find_peaks keeps the higher of two peaks closer than the gap (librosa's peak_pick keeps
    # the earlier one, which loses a stroke just after a weaker onset)
    peaks, _ = signal.find_peaks(strength, distance=max(1, int(round(MIN_GAP_S * SR / HOP))))
    peaks = peaks[(peaks >= TIMBRE_LAG) & (peaks < db.shape[1] - TIMBRE_LAG)]
    own = (frame_t[peaks] >= core_s[0]) & (frame_t[peaks] < core_s[1])
    peaks = peaks[own]
    tb = _bins(0.0, TIMBRE_MAX_HZ)
    timbre = (db[tb, peaks + TIMBRE_LAG] - db[tb, peaks - TIMBRE_LAG]).T
    env = attack_envelope(y)
    times, level = attack_times(env, frame_t[peaks] - t0_s)
    keep = (frame_t >= core_s[0]) & (frame_t < core_s[1])
    return Candidates(times + t0_s, strength[peaks], level, timbre.astype(np.float32),
                      frame_t[keep], strength[keep].astype(np.float32),
                      envelope=envelope_segments(env, times))


def envelope_segments(env: npt.NDArray[np.floating[Any]], times_s: npt.NDArray[np.float64],
                      ) -> npt.NDArray[np.float16]:
    """The attack envelope over ``ENV_SPAN_S`` around each time (s, the block's clock), every
    ``ENV_DECIMATE``-th sample (0 beyond the block), each divided by its peak; float16 to keep an
    hour's candidates small."""
    offs = np.arange(ENV_LEN) * ENV_DECIMATE + int(round(ENV_SPAN_S[0] * SR))
    idx = np.round(np.asarray(times_s) * SR).astype(np.int64)[:, None] + offs[None, :]
    inside = (idx >= 0) & (idx < len(env))
    seg = np.where(inside, env[np.clip(idx, 0, max(len(env) - 1, 0))], 0.0) if len(env) else \
        np.zeros(idx.shape)
    top = np.maximum(seg.max(axis=1, keepdims=True), 1e-30) if seg.size else 1.0
    return (seg / top).astype(np.float16)             # its shape: the level is kept apart


def _with_context(blocks: Iterator[npt.NDArray[np.float32]],
                  ) -> Iterator[tuple[npt.NDArray[np.float32], float, tuple[float, float]]]:
    """(samples, start s, core span s) per block: each block with ``MARGIN_S`` of its
    neighbours on either side, so that no onset is judged at a cut."""
    margin = int(MARGIN_S * SR)
    carry = np.zeros(0, dtype=np.float32)          # the stream's last 2 margins, not yet core
    done = 0                                        # samples of the stream before carry
    nxt = next(blocks, None)
    while nxt is not None:
        cur, nxt = nxt, next(blocks, None)
        buf = np.concatenate((carry, cur))
        start = done
        core_lo = (start + (margin if start > 0 else 0)) / SR
        if nxt is None:
            yield buf, start / SR, (core_lo, np.inf)
            return
        keep = min(len(buf), 2 * margin)
        yield buf, start / SR, (core_lo, (start + len(buf) - margin) / SR)
        carry = buf[len(buf) - keep:]
        done = start + len(buf) - keep


def scan(path: str | Path, block_s: float = BLOCK_S,
         progress: Callable[[float], None] | None = None) -> Candidates:
    """Every candidate of the recording, read block by block at ``SR``; ``progress`` is told the
    fraction read after each block (of the length the container states)."""
    from yuexuan.check.drum import recording

    block_s = max(1, round(block_s * SR / HOP)) * HOP / SR    # whole hops: one frame grid
    total = recording.duration_s(path) if progress is not None else 0.0
    parts = []
    end = 0.0
    for buf, t0, core in _with_context(recording.iter_blocks(path, SR, block_s)):
        parts.append(scan_block(buf, t0, core))
        end = t0 + len(buf) / SR
        if progress is not None and total > 0:
            progress(min(1.0, end / total))
    cat = {f: np.concatenate([getattr(p, f) for p in parts]) for f in
           ("time_s", "strength", "level", "timbre", "strength_t_s", "strength_curve", "envelope")}
    keep = distinct(cat["time_s"], cat["strength"])
    return Candidates(cat["time_s"][keep], cat["strength"][keep], cat["level"][keep],
                      cat["timbre"][keep], cat["strength_t_s"], cat["strength_curve"], end,
                      cat["envelope"][keep])


def distinct(time_s: npt.NDArray[np.float64], strength: npt.NDArray[np.floating[Any]],
             gap_s: float = MIN_GAP_S / 2) -> npt.NDArray[np.intp]:
    """Indices of the candidates in time order, dropping the weaker of two whose attack times
    came within ``gap_s`` (two frame peaks can find the same attack)."""
    order = np.argsort(time_s, kind="stable")
    keep: list[int] = []
    for i in order.tolist():
        if keep and time_s[i] - time_s[keep[-1]] < gap_s:
            if strength[i] > strength[keep[-1]]:
                keep[-1] = i
            continue
        keep.append(i)
    return np.array(keep, dtype=np.intp)

"""What each note brings to a seat, estimated from the timeline and the seat alone (before any
waveform is made): when it arrives, how loud, and how its energy runs on, on a grid of 100 ms hops.

A note's level at the seat is its source's amplitude at 1 m (the sound power of its ``[synth]``
table, :func:`yuexuan.audio.synthesis.source_level.source_level`) at its velocity
(``velocity_gain``), over the distance (1/r): the fast-weighted maximum of its direct sound, as
the renderer normalises every waveform to a fast-weighted maximum of 1. A held note (pipe, reed,
voice) keeps that level while it sounds; a struck one decays from it with its slowest mode
(:func:`decay_tau_s`), its first 125 ms at that level. The room adds a few dB that are left out.
These are estimates to set a produced mix's gains by (:mod:`yuexuan.audio.mixes.guide`), not
measurements of the render.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from yuexuan.audio.dsp import butter_bandpass_sos, sosfilt
from yuexuan.audio.engine.plan import Body, bodies, cue_positions
from yuexuan.audio.loudness.bs1770 import k_weighting_sos
from yuexuan.audio.room import space
from yuexuan.audio.synthesis import source_level, synth
from yuexuan.audio.voice import ensemble
from yuexuan.rite.courtyard import Listener
from yuexuan.timeline import Timeline

HOP_S = 0.1                     # the grid of the energy series, s (BS.1770's hop)
FAST_S = source_level.FAST_S    # a waveform's level is its largest RMS over this, s
RING_TAUS = 6.0                 # a struck note's energy is followed for this many of its τ
VOICE_LEAD_S = 0.15             # a voice's consonant sounds up to this long before its note's time
SPEECH_BAND_HZ = (1000.0, 4000.0)   # where speech is understood (issue 29 measures the calls there)
BAND_RATE = 16000               # a note's shares (:func:`shares_db`) are measured at this rate, Hz


@dataclass(frozen=True)
class Arrival:
    """One note as the seat receives it."""

    instrument: str
    lyric: str | None
    hz: float | None
    velocity: int
    cue: str
    start_s: float              # when it reaches the seat (its consonant's start, for a voice), s
    end_s: float                # a held note's end; a struck note's: RING_TAUS of its τ later, s
    duration_s: float           # the timeline's duration of the note, s
    level: float                # fast-weighted maximum amplitude of its direct sound, Pa
    tau_s: float | None         # a struck note's decay (amplitude τ of its slowest mode), s
    spoken: bool                # a call or a formula: a single voice (with a pitch or without)
    sung: bool                  # a syllable of a choir (an ensemble: the 歌's six 工)


def decay_tau_s(body: Body, hz: float | None) -> float | None:
    """The amplitude time constant (s) of a struck note's slowest mode; None for a held note."""
    p = body.synth
    if body.family in synth.SUSTAINED:
        return None
    if body.family == "stone" and hz is not None:
        return max(synth.stone_taus(p, hz))
    if body.family == "string":
        return synth.string_tau(p)
    taus = p.get("decay_s", [1.0])
    return float(max(taus)) if isinstance(taus, list) and taus else float(taus)


def arrivals(timeline: Timeline, listener: Listener, names: Iterable[str]) -> list[Arrival]:
    """Every note of ``timeline`` on the instruments ``names``, as heard at ``listener``."""
    insts = bodies(timeline, names)
    moved = cue_positions(timeline)
    out = []
    for n in timeline.notes:
        body = insts.get(n.instrument)
        if body is None:
            continue
        pos = moved.get((n.cue, n.instrument), body.position_m)
        d = space.distance_m(pos, listener.position_m)
        level = source_level.velocity_gain(n.velocity) * body.level * space.distance_gain(d)
        voice = body.family == "voice"
        hz = n.hz if body.pitched else None
        tau = decay_tau_s(body, hz)
        start = n.time + space.delay_s(d) - (VOICE_LEAD_S if voice else 0.0)
        end = start + (RING_TAUS * tau if tau is not None else n.duration + (VOICE_LEAD_S if voice else 0.0))
        choir = voice and ensemble.is_ensemble(body.family, body.synth, body.performers)
        out.append(Arrival(n.instrument, n.lyric, hz, n.velocity, n.cue, start, end, n.duration, level, tau,
                           voice and not choir, choir))
    return out


def hops_of(seconds: float) -> int:
    return max(1, int(math.ceil(seconds / HOP_S)))


def energy(notes: Sequence[Arrival], n_hops: int) -> npt.NDArray[np.float64]:
    """Mean square (Pa²) of ``notes`` together in each 100 ms hop (their energies add: sources
    and notes are incoherent)."""
    if not notes:
        return np.zeros(n_hops)
    # every note's hops at once (a loop over the notes took half of the guide mix's planning)
    start = np.array([a.start_s for a in notes])
    h0 = np.maximum((start / HOP_S).astype(np.int64), 0)        # int(): towards 0, as before
    h1 = np.minimum(n_hops, np.maximum(1, np.ceil(np.array([a.end_s for a in notes]) / HOP_S)
                                       .astype(np.int64)))
    count = np.maximum(h1 - h0, 0)
    tau = np.array([a.tau_s if a.tau_s is not None else np.inf for a in notes])
    # e^(−2t/τ), scaled so that its first FAST_S average a mean square of level²; 1 without τ
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(np.isfinite(tau), tau / (2 * FAST_S) * -np.expm1(-2 * FAST_S / tau), 1.0)
    scale = np.array([a.level for a in notes]) ** 2 / first
    note = np.repeat(np.arange(len(notes)), count)
    hop = h0[note] + np.arange(len(note)) - np.repeat(np.cumsum(count) - count, count)
    t = np.maximum((hop + 0.5) * HOP_S - start[note], 0.0)
    return np.asarray(np.bincount(hop, weights=scale[note] * np.exp(-2 * t / tau[note]), minlength=n_hops),
                      dtype=np.float64)


def gated_db(hops: npt.NDArray[np.float64]) -> float:
    """BS.1770's gated mean of ``hops`` (400 ms blocks, the relative gate 10 dB under their mean),
    in dB re 1 Pa²; −inf when silent. No absolute gate: these are sound pressures, not a file."""
    per = int(round(0.4 / HOP_S))
    if len(hops) < per or not np.any(hops > 0):
        return float("-inf")
    z = np.convolve(hops, np.ones(per) / per, mode="valid")
    z = z[z > 0]
    if not len(z):
        return float("-inf")
    keep = z[z > z.mean() * 0.1]
    return float(10 * math.log10(keep.mean())) if len(keep) else float("-inf")


def shares_db(body: Body, lyric: str | None, hz: float | None, velocity: int,
              duration_s: float) -> tuple[float, float]:
    """(loudness, 1–4 kHz share) of one note of ``body`` (``duration_s`` long), synthesised at
    BAND_RATE and brought to a fast-weighted maximum of 1 as the renderer brings every waveform:

    - its K-weighted mean square (BS.1770) over its first FAST_S (a struck note: its attack, from
      which :func:`energy` decays) or over its whole length (a held note: a syllable's consonants
      and its rise and fall read under its loudest 125 ms), dB; what turns a note's sound pressure
      into its loudness (a 建鼓's thud counts 2 dB under a call of the same pressure, a formula's
      syllable some 4 dB under a shouted 诺);
    - its energy in SPEECH_BAND_HZ re its whole energy, dB: what it brings where speech is
      understood.
    """
    x = synth.note(body.family, body.synth, hz, velocity, duration_s, BAND_RATE, seed=1, lyric=lyric,
                   name=body.name).astype(np.float64)
    x = source_level.level_normalised(x.astype(np.float32), BAND_RATE).astype(np.float64)
    total = float(np.dot(x, x))
    if total <= 0:
        return 0.0, 0.0
    k = sosfilt(k_weighting_sos(BAND_RATE), x)
    if body.family in synth.SUSTAINED:      # as long as its Arrival lasts
        held = k[:int((duration_s + (VOICE_LEAD_S if body.family == "voice" else 0.0)) * BAND_RATE)]
        loud = float(np.mean(held * held)) if len(held) else 0.0
    else:
        loud = float(np.mean(k[:int(FAST_S * BAND_RATE)] ** 2))
    y = sosfilt(butter_bandpass_sos(4, *SPEECH_BAND_HZ, BAND_RATE), x)
    return (10 * math.log10(max(loud, 1e-30)),
            10 * math.log10(max(float(np.dot(y, y)), 1e-30) / total))

"""The guide mix: the rite produced for a listener who must follow it, as a documentary's dialogue
mix is (issue 29). A pure function of the selected timeline, its plan and the seat, computed from
the levels at which each note arrives (:mod:`yuexuan.audio.mixes.levels`) and handed to the engine
as gain envelopes (:class:`yuexuan.audio.engine.gain_envelope.GainEnvelope`):

1. **Music levelled by cue.** Every cue's music (all but the voices) is brought to one level,
   ``MUSIC_DB``: its gated loudness estimated from its notes. A cue's gain holds while it sounds
   and moves to the next cue's across the gap between them.
2. **The song carried.** The choir (the 歌) of each cue is brought to ``SONG_DB``, as loud as its
   music, so the words are not under the instruments (in 貍首, at the seat, they are 33 LU under).
3. **The rest ducked under the calls.** Wherever a single voice (a call, a formula) sounds over
   music or song, both are lowered by ``DUCK_DB`` (issue 29: ≤ 12 dB), from ``DUCK_LEAD_S`` before
   the utterance reaches the seat to ``DUCK_HOLD_S`` after, in ramps of ``DUCK_RAMP_S``;
   utterances closer than ``DUCK_MERGE_S`` share one duck, so it holds still through a call (no
   pumping between its syllables). Lead and hold cover the momentary meter's 400 ms window: a
   window that holds any of the call holds no undiminished music. Music and song are ducked
   alike, so that under a call the song keeps its level against the instruments.
4. **Speech levelled where it is understood.** Every utterance (a single voice's syllables less
   than ``UTTERANCE_GAP_S`` apart) is brought to :func:`band_margin_db` over what the ducked
   music and song bring into 1–4 kHz while it sounds (their energy there by each instrument's
   share, :func:`levels.shares_db`, on one of its notes; a voice's on its loudest syllable: a shout is
   brighter than a raised voice), and never under ``SPEECH_DB``: a formula in a quiet cue sits
   there, about where a cue's music and song together are. Within an utterance each syllable
   keeps a third of its own level's difference (``SYLLABLE_RATIO``: the 获者's soft 商 call stays
   under his loud 宫 by 2.3 dB, not 7), the gain moving between syllables.

5. **Speech limited on its own.** The voices' envelopes are the dialogue bus
   (``GainEnvelope.dialogue``): the engine limits their sum first, keyed by the whole mix's
   sample peak, 1 dB under the ceiling, so that the peaks of a call (the loudest thing under it)
   do not take the whole mix, and the ducked music with it, down by up to 8 dB at each syllable.

The engine then brings the whole to −16 LUFS and limits its true peak to −1 dBTP, as for every
render. The targets are relative (dB re 1 Pa² before that final gain).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.engine.gain_envelope import GainEnvelope
from yuexuan.audio.engine.plan import Plan, bodies
from yuexuan.audio.mixes import levels
from yuexuan.audio.mixes.levels import Arrival
from yuexuan.rite.courtyard import Listener
from yuexuan.timeline import Timeline

MUSIC_DB = 0.0              # each cue's music, gated
SONG_DB = -5.0              # each cue's song, gated: 5 LU under its music (issue 29 allows 6)
SPEECH_DB = 3.0             # the least an utterance is brought to (its syllables' power mean)
BAND_MARGIN_DB = 10.0       # a call over the ducked rest in 1–4 kHz, momentary (issue 29)
MOMENTARY_S = 0.4           # … measured over this window
EDGE_SHARE = 0.1           # the share of a call's active windows its edges may take under the margin
MARGIN_MIN_DB = 3.0         # … and at least this over BAND_MARGIN_DB
SHORT_S = 1.2               # an utterance shorter than this (one syllable) is set higher still …
SHORT_EXTRA_DB = 5.0        # … by this: its consonant and release, 10–20 dB under its vowel (measured
                            # on the 大射正's 方 and 留), fill most of the meter's edge windows
SYLLABLE_RATIO = 3.0        # a syllable keeps a third of its level's difference from its utterance's
DUCK_DB = 12.0              # music and song under a call (issue 29: ≤ 12 dB)
DUCK_LEAD_S = 0.4           # the duck is down this long before an utterance reaches the seat
DUCK_HOLD_S = 0.5           # … and stays down this long after it ends
DUCK_RAMP_S = 0.06          # its fall and its rise
DUCK_MERGE_S = 1.5          # utterances closer than this share one duck
DUCK_OVER_DB = -30.0        # an utterance is ducked under music or song louder than this re MUSIC_DB
UNISON_S = 0.5              # utterances of several voices beginning this close are one answer
UTTERANCE_GAP_S = 0.8       # an utterance's syllables: less than this apart
STEP_S = 0.05               # a speaker's gain moves from one utterance's to the next in this long
CUE_RAMP_MIN_S = 0.2        # a cue's gain moves to the next cue's over their gap, at least this

Steps = list[tuple[float, float]]            # (time s, gain dB) breakpoints
Utterance = tuple[float, float, list[Arrival]]   # (start s, end s, its syllables)


def envelopes_for(listener: Listener) -> Callable[[Timeline, Plan], list[GainEnvelope]]:
    """The guide mix heard at ``listener``: for :attr:`yuexuan.audio.engine.plan.Options.envelopes`."""
    def guide(timeline: Timeline, plan: Plan) -> list[GainEnvelope]:
        return rows(timeline, listener, plan.names)
    return guide


def rows(timeline: Timeline, listener: Listener, names: Sequence[str]) -> list[GainEnvelope]:
    """The guide mix's gain envelopes for the instruments ``names`` of ``timeline``."""
    arr = levels.arrivals(timeline, listener, names)
    speakers = sorted({a.instrument for a in arr if a.spoken})
    singers = sorted({a.instrument for a in arr if a.sung} - set(speakers))
    players = [nm for nm in names if nm not in speakers and nm not in singers]
    n_hops = levels.hops_of(max([a.end_s for a in arr] + [timeline.duration]) + 1.0)
    insts = bodies(timeline, names)
    # each instrument's loudness and 1–4 kHz share, measured on one of its notes (a voice's:
    # its loudest syllable's)
    loud, share = {}, {}
    for nm in names:
        mine = [a for a in arr if a.instrument == nm]
        if not mine:
            continue
        a = max(mine, key=lambda x: x.level) if nm in speakers or nm in singers else mine[0]
        k_db, band_db = levels.shares_db(insts[nm], a.lyric, a.hz, a.velocity, a.duration_s)
        loud[nm], share[nm] = 10 ** (k_db / 10), 10 ** (band_db / 10)
    music = [a for a in arr if a.instrument in players]
    song = [a for a in arr if a.instrument in singers]
    music_gain = _cue_gains(timeline, music, MUSIC_DB, n_hops, loud)
    song_gain = _cue_gains(timeline, song, SONG_DB, n_hops, loud)
    utterances = {nm: _utterances([a for a in arr if a.instrument == nm]) for nm in speakers}
    music_e = _levelled(music, music_gain, n_hops, share, loud)
    song_e = _levelled(song, song_gain, n_hops, share, loud)
    bed = music_e[0] + song_e[0]
    ducks = _ducks([u for us in utterances.values() for u in us], bed, n_hops)
    band_rest = (music_e[1] + song_e[1]) * 10 ** (-DUCK_DB / 10)     # under a duck
    out = []
    if players and music_gain:
        out.append(_row(players, _cue_steps(timeline, music_gain), ducks, DUCK_DB))
    if singers and song_gain:
        out.append(_row(singers, _cue_steps(timeline, song_gain), ducks, DUCK_DB))
    starts = np.array([u[0] for us in utterances.values() for u in us])
    for nm in speakers:
        out.append(_row([nm], _speech_steps([s for u in utterances[nm]
                                             for s in _syllable_gains(u, share[nm], loud[nm], band_rest,
                                                                      _unison(starts, u[0]))]),
                        [], 0.0, dialogue=True))
    return out


def _cue_gains(timeline: Timeline, notes: Sequence[Arrival], target_db: float,
               n_hops: int, loud: dict[str, float]) -> dict[str, float]:
    """{cue id: gain dB} bringing each cue's ``notes`` (their loudness, gated) to ``target_db``."""
    out = {}
    for c in timeline.cues:
        mine = [a for a in notes if a.cue == c.id]
        level = levels.gated_db(sum((loud[nm] * levels.energy([a for a in mine if a.instrument == nm], n_hops)
                                     for nm in {a.instrument for a in mine}), np.zeros(n_hops))) \
            if mine else float("-inf")
        if math.isfinite(level):
            out[c.id] = target_db - level
    return out


def _levelled(notes: Sequence[Arrival], gains: dict[str, float], n_hops: int, share: dict[str, float],
              loud: dict[str, float]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The series of ``notes`` with their cue's gain: loudness, and energy in 1–4 kHz."""
    whole, band = np.zeros(n_hops), np.zeros(n_hops)
    for cue, g in gains.items():
        for name in {a.instrument for a in notes if a.cue == cue}:
            e = 10 ** (g / 10) * levels.energy([a for a in notes if a.cue == cue and a.instrument == name],
                                               n_hops)
            whole += loud[name] * e
            band += share[name] * e
    return whole, band


def _cue_steps(timeline: Timeline, gains: dict[str, float]) -> Steps:
    """Breakpoints of the cue gains: each held from its cue's start to its end, moving to the next
    across the gap between them."""
    cues = [c for c in timeline.cues if c.id in gains]
    points: Steps = []
    for k, c in enumerate(cues):
        g = gains[c.id]
        if k == 0:
            points.append((c.start, g))
            continue
        prev = cues[k - 1]
        lo, hi = prev.end, c.start
        if hi - lo < CUE_RAMP_MIN_S:
            lo = hi - CUE_RAMP_MIN_S
        points += [(lo, gains[prev.id]), (hi, g)]
    return points


def band_margin_db(length_s: float) -> float:
    """How far an utterance of ``length_s`` is set over the ducked rest in 1–4 kHz: BAND_MARGIN_DB
    where the meter's window holds all of it, more so that the windows at its edges, which hold
    only part of it, still clear BAND_MARGIN_DB but for EDGE_SHARE of its active windows.

    A window holding a share f of the call reads it 10·log10 f under its body; the call's windows
    count as active down to f = 0.01 (20 dB under), over about length + 400 ms; those with
    f < 10^(−x/10) (x: the margin over BAND_MARGIN_DB) fail, 2 · 400 ms · 10^(−x/10) of them.
    A single syllable (under SHORT_S) gets SHORT_EXTRA_DB more."""
    active = length_s + MOMENTARY_S
    edges = max(MARGIN_MIN_DB, 10 * math.log10(2 * MOMENTARY_S / (EDGE_SHARE * active)))
    return BAND_MARGIN_DB + edges + (SHORT_EXTRA_DB if length_s < SHORT_S else 0.0)


def _utterances(notes: Sequence[Arrival]) -> list[Utterance]:
    """One speaker's utterances: syllables less than UTTERANCE_GAP_S apart."""
    out: list[Utterance] = []
    group: list[Arrival] = []
    for a in sorted(notes, key=lambda a: a.start_s):
        if group and a.start_s - max(x.end_s for x in group) >= UTTERANCE_GAP_S:
            out.append((group[0].start_s, max(x.end_s for x in group), group))
            group = []
        group.append(a)
    if group:
        out.append((group[0].start_s, max(x.end_s for x in group), group))
    return out


def _unison(starts: npt.NDArray[np.float64], start: float) -> int:
    """How many utterances (this one too) begin within UNISON_S of ``start``: voices answering
    together (the three 负侯者's 诺, each reaching the seat at its own travel time)."""
    return max(1, int(np.count_nonzero(np.abs(starts - start) < UNISON_S)))


def _syllable_gains(u: Utterance, share: float, loud: float, band_rest: npt.NDArray[np.float64],
                    unison: int = 1) -> list[tuple[float, float, float]]:
    """(start s, end s, gain dB) of each syllable of utterance ``u``: the utterance brought to
    SPEECH_DB or, higher, to :func:`band_margin_db` over ``band_rest`` (the ducked rest's energy in
    1–4 kHz) at its loudest while ``u`` sounds; each syllable keeping 1/SYLLABLE_RATIO of its
    level's difference from the utterance's (their power mean)."""
    start, end, syllables = u
    mean_db = 10 * math.log10(float(np.mean([a.level ** 2 for a in syllables])))
    loud_db = mean_db + 10 * math.log10(loud)          # its loudness (the SPEECH_DB floor's)
    h0, h1 = max(0, int(start / levels.HOP_S)), min(len(band_rest), levels.hops_of(end))
    rest = float(band_rest[h0:h1].max()) if h1 > h0 else 0.0
    # as a level (fast-weighted maximum), dB; ``unison`` voices answering together (the three
    # 负侯者's 诺) are one answer: each takes its share
    target = SPEECH_DB - (loud_db - mean_db) - 10 * math.log10(unison)
    if rest > 0:
        target = max(target, 10 * math.log10(rest) + band_margin_db(end - start) - 10 * math.log10(share)
                     - 10 * math.log10(unison))
    out = []
    for a in syllables:
        own_db = 20 * math.log10(a.level)
        out.append((a.start_s, a.end_s, target - mean_db - (own_db - mean_db) * (1 - 1 / SYLLABLE_RATIO)))
    return out


def _speech_steps(syllables: list[tuple[float, float, float]]) -> Steps:
    """A speaker's breakpoints: each syllable's gain over it, moving to the next one's in the gap
    between them (STEP_S, midway; at the next one's start where they touch)."""
    points: Steps = []
    for k, (start, _end, g) in enumerate(syllables):
        if k == 0:
            points.append((start, g))
            continue
        prev_end, prev_g = syllables[k - 1][1], syllables[k - 1][2]
        mid = max(0.5 * (min(prev_end, start) + start), points[-1][0] + STEP_S)
        points += [(mid - STEP_S / 2, prev_g), (mid + STEP_S / 2, g)]
    return points


def _ducks(utterances: Sequence[Utterance], bed: npt.NDArray[np.float64],
           n_hops: int) -> list[tuple[float, float]]:
    """(start s, end s) of the spans where music and song are ducked: every utterance over a bed
    louder than DUCK_OVER_DB re MUSIC_DB, widened by DUCK_LEAD_S and DUCK_HOLD_S, joined where
    less than DUCK_MERGE_S apart."""
    floor = 10 ** ((MUSIC_DB + DUCK_OVER_DB) / 10)
    spans = []
    for start, end, _syl in sorted(utterances, key=lambda u: u[0]):
        h0, h1 = max(0, int(start / levels.HOP_S)), min(n_hops, levels.hops_of(end))
        if h1 > h0 and float(bed[h0:h1].max()) > floor:
            spans.append((start - DUCK_LEAD_S, end + DUCK_HOLD_S))
    merged: list[tuple[float, float]] = []
    for a, b in spans:
        if merged and a - merged[-1][1] < DUCK_MERGE_S:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _duck_db(t: npt.NDArray[np.floating[Any]], ducks: list[tuple[float, float]],
             depth_db: float) -> npt.NDArray[np.floating[Any]]:
    """The duck (dB ≤ 0) at times ``t``."""
    out = np.zeros(len(t))
    for a, b in ducks:
        fall = np.clip((t - (a - DUCK_RAMP_S)) / DUCK_RAMP_S, 0.0, 1.0)
        rise = np.clip(((b + DUCK_RAMP_S) - t) / DUCK_RAMP_S, 0.0, 1.0)
        out = np.minimum(out, -depth_db * np.minimum(fall, rise))
    return out


def _row(instruments: Sequence[str], steps: Steps, ducks: list[tuple[float, float]],
         depth_db: float, dialogue: bool = False) -> GainEnvelope:
    """One envelope: the piecewise-linear dB curve of ``steps`` less the ducks, as linear gains at
    the union of their breakpoints (``dialogue``: the instruments are the dialogue bus)."""
    times = [t for t, _ in steps]
    for a, b in ducks:
        times += [a - DUCK_RAMP_S, a, b, b + DUCK_RAMP_S]
    t = np.unique(np.round(np.asarray(times, dtype=np.float64), 6))
    st, sg = np.array([p[0] for p in steps]), np.array([p[1] for p in steps])
    order = np.argsort(st, kind="stable")
    db = np.interp(t, st[order], sg[order]) + _duck_db(t, ducks, depth_db)
    return GainEnvelope(tuple(instruments), tuple(float(x) for x in t),
                        tuple(float(10 ** (v / 20)) for v in db), dialogue)

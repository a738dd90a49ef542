"""The prosody of a spoken formula: each syllable's length and F0 contour, from its tone, its
neighbours and its place in the phrase (:func:`utterance`, the one function that lays out a speech
cue's syllables; :func:`call` for a syllable said alone). Pure functions of the words.

Models and where each number comes from:

- **tone sandhi** inside a phrase (Chao 1968, *A Grammar of Spoken Chinese*, on tone sandhi): a
  third tone before a third tone is said as a second (in a run, every one but the last); 不 bù
  before a fourth tone is bú; 一 yī is yí before a fourth tone and yì before the others, but
  keeps yī at the phrase's end and beside another numeral;
- **durations**: Klatt's duration rules (Klatt 1979, "Synthesis by rule of segmental durations in
  English sentences", in Lindblom & Öhman (eds.), *Frontiers of Speech Communication Research*;
  Allen, Hunnicutt & Klatt 1987, *From Text to Speech: the MITalk system*, ch. 9) applied to the
  Mandarin syllable's rhyme: ``rhyme = MIN + (INH − MIN) × Π PRCNT``, with rule 2 (the syllable
  before a pause lengthened, PRCNT 140), rule 3 (the others shortened, PRCNT 60) and rule 7
  (unstressed, PRCNT 70: the classical function words of :data:`UNSTRESSED`); a neutral tone
  PRCNT 50 (林茂灿、颜景助 1980, 《北京话轻声的声学性质》, 方言 1980(3): a neutral-tone syllable
  about half as long as a stressed one); the tones' order of length in citation form, 3 > 2 >
  1 > 4, as PRCNT 110, 105, 100, 90 (INFERENCE: the order is the usual finding, the sizes ours);
  the rhyme's inherent length by its vowels (a monophthong 0.20 s, a diphthong or a nasal coda
  0.24 s, three targets 0.27 s) and MIN = 0.45 × INH (INFERENCE, of the size of Klatt's own
  ratios); the initial adds its own length (as yuexuan/audio/voice/articulation.py makes it: stops'
  voice-onset times, Rochet & Fei 1991; fricatives 80–150 ms, Svantesson 1986; a stop's closure
  50 ms, INFERENCE), and a syllable's note ends where the next one's consonant (or closure)
  begins, its decay sounding under it (coarticulation). The syllables then
  share the utterance's present span in these proportions (pauses keep their slot), so that a
  formula keeps its length and later cues do not move;
- **F0**: Xu's target approximation, in its quantitative form qTA (Prom-on, Xu & Thipakorn 2009,
  JASA 125(1), eqs. 1–6): each syllable approaches its tone's pitch target ``x(t) = m t + b``
  (semitones re the speaker's speaking pitch) as a third-order critically damped system of
  strength λ, its F0, velocity and acceleration carried over from the syllable before (so a
  syllable's contour depends on its neighbours). The targets are placed on Chao's tone letters
  (Chao 1930: 1 = 55, 2 = 35, 3 = 214, 4 = 51) at 2.5 st a level about level 3 (the voices'
  existing scale, :mod:`yuexuan.audio.voice.glottal`): high H (b = +5), rising R (b = −2.5, m = +25
  st/s), low L (b = −6; said before a pause it rises, m = +22 st/s: the final 214), falling F (b =
  +6, m = −35 st/s), the slopes INFERENCE so that a 0.3 s syllable spans about the letters'
  range; a 4 before another 4 is a half fall, 53 (m = −17.5 st/s: Y. R. Chao, *A Grammar of
  Spoken Chinese*, 1968, the 4th tone's sandhi); λ = 40 /s (INFERENCE: 95 % of a step in about
  160 ms) and, for the neutral tone, a mid target of weak strength λ = 20 /s (Chen & Xu 2006,
  Phonetica 63(1): the neutral tone is a mid target approached weakly); **declination**: every
  target's height falls 2 st a second from its phrase's start, reset after a pause (INFERENCE,
  not a measured rate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from yuexuan.pronunciation import Reading, read_line

#: the last syllable of a phrase fills this share of its slot; one before another ends as the
#: next one's consonant begins (its decay under it: coarticulation), at least 20 ms before its vowel
FILL = 0.9
MIN_GAP_S = 0.02
#: the F0 contour on a note: one value about every this many seconds (at least three)
CONTOUR_STEP_S = 0.04

#: the function words of the classical formulas, said unstressed (Klatt's rule 7) but before a
#: pause (where the phrase's boundary lengthens them): INFERENCE, the common 虚词 of these texts
UNSTRESSED = frozenset("之乎者也于於而其若则与焉矣哉兮")
NUMERALS = frozenset("一二三四五六七八九十百千万两")

PRE_PAUSE = 1.40            # Klatt rule 2: the syllable before a pause
NON_FINAL = 0.60            # Klatt rule 3: every other syllable
UNSTRESSED_PRCNT = 0.70     # Klatt rule 7
TONE_PRCNT = {1: 1.00, 2: 1.05, 3: 1.10, 4: 0.90, 5: 0.50}   # 5: 林茂灿、颜景助 1980; 1–4 INFERENCE
MIN_FRACTION = 0.45         # MIN = 0.45 × INH (INFERENCE)
#: the initial's own length before its vowel, s, by class: yuexuan/audio/voice/articulation.py's
#: (stops' and affricates' release and voice-onset time, Rochet & Fei 1991; fricatives,
#: Svantesson 1986), a stop's or affricate's closure of 50 ms before it (INFERENCE)
CLOSURE_S = 0.05
_CLASS_S = {("b", "d", "g"): 0.03 + CLOSURE_S, ("p", "t", "k"): 0.10 + CLOSURE_S,
            ("z", "zh", "j"): 0.06 + CLOSURE_S, ("c", "ch", "q"): 0.11 + CLOSURE_S,
            ("f", "s", "sh", "x", "h"): 0.12, ("m", "n", "l", "r"): 0.05,
            ("",): CLOSURE_S}            # a syllable without an initial opens with a glottal stop
INITIAL_S = {initial: length for group, length in _CLASS_S.items() for initial in group}

#: qTA pitch targets (m st/s, b st, λ /s) by tone; 3 before a pause: ``FINAL_LOW``
TARGET = {1: (0.0, 5.0, 40.0), 2: (25.0, -2.5, 40.0), 3: (0.0, -6.0, 40.0), 4: (-35.0, 6.0, 40.0),
          5: (0.0, 0.0, 20.0)}
FINAL_LOW = (22.0, -6.0, 40.0)
HALF_FALL = (-17.5, 6.0, 40.0)   # a 4 before a 4 falls half-way, 53 (Chao 1968)
FINAL_LOW_TOP_ST = 2.5      # the final 214 rises to level 4
RANGE_ST = (-9.0, 8.0)      # a target's line stays inside the speaker's range (INFERENCE)
DECLINATION_ST_S = 2.0
CALL_TONE_S = 0.6           # a call says its tone over this much of itself, then holds (INFERENCE)


@dataclass(frozen=True)
class Spoken:
    """One syllable of an utterance as said: its note's onset (s from the utterance's start) and
    length, its tone after sandhi, and its F0 (semitones re the speaker's speaking pitch) at equal
    steps from the note's onset to its end."""

    syllable: str
    onset_s: float
    duration_s: float
    tone: int
    f0_st: tuple[float, ...]


def sandhi(chars: str, tones: Sequence[int]) -> list[int]:
    """The tones of one phrase ``chars`` as said (Chao 1968): 3-3 → 2-3 (in a run, all but the
    last), 不 before a 4th tone → 2, 一 → 2 before a 4th, 4 before the others (not at the end nor
    beside a numeral)."""
    out = list(tones)
    n = len(out)
    for k in range(n - 1):
        if out[k] == 3 and out[k + 1] == 3:
            out[k] = 2
    for k, ch in enumerate(chars[:-1]):
        nxt = out[k + 1]
        if ch == "不" and nxt == 4:
            out[k] = 2
        elif ch == "一" and chars[k + 1] not in NUMERALS and (k == 0 or chars[k - 1] not in NUMERALS):
            out[k] = 2 if nxt == 4 else 4 if nxt in (1, 2, 3) else out[k]
    return out


def _rhyme_inherent_s(reading: Reading) -> float:
    """A rhyme's inherent length by its vowel targets (INFERENCE): 0.20 s, 0.24 s, 0.27 s."""
    final = reading.final
    coda = final.endswith("n") or final.endswith("ng")
    vowels = len([c for c in final.rstrip("gn") if c in "aeiouvê"]) if final != "er" else 1
    targets = max(1, vowels) + coda
    return 0.20 if targets == 1 else 0.24 if targets == 2 else 0.27


def weights(chars: str, readings: Sequence[Reading], tones: Sequence[int]) -> list[float]:
    """Each syllable's length in a phrase by Klatt's rules (s, before fitting the span)."""
    out = []
    last = len(chars) - 1
    for k, (ch, r, tone) in enumerate(zip(chars, readings, tones)):
        inh = _rhyme_inherent_s(r)
        prcnt = (PRE_PAUSE if k == last else NON_FINAL) * TONE_PRCNT.get(tone, 1.0)
        if ch in UNSTRESSED and k != last:      # before a pause it carries the boundary
            prcnt *= UNSTRESSED_PRCNT
        out.append(INITIAL_S.get(r.initial, 0.0) + inh * (MIN_FRACTION + (1 - MIN_FRACTION) * prcnt))
    return out


Curve = npt.NDArray[np.float64]


def _qta(targets: Sequence[tuple[float, float, float]], lengths: Sequence[float],
         state: tuple[float, float, float], times: Sequence[Curve]) -> list[Curve]:
    """qTA (Prom-on et al. 2009): F0 at ``times[k]`` (s from syllable k's start) of syllables of
    ``lengths`` approaching ``targets`` (m, b, λ) in turn from ``state`` (F0, F0', F0'')."""
    y0, d0, a0 = state
    out = []
    for (m, b, lam), length, t in zip(targets, lengths, times):
        c1 = y0 - b
        c2 = d0 + c1 * lam - m
        c3 = (a0 + 2 * c2 * lam - c1 * lam * lam) / 2
        out.append(m * t + b + (c1 + c2 * t + c3 * t * t) * np.exp(-lam * t))
        e = math.exp(-lam * length)
        poly = c1 + c2 * length + c3 * length * length
        dpoly = c2 + 2 * c3 * length
        y0 = m * length + b + poly * e
        d0 = m + e * (dpoly - lam * poly)
        a0 = e * (2 * c3 - 2 * lam * dpoly + lam * lam * poly)
    return out


def _inside(target: tuple[float, float, float], length_s: float,
            top_st: float) -> tuple[float, float, float]:
    """``target`` with its slope eased so that its line ends inside :data:`RANGE_ST` (up to
    ``top_st``) over a syllable of ``length_s``: a long final syllable does not fall or rise past
    the speaker's range (INFERENCE; the qTA demonstrator bounds its targets by a pitch range too)."""
    m, b, lam = target
    end = m * length_s + b
    if end > top_st and m > 0:
        m = (top_st - b) / length_s
    elif end < RANGE_ST[0] and m < 0:
        m = (RANGE_ST[0] - b) / length_s
    return m, b, lam


def _phrases(slots: Sequence[str | None]) -> list[list[int]]:
    """Indices of the syllable slots of each phrase (runs between pauses)."""
    out: list[list[int]] = [[]]
    for k, s in enumerate(slots):
        if s is None:
            out.append([])
        else:
            out[-1].append(k)
    return [p for p in out if p]


def utterance(slots: Sequence[str | None], slot_s: float,
              readings: Sequence[Reading] | None = None) -> tuple[Spoken, ...]:
    """The syllables of ``slots`` (characters, None a pause) said in their present span
    ``len(slots) × slot_s`` from time 0: each note's onset and length (Klatt's rules, the
    syllables sharing the span, a pause one slot) and its F0 contour (qTA, sandhi, declination).
    ``readings``: one per syllable (default: pypinyin and the readings table, the line read whole)."""
    chars = "".join(s for s in slots if s is not None)
    if readings is None:
        readings = read_line(chars) if chars else ()
    if len(readings) != len(chars):
        raise ValueError(f"{len(chars)} syllables but {len(readings)} readings")
    phrases = _phrases(slots)
    idx = {k: j for j, k in enumerate(k for k, s in enumerate(slots) if s is not None)}
    tones: dict[int, int] = {}
    lengths: dict[int, float] = {}
    for p in phrases:
        text = "".join(slots[k] or "" for k in p)
        rs = [readings[idx[k]] for k in p]
        said = sandhi(text, [r.tone for r in rs])
        tones.update(zip(p, said))
        lengths.update(zip(p, weights(text, rs, said)))
    pauses = len(slots) - len(chars)
    scale = (len(slots) - pauses) * slot_s / max(sum(lengths.values()), 1e-9)
    onsets, t = {}, 0.0
    for k, s in enumerate(slots):
        onsets[k] = t
        t += slot_s if s is None else lengths[k] * scale
    out = []
    for p in phrases:
        start = onsets[p[0]]
        targets = []
        for j, k in enumerate(p):
            m, b, lam = FINAL_LOW if tones[k] == 3 and j == len(p) - 1 \
                else HALF_FALL if tones[k] == 4 and j < len(p) - 1 and tones[p[j + 1]] == 4 \
                else TARGET.get(tones[k], TARGET[5])
            targets.append((m, b - DECLINATION_ST_S * (onsets[k] - start), lam))
        slot = [lengths[k] * scale for k in p]
        targets = [_inside(tg, length, FINAL_LOW_TOP_ST if tones[k] == 3 and j == len(p) - 1 else RANGE_ST[1])
                   for j, (k, tg, length) in enumerate(zip(p, targets, slot))]
        nxt = [readings[idx[k]].initial for k in p[1:]]
        durations = [max(0.5 * x, x - max(MIN_GAP_S, INITIAL_S.get(i, 0.0))) for x, i in zip(slot, nxt)] \
            + [slot[-1] * FILL]
        grids = [np.linspace(0.0, d, max(3, math.ceil(d / CONTOUR_STEP_S) + 1)) for d in durations]
        curves = _qta(targets, slot, (targets[0][1], 0.0, 0.0), grids)
        for k, d, f0 in zip(p, durations, curves):
            out.append(Spoken(slots[k] or "", onsets[k], d, tones[k],
                              tuple(round(float(v), 2) for v in f0)))
    return tuple(sorted(out, key=lambda s: s.onset_s))


def call(syllable: str, duration_s: float) -> tuple[float, ...]:
    """The F0 contour (st re the speaking pitch) of one syllable said alone for ``duration_s``
    (a call: 留, 诺 …), its note filling the whole of it. A call held longer than
    :data:`CALL_TONE_S` says its tone over that and holds its end (a chanted call: INFERENCE)."""
    tone_s = min(duration_s, CALL_TONE_S)
    contour = np.array(utterance([syllable], tone_s / FILL)[0].f0_st)
    n = max(3, math.ceil(duration_s / CONTOUR_STEP_S) + 1)
    t = np.linspace(0.0, duration_s, n)
    held = np.interp(np.minimum(t, tone_s), np.linspace(0.0, tone_s, len(contour)), contour)
    return tuple(round(float(v), 2) for v in held)

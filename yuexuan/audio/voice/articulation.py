"""A syllable as a plan of articulation: when its consonant sounds and how, the vowel targets its
formants glide through, and its nasal ending (:class:`Articulation`), from a
:class:`~yuexuan.pronunciation.Reading`. Pure data and arithmetic; :mod:`yuexuan.audio.voice.singer`
turns it into sound.

Time 0 is the consonant's onset; the vowel starts at ``lead_s`` (in singing, on the note's time:
the consonant goes before the beat). Figures and where they come from:

- vowel formants F1–F3 of men: Peterson & Barney 1952 (JASA 24(2)), Table II averages, for the
  vowels they measured (i ɪ ɛ ɑ ɔ ʊ u ʌ ɝ); the other Mandarin vowels (a, ɤ, o, e, ə, y and the
  apical ɿ ʅ) are INFERENCE, placed between those; F1 of the close vowels i, u, ü from the table
  of 吴宗济、林茂灿 (eds.) 1989, 《实验语音学概要》 (男声: 290, 380, 290 Hz), the resonators set
  40 Hz under it (250, 340, 250 Hz) so that the voice's F1 — source and tract together, as Praat
  measures it (robust LPC) at a low F0 — is the table's (tests/test_speech.py); F4, F5 and their
  bandwidths: the defaults of Klatt's synthesiser (Klatt 1980, JASA 67(3), Table I: F4 3300 Hz B
  250, F5 3750 Hz B 200);
- formant transitions out of a consonant into the vowel: F2 starts halfway from the vowel's F2 to
  the locus of the consonant's place (Delattre, Liberman & Cooper 1955, JASA 27(4): loci 720 Hz
  labial, 1800 Hz alveolar, 3000 Hz velar before front vowels; the velar's locus before a back
  vowel, the retroflex's and the palatal's are INFERENCE: 1500, 1600 and 2300 Hz) and F1 from
  60 % of the vowel's (the rising F1 of a released closure, the same paper), held through the
  release, the aspiration and the voice's 20 ms rise (INFERENCE), then over 40 ms to the vowel's;
  sung, a stop's transition runs from its release under the legato voice, and a fricative's voice
  comes in on the vowel (so that a sung syllable makes one onset, not two)
  (transitions of 40 ms or less are heard as a stop's, longer ones as a glide's: Liberman,
  Delattre, Gerstman & Cooper 1956, J. Exp. Psychol. 52(2));
- nasal murmur: a first resonance near 250 Hz with weak, wide ones above, 10–15 dB under the
  vowel (Fujimura 1962, JASA 34(12)), its weak upper resonances at an initial m, n about 1100 and
  1700 Hz (INFERENCE); 80–150 ms of it at a final -n/-ng (the issue's range), its upper
  resonances the vowel's moved halfway to the nasal's locus (below);
- stops: a burst of at most 20 ms; voice-onset time of Mandarin unaspirated stops about 0–30 ms,
  aspirated 70–110 ms (Rochet & Fei 1991, Canadian Acoustics 19(4));
- fricatives 80–150 ms of noise; the sibilants' spectra in the order s > x > sh (Svantesson 1986,
  Lund Working Papers 29, "Acoustic analysis of Chinese fricatives and affricates"): band-pass
  noise with centroids of about 5.5, 4.7 and 3.8 kHz;
- sonorants (m n l r and the glides of i-, u-, ü- finals) voiced, with a formant transition of
  40–100 ms into the vowel.
"""

from __future__ import annotations

from dataclasses import dataclass

from yuexuan.pronunciation import Reading

Formants = tuple[tuple[float, float], ...]      # ((F Hz, bandwidth Hz) × 5)

#: a voice dies away over this long after its note's end: a sung line is legato, the vowel still
#: sounding while the next syllable's consonant begins (INFERENCE, as long as the longest
#: consonant before a vowel; 0.25 s held the last vowel or glide so long that a syllable sung
#: alone was matched to another ending's template, tests/test_speech.py; the other sustained
#: bodies release over yuexuan.audio.synthesis.primitives.RELEASE_S)
RELEASE_S = 0.15
#: a spoken syllable decays faster: it is gone as the next one's vowel starts, the next consonant
#: sounding over its decay (INFERENCE)
SPOKEN_RELEASE_S = 0.04

_F45 = ((3300.0, 250.0), (3750.0, 200.0))       # Klatt 1980 defaults


def _v(f1: float, f2: float, f3: float, b1: float = 70.0, b2: float = 90.0, b3: float = 150.0) -> Formants:
    return ((f1, b1), (f2, b2), (f3, b3), *_F45)


#: vowel targets (men): Peterson & Barney 1952 where the symbol is theirs, else INFERENCE; F1 of
#: the close vowels i u ü from 吴宗济、林茂灿 1989 (see the module's notes).
VOWEL = {
    "i": _v(250, 2290, 3010), "ɪ": _v(390, 1990, 2550), "ɛ": _v(530, 1840, 2480),
    "ɑ": _v(730, 1090, 2440), "ɔ": _v(570, 840, 2410), "ʊ": _v(440, 1020, 2240),
    "u": _v(340, 870, 2240), "ʌ": _v(640, 1190, 2390), "ɝ": _v(490, 1350, 1690),
    # INFERENCE (between the measured ones): Mandarin a, ɤ, o, e, ə, ü and the apical vowels
    "a": _v(750, 1300, 2500), "ɤ": _v(500, 1150, 2500), "o": _v(500, 880, 2450),
    "e": _v(450, 2000, 2550), "ə": _v(520, 1350, 2450), "y": _v(250, 1900, 2300),
    "ɿ": _v(380, 1450, 2600), "ʅ": _v(380, 1650, 2100),
}
#: nasal murmurs (Fujimura 1962: F1 ≈ 250–300 Hz, weak wide resonances above; values INFERENCE)
MURMUR = {
    "m": ((250.0, 100.0), (1100.0, 300.0), (2300.0, 400.0), *_F45),
    "n": ((250.0, 100.0), (1700.0, 300.0), (2600.0, 400.0), *_F45),
    "ng": ((250.0, 100.0), (1050.0, 350.0), (2300.0, 400.0), *_F45),
    "l": ((350.0, 90.0), (1100.0, 150.0), (2700.0, 200.0), *_F45),
    "r": ((380.0, 90.0), (1300.0, 150.0), (1800.0, 200.0), *_F45),
}
MURMUR_GAIN = 0.3            # murmur amplitude re the vowel (−10.5 dB, Fujimura 1962's 10–15 dB)
ONSET_GAIN = 1.3             # voicing of a syllable's first sound (a glide, a sonorant before the vowel):
                             # a singer carries the weak glide or murmur at the line's level (INFERENCE);
                             # spoken, a murmur is MURMUR_GAIN under the vowel and a glide at its level

#: finals (pypinyin strict spelling) as (medial glide, nucleus, offglide, coda)
FINALS: dict[str, tuple[str, str, str, str]] = {
    "a": ("", "a", "", ""), "o": ("", "o", "", ""), "e": ("", "ɤ", "", ""), "i": ("", "i", "", ""),
    "u": ("", "u", "", ""), "v": ("", "y", "", ""), "er": ("", "ɝ", "", ""), "ê": ("", "ɛ", "", ""),
    "ai": ("", "a", "ɪ", ""), "ei": ("", "e", "ɪ", ""), "ao": ("", "a", "ʊ", ""), "ou": ("", "ə", "u", ""),
    "an": ("", "a", "", "n"), "en": ("", "ə", "", "n"), "ang": ("", "ɑ", "", "ng"),
    "eng": ("", "ə", "", "ng"), "ong": ("", "ʊ", "", "ng"),
    "ia": ("i", "a", "", ""), "ie": ("i", "ɛ", "", ""), "iao": ("i", "a", "ʊ", ""),
    "iou": ("i", "ə", "u", ""), "ian": ("i", "ɛ", "", "n"), "in": ("", "i", "", "n"),
    "iang": ("i", "ɑ", "", "ng"), "ing": ("", "i", "", "ng"), "iong": ("i", "ʊ", "", "ng"),
    "ua": ("u", "a", "", ""), "uo": ("u", "o", "", ""), "uai": ("u", "a", "ɪ", ""),
    "uei": ("u", "e", "ɪ", ""), "uan": ("u", "a", "", "n"), "uen": ("u", "ə", "", "n"),
    "uang": ("u", "ɑ", "", "ng"), "ueng": ("u", "ə", "", "ng"),
    "ve": ("y", "ɛ", "", ""), "van": ("y", "ɛ", "", "n"), "vn": ("", "y", "", "n"),
}


@dataclass(frozen=True)
class Consonant:
    """How an initial sounds: ``kind`` burst (stop), affricate, fricative, nasal, liquid or none."""

    kind: str
    burst_s: float = 0.0                # stop or affricate release burst (≤ 20 ms)
    frication_s: float = 0.0            # fricative noise
    vot_s: float = 0.0                  # aspiration (or the short lag) before voicing
    band_hz: tuple[float, float] = (0.0, 0.0)  # band of the burst or frication noise
    level: float = 0.0                  # noise amplitude re the vowel's RMS
    murmur_s: float = 0.0               # voiced sonorant before the vowel
    transition_s: float = 0.06          # formant transition into the vowel (40–100 ms)


_S, _SH, _X = (3800.0, 7500.0), (2600.0, 5200.0), (3200.0, 6500.0)
#: Mandarin initials (Rochet & Fei 1991 for VOT; Svantesson 1986 for the sibilants' order)
CONSONANT = {
    "b": Consonant("burst", burst_s=0.010, vot_s=0.015, band_hz=(300.0, 2000.0), level=0.5),
    "d": Consonant("burst", burst_s=0.010, vot_s=0.015, band_hz=(2500.0, 6000.0), level=0.5),
    "g": Consonant("burst", burst_s=0.015, vot_s=0.020, band_hz=(1200.0, 3200.0), level=0.5),
    "p": Consonant("burst", burst_s=0.010, vot_s=0.085, band_hz=(300.0, 2000.0), level=0.5),
    "t": Consonant("burst", burst_s=0.010, vot_s=0.085, band_hz=(2500.0, 6000.0), level=0.5),
    "k": Consonant("burst", burst_s=0.015, vot_s=0.090, band_hz=(1200.0, 3200.0), level=0.5),
    "z": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.010, band_hz=_S, level=0.4),
    "zh": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.010, band_hz=_SH, level=0.4),
    "j": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.010, band_hz=_X, level=0.4),
    "c": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.060, band_hz=_S, level=0.4),
    "ch": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.060, band_hz=_SH, level=0.4),
    "q": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.060, band_hz=_X, level=0.4),
    "s": Consonant("fricative", frication_s=0.120, band_hz=_S, level=0.3),
    "sh": Consonant("fricative", frication_s=0.120, band_hz=_SH, level=0.3),
    "x": Consonant("fricative", frication_s=0.120, band_hz=_X, level=0.3),
    "f": Consonant("fricative", frication_s=0.100, band_hz=(1500.0, 9000.0), level=0.1),
    "h": Consonant("fricative", frication_s=0.080, band_hz=(700.0, 3000.0), level=0.25),
    "m": Consonant("nasal", murmur_s=0.035, transition_s=0.060),
    "n": Consonant("nasal", murmur_s=0.035, transition_s=0.060),
    "l": Consonant("liquid", murmur_s=0.045, transition_s=0.050),
    "r": Consonant("liquid", murmur_s=0.070, transition_s=0.060, frication_s=0.070, band_hz=_SH,
                   level=0.05),
    # no initial: a sung syllable starts with a hard glottal attack (a short broadband click)
    "": Consonant("none", burst_s=0.008, band_hz=(500.0, 6000.0), level=0.25, transition_s=0.070),
}


#: F2 locus of each initial's place, Hz (Delattre, Liberman & Cooper 1955; see the module's notes)
LABIAL, ALVEOLAR, RETROFLEX, PALATAL = 720.0, 1800.0, 1600.0, 2300.0
VELAR_FRONT, VELAR_BACK = 3000.0, 1500.0
LOCUS_F2 = {**dict.fromkeys("bpmf", LABIAL), **dict.fromkeys(("d", "t", "n", "l", "z", "c", "s"), ALVEOLAR),
            **dict.fromkeys(("zh", "ch", "sh", "r"), RETROFLEX), **dict.fromkeys("jqx", PALATAL)}
VELARS = ("g", "k", "h")
LOCUS_START = 0.5            # F2 starts this far from the vowel toward the locus (Delattre et al.)
LOCUS_F1 = 0.6               # F1 starts at this share of the vowel's
TRANSITION_S = 0.04          # from the full voicing to the vowel's formants: a stop's (Liberman et al. 1956)
VOICE_RISE_S = 0.02          # spoken, the voice rises to full over this after the consonant


@dataclass(frozen=True)
class Articulation:
    """The plan of one syllable from time 0 (the consonant's onset): formant keyframes (time s,
    5 × (F, B)) and voicing keyframes (time s, amplitude 0..1), both interpolated linearly; noise
    events; where the vowel starts and the note ends."""

    lead_s: float                          # the consonant before the vowel
    end_s: float                           # the note's end (lead + held length)
    formants: tuple[tuple[float, Formants], ...]       # (time s, formants)
    voicing: tuple[tuple[float, float], ...]           # (time s, voicing amplitude)
    noises: tuple[tuple[float, float, tuple[float, float], float], ...]  # (start s, length s, band, level)
    aspiration: tuple[float, float]        # (start s, end s) of aspiration noise through the formants


def vowels(reading: Reading) -> tuple[str, str, str, str]:
    """(medial, nucleus, offglide, coda) of a reading; the apical vowels of zi/ci/si, zhi/chi/shi/ri."""
    med, nuc, off, coda = FINALS.get(reading.final, ("", "ə", "", ""))
    if reading.final == "i" and reading.initial in ("z", "c", "s"):
        nuc = "ɿ"
    elif reading.final == "i" and reading.initial in ("zh", "ch", "sh", "r"):
        nuc = "ʅ"
    return med, nuc, off, coda


def release_s(sung: bool) -> float:
    """How long a voice dies away after its note's end: :data:`RELEASE_S` sung, else
    :data:`SPOKEN_RELEASE_S`."""
    return RELEASE_S if sung else SPOKEN_RELEASE_S


def lead_s(reading: Reading) -> float:
    """How long the consonant sounds before the vowel (s); the glottal attack of a syllable
    without an initial is the vowel's own onset."""
    c = CONSONANT.get(reading.initial, CONSONANT[""])
    if c.kind == "none":
        return 0.0
    return c.burst_s + c.frication_s + c.vot_s if c.kind != "nasal" and c.kind != "liquid" else c.murmur_s


def _raise_f1(f: Formants, factor: float) -> Formants:
    """``f`` with F1 raised by up to ``factor`` (vocal effort opens the jaw): fully for an open
    vowel (F1 ≥ 750 Hz), a fifth of it for a close one (≤ 250 Hz), and never within 200 Hz of F2
    (INFERENCE: the close vowels leave the jaw little to open)."""
    f1, f2 = f[0][0], f[1][0]
    share = min(1.0, max(0.2, (f1 - 250.0) / 500.0))
    raised = max(f1, min(f1 * (1.0 + (factor - 1.0) * share), f2 - 200.0))
    return ((raised, f[0][1] * raised / f1), *f[1:])


def released(initial: str, vowel: Formants) -> Formants:
    """The formants at a consonant's release into ``vowel``: F2 halfway to the locus of the
    initial's place (a velar's front or back locus by the vowel's F2), F1 lowered."""
    f2 = vowel[1][0]
    locus = LOCUS_F2.get(initial, (VELAR_FRONT if f2 >= 1500.0 else VELAR_BACK) if initial in VELARS else f2)
    return ((vowel[0][0] * LOCUS_F1, vowel[0][1]), (f2 + LOCUS_START * (locus - f2), vowel[1][1]),
            *vowel[2:])


def coda_murmur(coda: str, vowel: Formants) -> Formants:
    """The murmur of a final -n or -ng after ``vowel``: the nasal's own first resonance, and its
    second and third those of the vowel moved halfway to the locus of the nasal's place (alveolar;
    velar, front or back by the vowel's F2): the vowel's transition into the closure, as out of
    one, so that -ing stays front and -ang back."""
    locus = ALVEOLAR if coda == "n" else VELAR_FRONT if vowel[1][0] >= 1500.0 else VELAR_BACK
    base = MURMUR[coda]
    f2 = vowel[1][0] + LOCUS_START * (locus - vowel[1][0])
    return (base[0], (f2, base[1][1]), (vowel[2][0], base[2][1]), *base[3:])


def articulate(reading: Reading, held_s: float, f1_factor: float = 1.0, sung: bool = True) -> Articulation:
    """The plan of ``reading`` held ``held_s`` seconds from the vowel's onset. ``f1_factor`` raises
    F1 (a shout); ``sung`` holds the nucleus and glides at the ends (speech spreads the glides)."""
    c = CONSONANT.get(reading.initial, CONSONANT[""])
    med, nuc, off, coda = vowels(reading)
    lead = lead_s(reading)
    end = lead + held_s
    span = max(held_s, 0.05)
    form: list[tuple[float, Formants]] = []
    voice: list[tuple[float, float]] = []
    noises = []
    nucleus = _raise_f1(VOWEL[nuc], f1_factor)
    first = _raise_f1(VOWEL[med], f1_factor) if med else nucleus
    onset_gain = ONSET_GAIN if sung else 1.0
    if c.kind in ("nasal", "liquid"):                     # a murmur, then its transition to the vowel
        son = MURMUR.get(reading.initial, MURMUR["n"])
        form += [(0.0, son), (lead, son)]
        level = ONSET_GAIN if sung else MURMUR_GAIN       # spoken, the murmur under the vowel
        voice += [(0.0, 0.0), (0.005, level), (lead, level)]
        if c.frication_s:
            noises.append((0.0, c.frication_s, c.band_hz, c.level))
        t_first = lead + min(c.transition_s, 0.3 * span)
    elif c.kind == "none":                                # a glottal onset: voiced at once
        if sung:
            noises.append((0.0, c.burst_s, c.band_hz, c.level))
        form.append((0.0, first))
        voice += [(0.0, 0.0), (0.002, onset_gain)]
        t_first = 0.0
    else:                                                 # out of the closure: the loci's transition
        if c.burst_s:
            noises.append((0.0, c.burst_s, c.band_hz, c.level))
        if c.frication_s:
            noises.append((c.burst_s, c.frication_s, c.band_hz, c.level))
        if not sung:                    # spoken: held until the voice is full, then the transition
            voiced = max(c.burst_s + c.frication_s, lead) + min(VOICE_RISE_S, 0.1 * span)
            onset = released(reading.initial, first)
        elif c.kind == "burst":         # sung, a stop's transition from its release, under the rising voice
            voiced, onset = c.burst_s, released(reading.initial, first)
        else:                           # sung, a fricative's voice comes in on the vowel (one onset)
            voiced, onset = lead, first
        form += [(0.0, onset), (voiced, onset)]
        t_first = voiced + min(TRANSITION_S, 0.3 * span)
        if sung:        # legato: the voice comes in under the consonant, reaching the vowel's level
            ramp = lead + 0.04                            # at its onset (one onset a syllable)
            voice += [(ramp * u, u * u) for u in (0.0, 0.25, 0.5, 0.75, 1.0)]
        else:                                             # speech: voicing after the consonant
            voice += [(0.0, 0.0), (max(0.0, lead - 0.01), 0.0), (lead + VOICE_RISE_S, 1.0)]
    t_nuc = t_first
    if med:             # sung, the glide opens slowly into the nucleus (no second onset)
        form.append((max(t_first, lead + 0.04) if c.kind in ("none", "nasal", "liquid") else t_first, first))
        voice.append((lead + 0.04, onset_gain if c.kind == "none" else 1.0))
        t_nuc = max(t_first, lead + 0.04) + (min(0.15, 0.3 * span) if sung else 0.25 * span)
    elif c.kind == "none":
        t_nuc = lead + min(0.03, 0.3 * span)
    form.append((t_nuc, nucleus))
    voice.append((t_nuc, 1.0))
    tail_s = min(0.12, 0.25 * span) if coda else 0.0
    glide_s = (min(0.2, 0.3 * span) if sung else 0.4 * span) if off else 0.0
    hold_end = max(t_nuc, end - tail_s - glide_s)
    form.append((hold_end, nucleus))
    voice.append((hold_end, 1.0))
    if off:
        form.append((max(hold_end, end - tail_s), VOWEL[off]))
    if coda:
        mur = coda_murmur(coda, form[-1][1])
        form += [(max(hold_end, end - tail_s) + 0.06, mur), (end, mur)]
        voice += [(max(hold_end, end - tail_s) + 0.06, MURMUR_GAIN), (end, MURMUR_GAIN)]
    else:
        form.append((end, form[-1][1]))
        voice.append((end, 1.0))
    aspiration = (c.burst_s + c.frication_s, lead) if c.vot_s and c.kind != "none" else (0.0, 0.0)
    form.sort(key=lambda k: k[0])
    voice.sort(key=lambda k: k[0])
    return Articulation(lead, end, tuple(form), tuple(voice), tuple(noises), aspiration)

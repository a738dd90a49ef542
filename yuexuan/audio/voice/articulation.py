"""A syllable as a plan of articulation: when its consonant sounds and how, the vowel targets its
formants glide through, and its nasal ending (:class:`Articulation`), from a
:class:`~yuexuan.pronunciation.Reading`. Pure data and arithmetic; :mod:`yuexuan.audio.voice.singer`
turns it into sound.

Time 0 is the consonant's onset; the vowel starts at ``lead_s`` (in singing, on the note's time:
the consonant goes before the beat). Figures and where they come from:

- vowel formants F1–F3 of men: Peterson & Barney 1952 (JASA 24(2)), Table II averages, for the
  vowels they measured (i ɪ ɛ ɑ ɔ ʊ u ʌ ɝ); the other Mandarin vowels (a, ɤ, o, e, ə, y and the
  apical ɿ ʅ) are INFERENCE, placed between those; F4, F5 and their bandwidths: the defaults of
  Klatt's synthesiser (Klatt 1980, JASA 67(3), Table I: F4 3300 Hz B 250, F5 3750 Hz B 200);
- nasal murmur: a first resonance near 250 Hz with weak, wide ones above, 10–15 dB under the
  vowel (Fujimura 1962, JASA 34(12)); 80–150 ms of it at a final -n/-ng (the issue's range);
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
#: sounding while the next syllable's consonant begins (INFERENCE; the other sustained bodies
#: release over yuexuan.audio.synthesis.primitives.RELEASE_S)
RELEASE_S = 0.25

_F45 = ((3300.0, 250.0), (3750.0, 200.0))       # Klatt 1980 defaults


def _v(f1: float, f2: float, f3: float, b1: float = 70.0, b2: float = 90.0, b3: float = 150.0) -> Formants:
    return ((f1, b1), (f2, b2), (f3, b3), *_F45)


#: vowel targets (men): Peterson & Barney 1952 where the symbol is theirs, else INFERENCE.
VOWEL = {
    "i": _v(270, 2290, 3010), "ɪ": _v(390, 1990, 2550), "ɛ": _v(530, 1840, 2480),
    "ɑ": _v(730, 1090, 2440), "ɔ": _v(570, 840, 2410), "ʊ": _v(440, 1020, 2240),
    "u": _v(300, 870, 2240), "ʌ": _v(640, 1190, 2390), "ɝ": _v(490, 1350, 1690),
    # INFERENCE (between the measured ones): Mandarin a, ɤ, o, e, ə, ü and the apical vowels
    "a": _v(750, 1300, 2500), "ɤ": _v(500, 1150, 2500), "o": _v(500, 880, 2450),
    "e": _v(450, 2000, 2550), "ə": _v(520, 1350, 2450), "y": _v(280, 1900, 2300),
    "ɿ": _v(380, 1450, 2600), "ʅ": _v(380, 1650, 2100),
}
#: nasal murmurs (Fujimura 1962: F1 ≈ 250 Hz, weak wide resonances above; values INFERENCE)
MURMUR = {
    "m": ((250.0, 100.0), (1100.0, 300.0), (2300.0, 400.0), *_F45),
    "n": ((250.0, 100.0), (1700.0, 300.0), (2600.0, 400.0), *_F45),
    "ng": ((250.0, 100.0), (1050.0, 350.0), (2300.0, 400.0), *_F45),
    "l": ((350.0, 90.0), (1100.0, 150.0), (2700.0, 200.0), *_F45),
    "r": ((380.0, 90.0), (1300.0, 150.0), (1800.0, 200.0), *_F45),
}
MURMUR_GAIN = 0.3            # murmur amplitude re the vowel (−10.5 dB, Fujimura 1962's 10–15 dB)
ONSET_GAIN = 1.3             # voicing of a syllable's first sound (a glide, a sonorant before the vowel):
                             # a singer carries the weak glide or murmur at the line's level (INFERENCE)

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
    "z": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.010, band_hz=_S, level=0.2),
    "zh": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.010, band_hz=_SH, level=0.2),
    "j": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.010, band_hz=_X, level=0.2),
    "c": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.060, band_hz=_S, level=0.2),
    "ch": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.060, band_hz=_SH, level=0.2),
    "q": Consonant("affricate", burst_s=0.005, frication_s=0.050, vot_s=0.060, band_hz=_X, level=0.2),
    "s": Consonant("fricative", frication_s=0.120, band_hz=_S, level=0.15),
    "sh": Consonant("fricative", frication_s=0.120, band_hz=_SH, level=0.15),
    "x": Consonant("fricative", frication_s=0.120, band_hz=_X, level=0.15),
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


@dataclass(frozen=True)
class Articulation:
    """The plan of one syllable: formant keyframes (time s, 5 × (F, B), voicing 0..1) from time 0
    (the consonant's onset); noise events; where the vowel starts and the note ends."""

    lead_s: float                          # the consonant before the vowel
    end_s: float                           # the note's end (lead + held length)
    keys: tuple[tuple[float, Formants, float], ...]   # (time s, formants, voicing amplitude)
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


def lead_s(reading: Reading) -> float:
    """How long the consonant sounds before the vowel (s); the glottal attack of a syllable
    without an initial is the vowel's own onset."""
    c = CONSONANT.get(reading.initial, CONSONANT[""])
    if c.kind == "none":
        return 0.0
    return c.burst_s + c.frication_s + c.vot_s if c.kind != "nasal" and c.kind != "liquid" else c.murmur_s


def _raise_f1(f: Formants, factor: float) -> Formants:
    return ((f[0][0] * factor, f[0][1] * factor), *f[1:])


def articulate(reading: Reading, held_s: float, f1_factor: float = 1.0, sung: bool = True) -> Articulation:
    """The plan of ``reading`` held ``held_s`` seconds from the vowel's onset. ``f1_factor`` raises
    F1 (a shout); ``sung`` holds the nucleus and glides at the ends (speech spreads the glides)."""
    c = CONSONANT.get(reading.initial, CONSONANT[""])
    med, nuc, off, coda = vowels(reading)
    lead = lead_s(reading)
    end = lead + held_s
    keys: list[tuple[float, Formants, float]] = []
    noises = []
    nucleus = _raise_f1(VOWEL[nuc], f1_factor)
    first = VOWEL[med] if med else nucleus
    trans = c.transition_s
    if c.kind in ("nasal", "liquid"):
        son = MURMUR.get(reading.initial, MURMUR["n"])
        keys += [(0.0, son, 0.0), (0.005, son, ONSET_GAIN), (lead, son, ONSET_GAIN)]
        if c.frication_s:
            noises.append((0.0, c.frication_s, c.band_hz, c.level))
    else:
        if c.burst_s and (sung or c.kind != "none"):
            noises.append((0.0, c.burst_s, c.band_hz, c.level))
        if c.frication_s:
            noises.append((c.burst_s, c.frication_s, c.band_hz, c.level))
        keys.append((0.0, first, 0.0))
        if c.kind == "none":                              # a glottal onset: voiced at once
            keys.append((0.0, first, ONSET_GAIN))
        elif sung:      # legato: the voice comes in under the consonant, reaching the vowel's level
            ramp = lead + 0.04                            # at its onset (one onset a syllable)
            keys += [(ramp * u, first, u * u) for u in (0.25, 0.5, 0.75)] + [(ramp, first, 1.0)]
        else:                                             # speech: voicing after the consonant
            keys.append((max(0.0, lead - 0.01), first, 0.0))
            keys.append((lead + 0.02, first, 1.0))
    span = max(held_s, 0.05)
    t = lead + min(trans if (med or c.kind in ("nasal", "liquid")) else 0.03, 0.3 * span)
    if med:             # sung, the glide opens slowly into the nucleus (no second onset)
        keys.append((lead + 0.04, VOWEL[med], ONSET_GAIN if c.kind == "none" else 1.0))
        t += min(0.15, 0.3 * span) if sung else 0.25 * span
    keys.append((t, nucleus, 1.0))
    tail_s = min(0.12, 0.25 * span) if coda else 0.0
    glide_s = (min(0.2, 0.3 * span) if sung else 0.4 * span) if off else 0.0
    hold_end = max(t, end - tail_s - glide_s)
    keys.append((hold_end, nucleus, 1.0))
    if off:
        keys.append((max(hold_end, end - tail_s), VOWEL[off], 1.0))
    if coda:
        mur = MURMUR[coda]
        keys.append((max(hold_end, end - tail_s) + 0.03, mur, MURMUR_GAIN))
        keys.append((end, mur, MURMUR_GAIN))
    else:
        keys.append((end, keys[-1][1], 1.0))
    aspiration = (c.burst_s + c.frication_s, lead) if c.vot_s and c.kind != "none" else (0.0, 0.0)
    keys.sort(key=lambda k: k[0])
    return Articulation(lead, end, tuple(keys), tuple(noises), aspiration)

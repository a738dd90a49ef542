"""The compiler's collector: instruments available at a rank, sounded notes, 射节 beats."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from yuexuan.compiler import prosody
from yuexuan.errors import UserError
from yuexuan.rite import cuesheet
from yuexuan.rite import variants as variants_mod
from yuexuan.rite.cuesheet_records import CueSpec
from yuexuan.rite.instruments import Instrument
from yuexuan.rite.suspension import Rank
from yuexuan.rite.tuning import Pitch, hz_to_midi
from yuexuan.timeline import Beat, Note
from yuexuan.timeline_rite import Rite as RiteRecord

INTRO_STEP_S = 0.6        # spacing of the opening strokes (鼗, 朔鼙, 应鼙) of a music cue
INTRO_TAIL_S = 0.6        # from the last opening stroke to the first note
STROKE_S = 0.4            # MIDI length of a drum stroke
BO_STEPS = 2.0            # a 鑮 stroke lasts two note steps
CALL_DELAY_S = (1.5, 2.6)     # 获者: 举旌以宫, then 偃旌以商, after the arrow is loosed
CALL_LEN_S = (1.0, 0.8)
SPOKEN_KEY = 70            # GM percussion key (Maracas, channel 10) of a spoken call: docs/timeline.md
CALL_STEP_S = 0.5         # beat_s of a calls cue: the 去侯 calls start (0, 5 s) and end (3.5, 7.5 s) on it
MAX_NOTES = 5_000_000     # refuse to build more sounded events than this (memory guard)
MAX_TIMELINE_S = 24 * 3600.0   # a compiled selection may last at most a day

HUNG_SIDES = ("东", "西", "北", "南")    # the 县 sides a rank may hang (ceremony/suspension.toml)
#: (Hz, MIDI key, cents, 律 name) of a sounding pitch
PitchFacts = tuple[float, int, float, str]
VELOCITY = {"melody": 84, "phrase_accent": 12, "建鼓": 104, "鼙": 88, "鼗": 80, "鑮": 96}


class Placed(NamedTuple):
    """One cue's notes placed: what its :class:`~yuexuan.timeline.Cue` record needs."""

    end: float                # s
    phrases: list[float]      # phrase start times, s
    beat_s: float             # the cue's metrical step, s (docs/timeline.md, "beat_s")
    reconstruction: bool = False
    piece: str | None = None  # the piece sounded, when not the cue's own (the rank's 射节 piece)
    source: str = ""          # the source of that piece, added to the cue's


@dataclass
class Builder:
    """Mutable collector used while compiling one timeline."""

    sheet: cuesheet.CueSheet
    insts: dict[str, Instrument]
    rank: Rank               # the sheet's rank: what it hangs, its substitutes (ceremony/suspension.toml)
    bei_struck: bool
    voice_offsets: dict[str, int] = field(default_factory=dict)   # instrument name -> velocity offset (O32)
    notes: list[Note] = field(default_factory=list)
    beats: list[Beat] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # sounding Pitch -> (hz, midi, cents, name)
    _pitch_facts: dict[Pitch, PitchFacts] = field(default_factory=dict)
    logged_rounds: frozenset[int] = frozenset()   # rounds a shot log (--shots) covers: compiler/logged.py
    # instruments a variant narrowed (O11, O12): :func:`nearest_in_set`
    narrowed: frozenset[str] = frozenset()
    rite: RiteRecord | None = None   # the rite at this rank: its 侯, host, roster (compiler/roster.py)

    def strings_decide(self, round_: int) -> bool:
        """Whether the cue sheet's ``hits`` strings make the calls of ``round_`` (no shot log
        covers it)."""
        return round_ not in self.logged_rounds

    def pitch_facts(self, sounding: Pitch) -> PitchFacts:
        """(Hz, MIDI key, cents, name) of a sounding pitch, computed once per pitch."""
        facts = self._pitch_facts.get(sounding)
        if facts is None:
            hz = sounding.hz(self.sheet.huangzhong_hz)
            midi, cents = hz_to_midi(hz)
            facts = self._pitch_facts[sounding] = (hz, midi, cents, sounding.name)
        return facts

    @property
    def sides(self) -> tuple[str, ...]:
        return self.rank.sides

    def present(self, inst: Instrument) -> bool:
        """Is ``inst`` there at the rank: hung on one of its sides (ceremony/suspension.toml), or not a
        hung instrument at all (堂上, 堂下, 侯)."""
        return inst.xian not in HUNG_SIDES or inst.name in self.rank.instruments

    def available(self, inst: Instrument) -> bool:
        """Is ``inst`` present and sounding: 建鼓·北 only when struck (O10)."""
        if not self.present(inst):
            return False
        if inst.kind == "建鼓" and inst.xian == "北" and not self.bei_struck:  # noqa: SIM103  (a guard per reason)
            return False
        return True

    def _present(self, tokens: Iterable[str], cue_sides: Collection[str] | None = None) -> list[Instrument]:
        """Available instruments named or of the kinds in ``tokens``; kinds only on ``cue_sides``."""
        out: list[Instrument] = []
        for tok in tokens:
            if tok in self.insts:
                cand = [self.insts[tok]]
            else:
                cand = [i for i in self.insts.values() if i.kind == tok and
                        (cue_sides is None or i.xian in cue_sides or i.xian not in HUNG_SIDES)]
            out.extend(i for i in cand if self.available(i) and i not in out)
        return out

    def resolve(self, tokens: Iterable[str], cue_sides: Collection[str] | None = None,
                substitute: bool = True) -> list[Instrument]:
        """Instrument names or kinds → available instruments (layout order, no repeats). A token the
        rank lacks is replaced by the rank's substitute for it (ceremony/suspension.toml ``[[substitute]]``)
        unless ``substitute`` is false."""
        out: list[Instrument] = []
        for tok in tokens:
            found = self._present([tok], cue_sides)
            if not found and substitute:
                row = self.rank.substitute(tok, self.insts[tok].kind if tok in self.insts else None)
                if row is not None:
                    found = self._present(row.use)
            out.extend(i for i in found if i not in out)
        order = list(self.insts)
        return sorted(out, key=lambda i: order.index(i.name))

    def note(self, spec: CueSpec, t: float, dur: float, inst: Instrument, pitch: Pitch | None,
             velocity: float, lyric: str | None = None, key: str = "melody", spoken: bool = False,
             f0_st: tuple[float, ...] | None = None) -> None:
        """Sound ``inst`` at ``t`` s for ``dur`` s. Unpitched bodies and ``spoken`` calls (a voice
        without a pitch: ``hz`` None, MIDI key :data:`SPOKEN_KEY` unless the body has a GM drum key);
        a spoken syllable carries its F0 contour ``f0_st`` (default: said alone,
        :func:`yuexuan.compiler.prosody.call`)."""
        if len(self.notes) >= MAX_NOTES:
            raise UserError(f"the compiled ceremony exceeds {MAX_NOTES} sounded events; shorten the cue "
                            "sheet (open-ended lengths, roster size)", file=self.sheet.file, line=spec.line)
        velocity = max(1, min(127, int(velocity) + self.voice_offsets.get(inst.name, 0)))
        if spoken or not inst.pitched:
            drum_key = inst.gm_drum_key if inst.gm_drum_key is not None else SPOKEN_KEY
            if spoken and f0_st is None and lyric and len(lyric) == 1 and not lyric.isascii():
                f0_st = prosody.call(lyric, dur)
            self.notes.append(Note(t, dur, inst.name, spec.id, drum_key, None, velocity, lyric=lyric,
                                   f0_st=f0_st if spoken else None))
            return
        if pitch is None:
            pitch = inst.pitch_set[0]
        elif not inst.can_sound(pitch):
            if inst.name in self.narrowed:
                return self.note(spec, t, dur, inst, nearest_in_set(pitch, inst.pitch_set), velocity, lyric,
                                 key)
            raise UserError(f"cue {spec.id!r}: {inst.name} cannot sound {pitch.name} (its pitch set: "
                            f"{' '.join(p.name for p in inst.pitch_set)}; see {inst.file})",
                            file=self.sheet.file, line=spec.line, key=key)
        sounding = pitch.transpose(inst.octave)
        hz, midi, cents, name = self.pitch_facts(sounding)
        if not 0 <= midi <= 127:
            raise UserError(f"cue {spec.id!r}: {inst.name} {sounding.name} = {hz:.1f} Hz is outside the MIDI "
                            "range; check huangzhong_hz", file=self.sheet.file, key="ceremony.huangzhong_hz")
        self.notes.append(Note(t, dur, inst.name, spec.id, midi, hz, velocity, name, cents, lyric))


def nearest_in_set(pitch: Pitch, pitch_set: tuple[Pitch, ...]) -> Pitch:
    """The 律 of ``pitch_set`` nearest to ``pitch`` in pitch class (ties: the lower): what a body
    whose set a variant narrowed (O11, O12; ceremony/variants.toml) sounds for a note outside it."""
    def distance(p: Pitch) -> tuple[int, int]:
        d = (p.lv - pitch.lv) % 12
        return min(d, 12 - d), p.lv + 12 * p.octave
    return min(pitch_set, key=distance)


def gong_voices(vdefs: dict[str, Any], chosen: dict[str, str], rank: str) -> dict[str, int]:
    """{instrument name: number of players} of the 工 at ``rank`` under O32 (variant gong_size)."""
    if "gong_size" not in vdefs:
        return {}
    return dict(variants_mod.effect(vdefs, chosen, "gong_size").get(rank, {}))


def voice_offsets(voices: dict[str, int], insts: dict[str, Instrument]) -> dict[str, int]:
    """Velocity offset of each voiced instrument: 8 steps per doubling of its players over the
    number its file gives (6 歌, 4 瑟); an assumption of ours, documented in ceremony/variants.toml."""
    return {name: round(8 * math.log2(n / insts[name].count)) for name, n in voices.items() if name in insts}


def rank_facts(inst: Instrument, voices: dict[str, int]) -> dict[str, Any]:
    """The timeline's facts of ``inst``, its ``count`` the rank's number of players (O32)."""
    facts = inst.facts()
    if inst.name in voices:
        facts["count"] = int(voices[inst.name])
    return facts

"""The compiler's collector: instruments available at a rank, sounded notes, 射节 beats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from yuexuan.errors import UserError
from yuexuan.rite import cuesheet
from yuexuan.rite.tuning import Pitch, hz_to_midi
from yuexuan.timeline import Note

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

VELOCITY = {"melody": 84, "phrase_accent": 12, "建鼓": 104, "鼙": 88, "鼗": 80, "鑮": 96}


class Placed(NamedTuple):
    """One cue's notes placed: what its :class:`~yuexuan.timeline.Cue` record needs."""

    end: float                # s
    phrases: list             # phrase start times, s
    beat_s: float             # the cue's metrical step, s (docs/timeline.md, "beat_s")
    reconstruction: bool = False


@dataclass
class Builder:
    """Mutable collector used while compiling one timeline."""

    sheet: cuesheet.CueSheet
    insts: dict
    sides: tuple
    bei_struck: bool
    notes: list = field(default_factory=list)
    beats: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    _pitch_facts: dict = field(default_factory=dict)   # sounding Pitch -> (hz, midi, cents, name)

    def pitch_facts(self, sounding: Pitch) -> tuple:
        """(Hz, MIDI key, cents, name) of a sounding pitch, computed once per pitch."""
        facts = self._pitch_facts.get(sounding)
        if facts is None:
            hz = sounding.hz(self.sheet.huangzhong_hz)
            midi, cents = hz_to_midi(hz)
            facts = self._pitch_facts[sounding] = (hz, midi, cents, sounding.name)
        return facts

    def available(self, inst) -> bool:
        if inst.xian in ("东", "西", "北", "南") and inst.xian not in self.sides:
            return False
        if inst.kind == "建鼓" and inst.xian == "北" and not self.bei_struck:
            return False
        return True

    def resolve(self, tokens, cue_sides=None) -> list:
        """Instrument names or kinds → available instruments (layout order, no repeats)."""
        out = []
        for tok in tokens:
            if tok in self.insts:
                cand = [self.insts[tok]]
            else:
                cand = [i for i in self.insts.values() if i.kind == tok and
                        (cue_sides is None or i.xian in cue_sides or i.xian not in ("东", "西", "北", "南"))]
            for i in cand:
                if self.available(i) and i not in out:
                    out.append(i)
        order = list(self.insts)
        return sorted(out, key=lambda i: order.index(i.name))

    def note(self, spec, t, dur, inst, pitch: Pitch | None, velocity, lyric=None, key="melody",
             spoken=False):
        """Sound ``inst`` at ``t`` s for ``dur`` s. Unpitched bodies and ``spoken`` calls (a voice
        without a pitch: ``hz`` None, MIDI key :data:`SPOKEN_KEY` unless the body has a GM drum key)."""
        if len(self.notes) >= MAX_NOTES:
            raise UserError(f"the compiled ceremony exceeds {MAX_NOTES} sounded events; shorten the cue "
                            "sheet (open-ended lengths, roster size)", file=self.sheet.file, line=spec.line)
        velocity = max(1, min(127, int(velocity)))
        if spoken or not inst.pitched:
            drum_key = inst.gm_drum_key if inst.gm_drum_key is not None else SPOKEN_KEY
            self.notes.append(Note(t, dur, inst.name, spec.id, drum_key, None, velocity, lyric=lyric))
            return
        if pitch is None:
            pitch = inst.pitch_set[0]
        elif not inst.can_sound(pitch):
            raise UserError(f"cue {spec.id!r}: {inst.name} cannot sound {pitch.name} (its pitch set: "
                            f"{' '.join(p.name for p in inst.pitch_set)}; see {inst.file})",
                            file=self.sheet.file, line=spec.line, key=key)
        sounding = pitch.transpose(inst.octave)
        hz, midi, cents, name = self.pitch_facts(sounding)
        if not 0 <= midi <= 127:
            raise UserError(f"cue {spec.id!r}: {inst.name} {sounding.name} = {hz:.1f} Hz is outside the MIDI "
                            "range; check huangzhong_hz", file=self.sheet.file, key="ceremony.huangzhong_hz")
        self.notes.append(Note(t, dur, inst.name, spec.id, midi, hz, velocity, name, cents, lyric))

"""The compiler: cue sheet → one :class:`~yuexuan.timeline.Timeline`.

Pure functions over the parsed data; :func:`compile_file` is the I/O edge that loads the rite's
data files. Every timing decision of the project is made here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from yuexuan.data import DataSource
from yuexuan.rite import cuesheet, instruments as instruments_mod, pieces as pieces_mod
from yuexuan.rite import suspension as suspension_mod, variants as variants_mod
from yuexuan.errors import UserError, unknown_cue
from yuexuan.timeline import Beat, Ceremony, Cue, Note, Timeline
from yuexuan.rite.tuning import Pitch, hz_to_midi, parse_pitch, wusheng

INTRO_STEP_S = 0.6        # spacing of the opening strokes (鼗, 朔鼙, 应鼙) of a music cue
INTRO_TAIL_S = 0.6        # from the last opening stroke to the first note
STROKE_S = 0.4            # MIDI length of a drum stroke
BO_STEPS = 2.0            # a 鑮 stroke lasts two note steps
CALL_DELAY_S = (1.5, 2.6)     # 获者: 举旌以宫, then 偃旌以商, after the arrow is loosed
CALL_LEN_S = (1.0, 0.8)
CALL_STEP_S = 0.5         # beat_s of a calls cue: the 去侯 calls start (0, 5 s) and end (3.5, 7.5 s) on it
MAX_NOTES = 5_000_000     # refuse to build more sounded events than this (memory guard)
MAX_TIMELINE_S = 24 * 3600.0   # a compiled selection may last at most a day

VELOCITY = {"melody": 84, "phrase_accent": 12, "建鼓": 104, "鼙": 88, "鼗": 80, "鑮": 96}


class _Placed(NamedTuple):
    """One cue's notes placed: what its :class:`~yuexuan.timeline.Cue` record needs."""

    end: float                # s
    phrases: list             # phrase start times, s
    beat_s: float             # the cue's metrical step, s (docs/timeline.md, "beat_s")
    reconstruction: bool = False


@dataclass
class _Builder:
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

    def note(self, spec, t, dur, inst, pitch: Pitch | None, velocity, lyric=None, key="melody"):
        if len(self.notes) >= MAX_NOTES:
            raise UserError(f"the compiled ceremony exceeds {MAX_NOTES} sounded events; shorten the cue "
                            "sheet (open-ended lengths, roster size)", file=self.sheet.file, line=spec.line)
        velocity = max(1, min(127, int(velocity)))
        if not inst.pitched:
            self.notes.append(Note(t, dur, inst.name, spec.id, inst.gm_drum_key, None, velocity))
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


def _cue_sides(spec, sheet, vdefs):
    if spec.xian_variant:
        key, who = spec.xian_variant
        return tuple(variants_mod.effect(vdefs, sheet.variants, key)[who])
    return spec.xian


def _step(b: _Builder, spec, pieces: dict, title: str) -> float:
    """Seconds per note of ``title`` in this cue: one syllable if it has words, else one note."""
    piece = pieces.get(title)
    if piece is None:
        origin = f" (from variant {spec.sanzhong})" if spec.sanzhong else ""
        raise UserError(f"cue {spec.id!r}: unknown piece {title!r}{origin}", file=b.sheet.file,
                        line=spec.line, key="sanzhong" if spec.sanzhong else "piece")
    if any(word is not None for _, word in piece.notes()):
        return spec.syllable_seconds or b.sheet.syllable_seconds
    return spec.note_seconds or b.sheet.note_seconds


def _music(b: _Builder, spec, t0: float, pieces: dict, vdefs: dict) -> _Placed:
    """A played or sung cue; its beat is one note step of its first piece (:func:`_step`)."""
    sheet = b.sheet
    sides = _cue_sides(spec, sheet, vdefs)
    melody = b.resolve(spec.melody, sides)
    marker_kinds = variants_mod.effect(vdefs, sheet.variants, "jie_marker")["kinds"]
    jie_tokens = [tok for tok in spec.jie if not (tok == "建鼓" and "建鼓" not in marker_kinds)]
    jie = b.resolve(jie_tokens, sides)
    accomp = []
    if spec.accompaniment:
        accomp = b.resolve(variants_mod.effect(vdefs, sheet.variants, spec.accompaniment)["instruments"])
    if not melody:
        b.warnings.append(f"cue {spec.id!r}: no melody instrument is hung for a {sheet.rank} "
                          f"({b.sides}); the cue is silent")
    t = t0
    for k, tok in enumerate(spec.intro):
        for inst in b.resolve([tok], sides):
            b.note(spec, t0 + k * INTRO_STEP_S, 0.8 if inst.kind == "鼗" else STROKE_S, inst, None,
                   VELOCITY.get(inst.kind, 90), key="intro")
    if spec.intro:
        t = t0 + (len(spec.intro) - 1) * INTRO_STEP_S + INTRO_TAIL_S
    if spec.sanzhong:
        titles = list(variants_mod.effect(vdefs, sheet.variants, spec.sanzhong)["pieces"])
        if spec.zhong and spec.zhong != len(titles):
            titles = (titles * spec.zhong)[:spec.zhong]
    elif spec.zhong:
        titles = [spec.piece] * spec.zhong
    else:
        titles = [spec.piece]
    steps = [_step(b, spec, pieces, title) for title in titles]
    beat_s = steps[0]
    if len(set(steps)) > 1:
        b.warnings.append(f"cue {spec.id!r}: its pieces move at different steps "
                          f"({', '.join(f'{s:g}' for s in dict.fromkeys(steps))} s); its beat_s is the "
                          f"first's, {beat_s:g} s")
    target = None
    if spec.open_ended:
        target = spec.default_seconds or sheet.open_ended_seconds
    phrases = []
    reconstruction = False
    run = 0
    while True:
        for title, step in zip(titles, steps):
            piece = pieces[title]
            reconstruction |= piece.reconstruction
            for i, (pitch, syl) in enumerate(piece.notes()):
                accent = i % piece.phrase_syllables == 0
                if accent:
                    if target is not None and t - t0 >= target:
                        return _Placed(t, phrases, beat_s, reconstruction)
                    phrases.append(t)
                    for inst in jie:
                        b.note(spec, t, step * BO_STEPS if inst.pitched else STROKE_S, inst, None,
                               VELOCITY.get(inst.kind, 90), key="jie")
                    for inst in accomp:
                        b.note(spec, t, step * 0.92 if inst.pitched else 0.8, inst,
                               pitch if inst.pitched else None, VELOCITY["melody"], key="accompaniment")
                vel = VELOCITY["melody"] + (VELOCITY["phrase_accent"] if accent else 0)
                for inst in melody:
                    b.note(spec, t, step * 0.92, inst, pitch, vel,
                           lyric=syl if inst.family == "voice" else None)
                t += step
        run += 1
        if target is None:
            return _Placed(t, phrases, beat_s, reconstruction)
        if run > 100_000:
            raise UserError(f"cue {spec.id!r}: open-ended length never reached", file=sheet.file,
                            line=spec.line)


def _huo_calls(b: _Builder, spec, t_arrow: float):
    """The 获者's two calls after a hit: 举旌以宫 (loud), 偃旌以商 (soft)."""
    caller = b.insts.get("获者")
    if caller is None or not b.available(caller):
        return
    ws = wusheng(b.sheet.gong.lv)
    for (delay, length), (sheng, vel) in zip(zip(CALL_DELAY_S, CALL_LEN_S), (("宫", 100), ("商", 60))):
        b.note(spec, t_arrow + delay, length, caller, parse_pitch(ws[sheng]), vel, lyric="获", key="calls")


def _calls(b: _Builder, spec, t0: float, vdefs: dict) -> _Placed:
    """The 负侯者's calls at their offsets; the beat is :data:`CALL_STEP_S`."""
    calls = list(spec.calls)
    gongshang = variants_mod.effect(vdefs, b.sheet.variants, "fuhou_round3")["gongshang"]
    if calls and all(c.plain for c in calls) and gongshang:
        c = calls[0]
        calls = [cuesheet.Call(c.who, "宫", c.word, 0.0, 3.5, 100), cuesheet.Call(c.who, "商", c.word, 5.0, 2.5, 90)]
    ws = wusheng(b.sheet.gong.lv)
    end = t0
    for c in calls:
        inst = b.insts[c.who]
        b.note(spec, t0 + c.at, c.seconds, inst, parse_pitch(ws[c.sheng]), c.velocity, lyric=c.word or None,
               key="calls")
        end = max(end, t0 + c.at + c.seconds)
    return _Placed(end, [t0], CALL_STEP_S)


def _shoot(b: _Builder, spec, t0: float) -> _Placed:
    """An unaccompanied round: the 获者's calls after each hit; the beat is the arrow step."""
    pairs = b.sheet.pair_selection(spec.pairs)
    t, phrases = t0, []
    rnd = spec.round or 1
    for pair in pairs:
        phrases.append(t)
        for k in range(8):
            ta = t + spec.pair_seconds + k * spec.arrow_seconds
            if pair.hit(rnd, k):
                _huo_calls(b, spec, ta)
        t += spec.pair_seconds + 8 * spec.arrow_seconds
    return _Placed(t, phrases, spec.arrow_seconds)


def _shejie(b: _Builder, spec, t0: float, pieces: dict, ranks: dict, vdefs: dict) -> _Placed:
    """The 射节 of round 3; the beat is one syllable of the sung line, jie_seconds / syllables_per_jie."""
    sheet, sj = b.sheet, b.sheet.shejie
    n_jie = ranks[sheet.rank].shejie_jie
    shoot_jie = variants_mod.effect(vdefs, sheet.variants, "shejie")["shoot_jie"]
    heard = sj.heard_jie if sj.heard_jie is not None else n_jie - shoot_jie
    # a pair's turn is its heard 节 then its shooting 节, within the rank's N 节; heard_jie may make
    # the turn shorter than N (fewer heard 节), never longer
    if heard < 0 or heard + shoot_jie > n_jie:
        raise UserError(f"射节: a {sheet.rank}'s {n_jie} 节 cannot hold {max(heard, 0)} heard and "
                        f"{shoot_jie} shooting 节", file=sheet.file,
                        key="shejie.heard_jie" if sj.heard_jie is not None else "variants.shejie")
    per_pair = heard + shoot_jie
    piece = pieces[spec.piece]
    tune = piece.notes()
    sides = _cue_sides(spec, sheet, vdefs)
    melody = b.resolve(spec.melody, sides)
    shuo, ying = b.resolve(["朔鼙"]), b.resolve(["应鼙"])
    strikers = b.resolve(["建鼓", "鑮"])
    if not any(i.kind == "建鼓" for i in strikers):
        raise UserError(f"cue {spec.id!r}: no 建鼓 is struck, so the 射节 has no beat (不鼓不释); check "
                        "the rank and the jiangu_bei variant", file=sheet.file, line=spec.line)
    J, spj = sj.jie_seconds, sj.syllables_per_jie
    pairs = sheet.pair_selection(spec.pairs)
    rnd = spec.round or 3
    phrases, g, syl = [], 0, 0
    for pair in pairs:
        for j in range(1, per_pair + 1):
            jt = t0 + g * J
            phrases.append(jt)
            for inst in shuo:
                b.note(spec, jt + sj.pi_offsets[0], STROKE_S, inst, None, VELOCITY["鼙"], key="shejie")
            for inst in ying:
                b.note(spec, jt + sj.pi_offsets[1], STROKE_S, inst, None, VELOCITY["鼙"] - 6, key="shejie")
            shooting = j > heard
            for k, off in enumerate(sj.gu_offsets):
                ts = jt + off
                for inst in strikers:
                    vel = VELOCITY.get(inst.kind, 96) + (8 if shooting else 0)
                    b.note(spec, ts, STROKE_S if not inst.pitched else J / 2, inst, None, vel, key="shejie")
                if shooting:
                    arrow_index = 2 * (j - heard - 1) + k          # 0..7 in shooting order
                    role, archer = pair.shooter(arrow_index)
                    b.beats.append(Beat(ts, spec.id, pair.id, j, True, role, archer.name, j - heard))
                    if pair.hit(rnd, arrow_index):
                        _huo_calls(b, spec, ts)
                else:
                    b.beats.append(Beat(ts, spec.id, pair.id, j, False, None, None, None))
            for s in range(spj):
                pitch, word = tune[syl % len(tune)]
                syl += 1
                for inst in melody:
                    b.note(spec, jt + s * J / spj, J / spj * 0.92, inst, pitch,
                           VELOCITY["melody"] + (VELOCITY["phrase_accent"] if s == 0 else 0),
                           lyric=word if inst.family == "voice" else None)
            g += 1
    return _Placed(t0 + g * J, phrases, J / spj, piece.reconstruction)


def compile_sheet(sheet: cuesheet.CueSheet, pieces: dict, insts: dict, ranks: dict, vdefs: dict,
                  select: list | None = None) -> tuple:
    """Compile a parsed cue sheet. Returns (Timeline, warnings).

    ``select``: cue ids to compile, in sheet order; time 0 is then the first selected cue's start
    and the selected cues follow one another with the sheet's gap.
    """
    specs = list(sheet.cues)
    if select:
        known = [c.id for c in specs]
        for cid in select:
            if cid not in known:
                raise unknown_cue(cid, known, key="--cues", file=sheet.file)
        specs = [c for c in specs if c.id in set(select)]
    rank = ranks[sheet.rank]
    b = _Builder(sheet, insts, rank.sides,
                 variants_mod.effect(vdefs, sheet.variants, "jiangu_bei")["struck"])
    cues, t = [], 0.0
    for n, spec in enumerate(specs):
        if n:
            t += sheet.gap_seconds
        first_note = len(b.notes)
        if spec.kind == "music":
            placed = _music(b, spec, t, pieces, vdefs)
        elif spec.kind == "calls":
            placed = _calls(b, spec, t, vdefs)
        elif spec.kind == "shoot":
            placed = _shoot(b, spec, t)
        else:
            placed = _shejie(b, spec, t, pieces, ranks, vdefs)
        names = {x.instrument for x in b.notes[first_note:]}
        used = tuple(i for i in insts if i in names)
        recon = spec.reconstruction if spec.reconstruction is not None else placed.reconstruction
        cues.append(Cue(spec.id, spec.piece, spec.action, t, placed.end, used, recon, spec.source,
                        spec.kind, spec.starts_when, spec.ends_when, spec.open_ended, spec.performers,
                        spec.gloss, tuple(placed.phrases), placed.beat_s))
        t = placed.end
        if t > MAX_TIMELINE_S:
            raise UserError(f"the compiled ceremony runs past {MAX_TIMELINE_S / 3600:g} hours at cue "
                            f"{spec.id!r}; shorten open-ended lengths, gaps or the roster",
                            file=sheet.file, line=spec.line)
    order = {name: k for k, name in enumerate(insts)}
    notes = tuple(sorted(b.notes, key=lambda x: (x.time, order[x.instrument], x.midi)))
    beats = tuple(sorted(b.beats, key=lambda x: x.time))
    ceremony = Ceremony(sheet.name, sheet.rank, rank.suspension, sheet.huangzhong_hz, dict(sheet.variants))
    facts = {name: i.facts() for name, i in insts.items()}
    return Timeline(ceremony, tuple(cues), notes, beats, facts), b.warnings


def compile_path(path: str | Path, cues: list | None = None, source: DataSource = DataSource()) -> tuple:
    """Load the rite's data from ``source`` (default: the packaged data) and compile the cue sheet
    at ``path``. Returns (Timeline, warnings)."""
    insts = instruments_mod.load_all(source)
    pieces = pieces_mod.load_all(source)
    vdefs = variants_mod.load(source=source)
    sheet = cuesheet.parse(path, pieces, insts, vdefs)
    return compile_sheet(sheet, pieces, insts, suspension_mod.load(source=source), vdefs, cues)


def compile_file(path: str | Path, cues: list | None = None, source: DataSource = DataSource()) -> Timeline:
    """Compile the cue sheet at ``path`` (optionally only the cue ids ``cues``) to a Timeline."""
    return compile_path(path, cues, source)[0]

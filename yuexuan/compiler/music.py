"""Played and sung cues: 肆夏, 鹿鸣三终, 管新宫, 无算乐, 陔, 骜."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from yuexuan.compiler.builder import BO_STEPS, INTRO_STEP_S, INTRO_TAIL_S, STROKE_S, VELOCITY, Builder, Placed
from yuexuan.errors import UserError
from yuexuan.rite import variants as variants_mod
from yuexuan.rite.cuesheet_records import CueSheet, CueSpec
from yuexuan.rite.pieces import Piece


def cue_sides(spec: CueSpec, sheet: CueSheet, vdefs: dict[str, Any]) -> tuple[str, ...] | None:
    if spec.xian_variant:
        key, who = spec.xian_variant
        return tuple(variants_mod.effect(vdefs, sheet.variants, key)[who])
    return spec.xian


def note_step(b: Builder, spec: CueSpec, pieces: Mapping[str, Piece], title: str) -> float:
    """Seconds per note of ``title`` in this cue: one syllable if it has words, else one note."""
    piece = pieces.get(title)
    if piece is None:
        origin = f" (from variant {spec.sanzhong})" if spec.sanzhong else ""
        raise UserError(f"cue {spec.id!r}: unknown piece {title!r}{origin}", file=b.sheet.file,
                        line=spec.line, key="sanzhong" if spec.sanzhong else "piece")
    if any(word is not None for _, word in piece.notes()):
        return spec.syllable_seconds or b.sheet.syllable_seconds
    return spec.note_seconds or b.sheet.note_seconds


def music_cue(b: Builder, spec: CueSpec, t0: float, pieces: Mapping[str, Piece],
              vdefs: dict[str, Any]) -> Placed:
    """A played or sung cue; its beat is one note step of its first piece (:func:`note_step`)."""
    sheet = b.sheet
    sides = cue_sides(spec, sheet, vdefs)
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
    titles: list[str]
    if spec.pieces:
        titles = list(spec.pieces)
    elif spec.sanzhong:
        titles = list(variants_mod.effect(vdefs, sheet.variants, spec.sanzhong)["pieces"])
        if spec.zhong and spec.zhong != len(titles):
            titles = (titles * spec.zhong)[:spec.zhong]
    else:
        titles = [spec.piece or ""] * (spec.zhong or 1)
    steps = [note_step(b, spec, pieces, title) for title in titles]
    beat_s = steps[0]
    if len(set(steps)) > 1:
        b.warnings.append(f"cue {spec.id!r}: its pieces move at different steps "
                          f"({', '.join(f'{s:g}' for s in dict.fromkeys(steps))} s); its beat_s is the "
                          f"first's, {beat_s:g} s")
    target = None
    if spec.open_ended:
        target = spec.default_seconds or sheet.open_ended_seconds
    phrases: list[float] = []
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
                        return Placed(t, phrases, beat_s, reconstruction)
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
            return Placed(t, phrases, beat_s, reconstruction)
        if run > 100_000:
            raise UserError(f"cue {spec.id!r}: open-ended length never reached", file=sheet.file,
                            line=spec.line)

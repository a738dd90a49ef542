"""The rounds of shooting: unaccompanied rounds and the 射节 of round 3 (its drum pattern: O33)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from yuexuan.compiler.builder import STROKE_S, VELOCITY, Builder, Placed
from yuexuan.compiler.calls import arrow_calls, sound_calls
from yuexuan.compiler.music import cue_sides
from yuexuan.compiler.shejie_pattern import jie_plan
from yuexuan.errors import UserError
from yuexuan.rite import variants as variants_mod
from yuexuan.rite.cuesheet_records import CAPTION_KEYS, CueSpec
from yuexuan.rite.pieces import Piece
from yuexuan.rite.suspension import Rank
from yuexuan.timeline import Beat
from yuexuan.timeline_rite import Rite as RiteRecord


def shoot_cue(b: Builder, spec: CueSpec, t0: float) -> Placed:
    """An unaccompanied round: the calls after each arrow (获 on a hit, the 大射正's on a miss of
    the 公); the beat is the arrow step."""
    pairs = b.sheet.pair_selection(spec.pairs)
    t, phrases = t0, []
    rnd = spec.round or 1
    for pair in pairs:
        phrases.append(t)
        for k in range(8):
            ta = t + spec.pair_seconds + k * spec.arrow_seconds
            if b.strings_decide(rnd):                            # else the shot log's calls
                arrow_calls(b, spec, pair, rnd, k, ta)
        t += spec.pair_seconds + 8 * spec.arrow_seconds
    return Placed(t, phrases, spec.arrow_seconds)


def shejie_cue(b: Builder, spec: CueSpec, t0: float, pieces: Mapping[str, Piece],
               vdefs: dict[str, Any]) -> Placed:
    """The 射节 of round 3: each 节 the strokes of the chosen pattern (O33, compiler/shejie_pattern.py);
    the beat is one syllable of the sung line, the 节's length / syllables_per_jie. The cue's
    ``calls`` (the re-posting of the 负侯) sound as the 公's pair's turn begins, unless that pair is
    the cue's first (O17 公乐作: a calls cue comes before it)."""
    sheet, sj = b.sheet, b.sheet.shejie
    n_jie = b.rank.shejie_jie
    shoot_jie = variants_mod.effect(vdefs, sheet.variants, "shejie")["shoot_jie"]
    heard = sj.heard_jie if sj.heard_jie is not None else n_jie - shoot_jie
    # a pair's turn is its heard 节 then its shooting 节, within the rank's N 节; heard_jie may make
    # the turn shorter than N (fewer heard 节), never longer
    if heard < 0 or heard + shoot_jie > n_jie:
        raise UserError(f"射节: a {sheet.rank}'s {n_jie} 节 cannot hold {max(heard, 0)} heard and "
                        f"{shoot_jie} shooting 节", file=sheet.file,
                        key="shejie.heard_jie" if sj.heard_jie is not None else "variants.shejie")
    per_pair = heard + shoot_jie
    title, rank_source = shejie_piece(b, spec, b.rank, pieces)
    piece = pieces[title]
    tune = piece.notes()
    sides = cue_sides(spec, sheet, vdefs)
    melody = b.resolve(spec.melody, sides)
    if not melody:
        b.warnings.append(f"cue {spec.id!r}: no melody instrument is hung for a {sheet.rank} "
                          f"({b.sides}); the cue is silent")
    shuo, ying = b.resolve(["朔鼙"]), b.resolve(["应鼙"])
    # O33: the grid (no score) or a 投壶 score; data folders without the variant keep the grid
    score = variants_mod.effect(vdefs, sheet.variants, "shejie_pattern").get("score", "") \
        if "shejie_pattern" in vdefs else ""
    plan = jie_plan(score, sj)
    # the grid strikes the 建鼓 with the 鑮 (郑 「奏乐以鼓鑮为节」); a score's □ is the 建鼓 alone
    # (注 「方者击鼓」); a score's ○ falls to the other 鼙 where a rank hangs only one
    strikers = b.resolve(["建鼓", "鑮"] if not score else ["建鼓"])
    drums = {"朔鼙": shuo if shuo or not score else ying, "应鼙": ying if ying or not score else shuo,
             "建鼓": strikers}
    if not any(i.kind == "建鼓" for i in strikers):
        raise UserError(f"cue {spec.id!r}: no 建鼓 is struck, so the 射节 has no beat (不鼓不释); check "
                        "the rank and the jiangu_bei variant", file=sheet.file, line=spec.line)
    J, spj = plan.jie_seconds, sj.syllables_per_jie
    stroke_s = STROKE_S if not score else min(STROKE_S, 0.9 * sj.stroke_seconds)   # ends before the next
    pairs = sheet.pair_selection(spec.pairs)
    rnd = spec.round or 3
    phrases, g, syl = [], 0, 0
    for pair in pairs:
        if pair.lower.host and g:
            # the 负侯 posted again for the host while the music goes on (O17 连奏; 「其他如初仪」 [001]);
            # under 公乐作 the host's pair begins a 射节 cue of its own, after a calls cue
            sound_calls(b, spec, t0 + g * J, vdefs)
        for j in range(1, per_pair + 1):
            jt = t0 + g * J
            phrases.append(jt)
            shooting = j > heard
            for stroke in plan.strokes:
                ts = jt + stroke.offset_s
                if stroke.drum != "建鼓":
                    vel = VELOCITY["鼙"] - (6 if stroke.drum == "应鼙" else 0)
                    for inst in drums[stroke.drum]:
                        b.note(spec, ts, stroke_s, inst, None, vel, key="shejie")
                    continue
                for inst in strikers:
                    vel = VELOCITY.get(inst.kind, 96) + (8 if shooting else 0)
                    b.note(spec, ts, stroke_s if not inst.pitched else J / 2, inst, None, vel, key="shejie")
                if shooting and stroke.release is not None:
                    arrow_index = 2 * (j - heard - 1) + stroke.release          # 0..7 in shooting order
                    role, archer = pair.shooter(arrow_index)
                    b.beats.append(Beat(ts, spec.id, pair.id, j, True, role, archer.name, j - heard,
                                        archer.rank))
                    if b.strings_decide(rnd):                                  # else the log's
                        arrow_calls(b, spec, pair, rnd, arrow_index, ts)
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
    return Placed(t0 + g * J, phrases, J / spj, piece.reconstruction, title, rank_source)


def as_played(spec: CueSpec, rank: Rank) -> tuple[CueSpec, str | None]:
    """A 射节 cue as it is compiled at ``rank``: with the id and caption its ``by_piece`` gives the
    piece it plays (the cue's own piece, else the rank's), and the cue sheet's id as an alias
    (``--cues lishou`` still selects a 天子's zouyu); other cues unchanged, alias None."""
    if spec.kind != "shejie" or not spec.by_piece:
        return spec, None
    names = dict(spec.by_piece).get(spec.piece or rank.shejie_piece)
    if names is None:
        return spec, None
    fields = {k: v for k in CAPTION_KEYS
              if (v := getattr(names, k)) is not None}
    return replace(spec, id=names.id, **fields), (spec.id if names.id != spec.id else None)


def shejie_piece(b: Builder, spec: CueSpec, rank: Rank, pieces: Mapping[str, Piece]) -> tuple[str, str]:
    """(title, source) of the 射节 piece: the rank's (礼记·射义, ceremony/suspension.toml) when the cue
    names none; the cue's own when it names one (a scholar's choice), with a warning naming the
    rank's own when they differ."""
    if spec.piece is None:
        if rank.shejie_piece not in pieces:
            raise UserError(f"cue {spec.id!r}: the {rank.rank}'s 射节 piece {rank.shejie_piece!r} "
                            "(ceremony/suspension.toml) is not among the pieces", file=b.sheet.file,
                            line=spec.line, key="ceremony.rank")
        return rank.shejie_piece, rank.shejie_source
    if spec.piece != rank.shejie_piece:
        b.warnings.append(f"cue {spec.id!r}: a {rank.rank} shoots to {rank.shejie_piece} "
                          f"({rank.shejie_source}); this sheet names {spec.piece}, which is played")
    return spec.piece, ""


def target_flights(rite: RiteRecord, arrow_speed_m_s: float) -> dict[str, dict[str, float]]:
    """侯 → the timeline's ``targets`` entry: its 侯道 in metres (the rite's ``distance_bu`` 步 ×
    the courtyard's ``bu_m``), the arrow's mean speed (the cue sheet's ``[hits_midi]``
    ``arrow_speed_m_s``, INFERENCE) and the flight, seconds."""
    return {h.name: {"distance_m": h.distance_m, "arrow_speed_m_s": arrow_speed_m_s,
                     "flight_s": round(h.distance_m / arrow_speed_m_s, 6)} for h in rite.hou}

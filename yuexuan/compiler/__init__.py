"""The compiler: cue sheet → one :class:`~yuexuan.timeline.Timeline`.

Pure functions over the parsed data; :func:`compile_file` is the I/O edge that loads the rite's
data files. Every timing decision of the project is made here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from yuexuan.compiler import roster
from yuexuan.compiler.builder import MAX_TIMELINE_S, Builder, gong_voices, rank_facts, voice_offsets
from yuexuan.compiler.calls import calls_cue
from yuexuan.compiler.formulas import Tally, at_rank, shejie_title, speech_cue
from yuexuan.compiler.logged import LoggedCalls, cue_round
from yuexuan.compiler.music import music_cue
from yuexuan.compiler.shooting import as_played, shejie_cue, shoot_cue, target_flights
from yuexuan.data import DataSource
from yuexuan.errors import UserError, unknown_cue
from yuexuan.rite import courtyard, cuesheet, tomlfile
from yuexuan.rite import instruments as instruments_mod
from yuexuan.rite import pieces as pieces_mod
from yuexuan.rite import ranks as ranks_mod
from yuexuan.rite import suspension as suspension_mod
from yuexuan.rite import variants as variants_mod
from yuexuan.rite.cuesheet_hits import DEFAULT_ARROW_SPEED_M_S
from yuexuan.rite.cuesheet_records import SHOOTING_KINDS
from yuexuan.rite.instruments import Instrument
from yuexuan.rite.pieces import Piece
from yuexuan.rite.suspension import Rank
from yuexuan.scoring import shots as shots_mod
from yuexuan.scoring.shots import Shots
from yuexuan.timeline import Ceremony, Cue, Timeline
from yuexuan.timeline import select as cut

__all__ = ["compile_sheet", "compile_path", "compile_file"]


class PiecesLookedUp(Mapping[str, Piece]):
    """The pieces by title, noting each title a cue's placer reads (the pieces it sounds), so that
    the cue's ``later_source`` names their later sources without each placer returning them."""

    def __init__(self, pieces: dict[str, Piece]) -> None:
        self._pieces = pieces
        self.titles: list[str] = []

    def __getitem__(self, title: str) -> Piece:
        piece = self._pieces[title]
        if title not in self.titles:
            self.titles.append(title)
        return piece

    def __contains__(self, title: object) -> bool:      # a test of presence sounds nothing
        return title in self._pieces

    def __iter__(self) -> Iterator[str]:
        return iter(self._pieces)

    def __len__(self) -> int:
        return len(self._pieces)

    def later_source(self) -> str:
        """The distinct later sources of the pieces read, in order, joined by '; ' ('' for none)."""
        found = (self._pieces[t].later_source for t in self.titles)
        return "; ".join(dict.fromkeys(s for s in found if s))


def compile_sheet(sheet: cuesheet.CueSheet, pieces: dict[str, Piece], insts: dict[str, Instrument],
                  ranks: dict[str, Rank], vdefs: dict[str, Any],
                  select: list[str] | None = None, shots: Shots | None = None, compact: bool = False,
                  yard: courtyard.Courtyard | None = None,
                  rite: ranks_mod.Rite | None = None) -> tuple[Timeline, list[str]]:
    """Compile a parsed cue sheet. Returns (Timeline, warnings).

    The whole ceremony is compiled, its cues one after another with the sheet's gap. ``select``:
    cue ids to keep, cut from it by :func:`yuexuan.timeline.select` (the one rule of ``--cues``,
    for saved timelines too): time 0 is the first selected cue's start, the spaces between them
    the ceremony's unless ``compact`` closes them to the gap. ``shots``: a shot log
    (:class:`yuexuan.scoring.shots.Shots`, times in seconds of the whole ceremony) whose arrows
    make the calls of the rounds it covers (compiler/logged.py). ``yard``: the courtyard
    (:func:`yuexuan.rite.courtyard.load`; default: the packaged one) whose 侯道 place the 侯;
    ``rite``: the rite file (:func:`yuexuan.rite.ranks.load`; default: the packaged one the sheet
    names). The warnings are the whole ceremony's.
    """
    rite = rite or ranks_mod.load(sheet.rite)
    rr = ranks_mod.rank_rite(rite, sheet.rank, vdefs, sheet.variants)
    if rr.refused:
        raise UserError(rr.refused, file=sheet.file, key="ceremony.rank")
    yard = yard or courtyard.load(houdao=sheet.variants.get("houdao"))
    # the rank's roster (a pair's ranks, the host, the variants' roster ranks, the first 耦's count)
    pairs, warnings = roster.rank_pairs(sheet, rite, rr, vdefs)
    sheet = replace(sheet, pairs=pairs)
    # the variants' generic effects (yuexuan/rite/variants.py): instrument facts, cues set or left out
    insts, narrowed = variants_mod.apply_to_instruments(vdefs, sheet.variants, insts)
    places = roster.hou_places(rite, rr, yard)
    insts = roster.with_callers(insts, rite, rr, places)
    record = roster.record(rite, rr, pairs, places, yard.bu_m, vdefs, sheet.variants)
    if shots is not None:
        shots = shots_mod.for_rite(shots, record.ranks, record.hou_names)
    unknown = sheet.hits_midi.for_hou(record.hou_names)[1] if sheet.hits_midi is not None else []
    if unknown:
        raise UserError(unknown[0], file=sheet.file, key="hits_midi.notes",
                        line=tomlfile.line_of(sheet.text, "notes"))
    if record.inference:
        warnings.append(f"the {rite.name} of a {rr.rank} is INFERENCE: {record.inference}")
    dropped = variants_mod.dropped_cues(vdefs, sheet.variants)
    # O50: the 诗谱's notes as the chosen witness reads them (the pieces' [[reading]] rows)
    reading = variants_mod.effect(vdefs, sheet.variants, "shipu_reading")["reading"]
    pieces = pieces_mod.read_by(pieces, reading)
    rank = ranks[rr.suspension]
    if rr.shejie_piece or rr.shejie_jie:             # the rank's own 射节 (a setting of the rite)
        rank = replace(rank, shejie_piece=rr.shejie_piece or rank.shejie_piece,
                       shejie_jie=rr.shejie_jie or rank.shejie_jie)
    # a 射节 cue takes the id and caption of the piece it plays; the sheet's id is its alias
    played = [as_played(variants_mod.apply_to_cue(vdefs, sheet.variants, c), rank)
              for c in sheet.cues if c.id not in dropped]
    # the rank's own: the music it lacks left out, its formulas said, a cue on the log's condition
    played = [(at, alias) for spec, alias in played
              if (at := at_rank(spec, rr, sheet.rank, shejie_title(sheet.cues, rank), shots)) is not None]
    specs = [spec for spec, _ in played]
    sheet_ids = [alias or spec.id for spec, alias in played]
    known = [c.id for c in specs] + [a for _, a in played if a]
    for cid in select or ():               # before compiling: the cue sheet's refusal
        if cid not in known:
            raise unknown_cue(cid, known, key="--cues", file=sheet.file)
    voices = gong_voices(vdefs, sheet.variants, sheet.rank)
    b = Builder(sheet, insts, rank, variants_mod.effect(vdefs, sheet.variants, "jiangu_bei")["struck"],
                voice_offsets(voices, insts), rite=record)
    b.warnings.extend(warnings)
    log = LoggedCalls(shots, record) if shots is not None else None
    if log is not None:
        b.logged_rounds = log.rounds
    b.narrowed = narrowed
    tally = Tally(sheet, specs, record, shots)
    cues, t = [], 0.0
    places_of = instruments_mod.cue_places(insts, [c.id for c in sheet.cues], sheet.variants, vdefs)
    for n, (spec, alias) in enumerate(played):
        if n:
            t += sheet.gap_seconds
        first_note = len(b.notes)
        sounded = PiecesLookedUp(pieces)
        if spec.kind == "music":
            placed = music_cue(b, spec, t, sounded, vdefs)
        elif spec.kind == "calls":
            placed = calls_cue(b, spec, t, vdefs)
        elif spec.kind == "shoot":
            placed = shoot_cue(b, spec, t)
        elif spec.kind == "speech":
            placed = speech_cue(b, spec, t, tally)
        else:
            placed = shejie_cue(b, spec, t, sounded, vdefs)
        if log is not None and spec.kind in SHOOTING_KINDS:
            log.sound(b, spec, t, placed.end)
        names = {x.instrument for x in b.notes[first_note:]}
        used = tuple(i for i in insts if i in names)
        recon = spec.reconstruction if spec.reconstruction is not None else placed.reconstruction
        source = f"{spec.source}; {placed.source}" if placed.source else spec.source
        cues.append(Cue(spec.id, placed.piece or spec.piece or "", spec.action, t, placed.end, used, recon,
                        source,
                        spec.kind, spec.starts_when, spec.ends_when, spec.open_ended, spec.performers,
                        spec.gloss, tuple(placed.phrases), placed.beat_s,
                        starts_when_en=spec.starts_when_en, ends_when_en=spec.ends_when_en,
                        later_source=sounded.later_source(), places=places_of[sheet_ids[n]],
                        round=cue_round(spec), aliases=(alias,) if alias else ()))
        t = placed.end
        if t > MAX_TIMELINE_S:
            raise UserError(f"the compiled ceremony runs past {MAX_TIMELINE_S / 3600:g} hours at cue "
                            f"{spec.id!r}; shorten open-ended lengths, gaps or the roster",
                            file=sheet.file, line=spec.line)
    if log is not None:            # a logged hit before its round's 射节 (or between its cues): called
        cues = log.sound_between(b, list(zip(specs, cues)))
        b.warnings.extend(log.warnings())
    order = {name: k for k, name in enumerate(insts)}
    notes = tuple(sorted(b.notes, key=lambda x: (x.time, order[x.instrument], x.midi)))
    beats = tuple(sorted(b.beats, key=lambda x: x.time))
    ceremony = Ceremony(sheet.name, sheet.rank, rank.suspension, sheet.huangzhong_hz, dict(sheet.variants),
                        sheet.gap_seconds, sheet.mix)
    # a body not hung that no note of the ceremony sounds is not there (the 乡射's 笙 at a 大射)
    sounding = {x.instrument for x in notes}
    facts = {name: rank_facts(i, voices) for name, i in insts.items()
             if b.present(i) and (name in rank.instruments or name in sounding)}
    for name, rows in instruments_mod.place_summary({c.id: c.places for c in cues}).items():
        if name in facts:
            facts[name]["places"] = rows      # the drawing's key to where they go (docs/timeline.md)
    speed = sheet.hits_midi.arrow_speed_m_s if sheet.hits_midi is not None else DEFAULT_ARROW_SPEED_M_S
    whole = Timeline(ceremony, tuple(cues), notes, beats, facts, target_flights(record, speed), rite=record)
    return cut(whole, select, file=sheet.file, compact=compact), b.warnings


def compile_path(path: str | Path, cues: list[str] | None = None, source: DataSource = DataSource(),
                 shots: Shots | None = None, compact: bool = False) -> tuple[Timeline, list[str]]:
    """Load the rite's data from ``source`` (default: the packaged data) and compile the cue sheet
    at ``path`` (with the calls of the shot log ``shots`` when given; only the cues ``cues``, cut
    from the whole as :func:`compile_sheet` says). Returns (Timeline, warnings)."""
    insts = instruments_mod.load_all(source)
    pieces = pieces_mod.load_all(source)
    vdefs = variants_mod.load(source=source)
    sheet = cuesheet.parse(path, pieces, insts, vdefs, lambda name: ranks_mod.load(name, source))
    rite = ranks_mod.load(sheet.rite, source)
    yard = courtyard.load(source.path("ceremony", rite.courtyard), houdao=sheet.variants.get("houdao"))
    return compile_sheet(sheet, pieces, insts, suspension_mod.load(source=source), vdefs, cues, shots,
                         compact, yard, rite)


def compile_file(path: str | Path, cues: list[str] | None = None, source: DataSource = DataSource(),
                 compact: bool = False) -> Timeline:
    """Compile the cue sheet at ``path`` (optionally only the cue ids ``cues``) to a Timeline."""
    return compile_path(path, cues, source, compact=compact)[0]

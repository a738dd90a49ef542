"""The Timeline: the single source of truth for timing, read by every output.

All times are seconds from the start of the timeline: the whole compiled ceremony, or a
``--cues`` selection cut from it (:func:`select`), whose :class:`Selection` says where it sits in
the ceremony (:meth:`Timeline.ceremony_s`). The JSON form
(:func:`to_dict` / :func:`from_dict`) is a documented, stable contract: the JSON Schema
``yuexuan/timeline.schema.json``, described in ``docs/timeline.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from yuexuan import timeline_checks, timeline_rite
from yuexuan.errors import unknown_cue
from yuexuan.timeline_rite import Rite
from yuexuan.timeline_schema import SCHEMA_VERSION, validate

_R = TypeVar("_R")           # a record class of the timeline (:func:`_record`)


@dataclass(frozen=True)
class Ceremony:
    """What was compiled: the rite, the rank, its suspension and tuning."""

    name: str
    rank: str                 # a rank of the rite (天子 | 诸侯 | 卿大夫 | 士 in the 大射仪)
    suspension: str           # 宫县 | 轩县 | 判县 | 特县
    huangzhong_hz: float      # frequency of 黄钟 (合), Hz
    variants: dict[str, str] = field(default_factory=dict)   # variant key -> chosen commentator
    # the cue sheet's [ceremony] gap_seconds: the silence between consecutive cues, s (the space
    # ``--compact`` closes a selection's spaces to); 5.0 is the cue sheet's default
    gap_s: float = 5.0
    # the cue sheet's [ceremony] mix: the audio's mix (seat | guide), None where it names none
    # (render's --mix, then the command's default, decide; docs/render.md)
    mix: str | None = None


@dataclass(frozen=True)
class Cue:
    """One cue of the music programme, placed on the timeline."""

    id: str
    piece: str
    action: str               # 奏 | 歌 | 管 | 射 | 诺 …
    start: float              # s
    end: float                # s
    instruments: tuple[str, ...]  # instrument names, as in notes
    reconstruction: bool      # True when any music of this cue is a modern reconstruction
    source: str               # the quoted sentence of the text behind the cue
    kind: str = "music"       # music | shejie (射节 drum grid) | shoot (unaccompanied round)
    starts_when: str = ""     # the ritual action that starts it (quoted)
    ends_when: str = ""       # the ritual action that ends it (quoted)
    open_ended: bool = False  # ends on a ritual action, not after a count of 终
    performers: str = ""
    gloss: str = ""           # English gloss of the source
    phrases: tuple[float, ...] = ()  # start times (s) of its phrases; a soft stop ends at the next one
    # metrical step of the cue's own music, s: one quarter note of the MIDI tempo map, the MusicXML
    # metronome and the live MIDI clock (docs/timeline.md, "beat_s"; required in the JSON)
    beat_s: float = 1.0
    # the later source of a melody that is not a Zhou tune (e.g. the Song 风雅十二诗谱); "" for none
    later_source: str = ""
    # where performers who move are during this cue: instrument -> {where, position_m [x, y, z] m,
    # source, attendants?}; an instrument not listed is at its instruments[…].position_m
    # (docs/timeline.md, "places"; the render places its notes there)
    places: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the round (1, 2, 3) a shooting cue (kind shoot or shejie) belongs to; None for the others.
    # Round 2 is shot in two cues (the 三耦, then the 公 and the rest, 去侯 again between them)
    round: int | None = None
    # other ids that select this cue (--cues, play's CUE+S, check --cue): a 射节 cue compiled as
    # another piece keeps the cue sheet's id here (a 天子's zouyu is also ``lishou``)
    aliases: tuple[str, ...] = ()
    # starts_when and ends_when in English: what must happen in the hall (play --lang en)
    starts_when_en: str = ""
    ends_when_en: str = ""


@dataclass(frozen=True)
class Note:
    """One sounded event, drums and calls included."""

    time: float               # onset, s
    duration: float           # s
    instrument: str           # exact instrument name (e.g. 建鼓·东)
    cue: str                  # cue id
    midi: int                 # nearest MIDI key, or the GM drum key for unpitched bodies
    hz: float | None          # exact 三分损益 frequency; None if unpitched
    velocity: int             # 1..127
    lv: str | None = None     # 律 name with octave mark, e.g. 黄 / 黄清 / 黄浊
    cents: float | None = None  # hz relative to the equal-tempered midi key, cents
    lyric: str | None = None  # the syllable sung, where there are words
    # a spoken syllable's F0, semitones re its speaker's speaking pitch, at equal steps from the
    # note's onset to its end (the compiler's prosody, docs/timeline.md); None: none given
    f0_st: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Beat:
    """A 建鼓 stroke of a 射节 cue: the beat a shot must meet in round 3."""

    time: float
    cue: str
    pair: str | None
    jie: int                  # 1-based 节 within the pair's turn
    shoot: bool               # a shooting 节 (拾发) rather than a heard one
    role: str | None          # 上射 | 下射, for the arrow bound to this stroke
    archer: str | None
    arrow: int | None         # 1..4, the archer's arrow number
    rank: str | None = None   # the archer's rank (the roster's, after variant sanou_rank, O22)


@dataclass(frozen=True)
class Selection:
    """Where a ``--cues`` selection sits in the whole compiled ceremony (docs/timeline.md)."""

    origin_s: float           # the ceremony's second at this timeline's time 0, s
    compact: bool = False     # --compact: the spaces between the chosen cues closed to the gap
    # per cue of the timeline, in order: ceremony seconds closed up before it by --compact, s
    # (all 0 without it); a time t of cue k is ceremony second t + origin_s + closed_s[k]
    closed_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class Timeline:
    ceremony: Ceremony
    cues: tuple[Cue, ...]
    notes: tuple[Note, ...]   # sorted by (time, instrument)
    beats: tuple[Beat, ...]   # sorted by time
    # name -> plain dict of instrument facts
    instruments: dict[str, dict[str, Any]] = field(default_factory=dict)
    # 侯 name -> {"distance_m", "arrow_speed_m_s", "flight_s"}: an arrow's flight to it (the
    # compiler's, docs/timeline.md); {} in a timeline compiled without the courtyard
    targets: dict[str, dict[str, float]] = field(default_factory=dict)
    selection: Selection | None = None    # None: its seconds are the ceremony's (no --cues)
    # who shoots, at which 侯, the host and his privileges (docs/timeline.md, "rite")
    rite: Rite | None = None

    @property
    def duration(self) -> float:
        """Seconds until the last note has finished or the last cue has ended."""
        ends = [c.end for c in self.cues] + [n.time + n.duration for n in self.notes]
        return max(ends, default=0.0)

    def ceremony_s(self, t: float) -> float:
        """Timeline second ``t`` as a second of the whole compiled ceremony: the same without a
        selection; else moved by the selection's origin and by what ``--compact`` closed before
        the latest cue started at or before ``t`` (the first cue's for an earlier ``t``)."""
        sel = self.selection
        if sel is None:
            return float(t)
        closed = 0.0
        for k, c in enumerate(self.cues):
            if k == 0 or c.start <= t:
                closed = sel.closed_s[k] if sel.closed_s else 0.0
        return float(t) + sel.origin_s + closed

    def cue(self, cue_id: str) -> Cue:
        """The cue of id (or alias) ``cue_id``."""
        for c in self.cues:
            if c.id == cue_id:
                return c
        for c in self.cues:
            if cue_id in c.aliases:
                return c
        raise KeyError(cue_id)

    def cue_names(self) -> dict[str, str]:
        """Every name that selects a cue (its id and its aliases) → the cue's id."""
        names = {c.id: c.id for c in self.cues}
        for c in self.cues:
            for a in c.aliases:
                names.setdefault(a, c.id)
        return names

    def beat_times(self, cue: str | None = None) -> npt.NDArray[np.float64]:
        """Times (s) of the 射节 建鼓 strokes, optionally of one cue, ascending."""
        return np.array([b.time for b in self.beats if cue is None or b.cue == cue], dtype=float)

    def instrument_names(self) -> list[str]:
        """Instrument names in a stable order: the instruments table, then any others in notes."""
        names = list(self.instruments)
        seen = set(names)
        for n in self.notes:
            if n.instrument not in seen:
                seen.add(n.instrument)
                names.append(n.instrument)
        return names



def chosen_cues(tl: Timeline, cue_ids: Iterable[str], key: str = "--cues",
                file: str | None = None) -> list[Cue]:
    """The cues of ``cue_ids`` (ids or aliases), in timeline order; an unknown id is refused with
    :func:`yuexuan.errors.unknown_cue` (naming ``key`` and ``file``)."""
    names = tl.cue_names()
    for cue_id in cue_ids:
        if cue_id not in names:
            raise unknown_cue(cue_id, list(names), key=key, file=file)
    wanted = {names[cue_id] for cue_id in cue_ids}
    return [c for c in tl.cues if c.id in wanted]


def select(tl: Timeline, cue_ids: Iterable[str] | None, file: str | None = None,
           compact: bool = False) -> Timeline:
    """The rule of ``--cues``, for a cue sheet (its whole ceremony compiled first) and a saved
    timeline alike: only the cues of ``cue_ids`` (in timeline order) with their notes and 射节
    beats, moved so that time 0 is the first chosen cue's start (or the earliest note, beat or
    phrase of theirs, should a hand-edited file put one before it). The spaces between the chosen
    cues stay the ceremony's; ``compact`` closes each to the ceremony's gap
    (:attr:`Ceremony.gap_s`), so a cue starts ``gap_s`` after the end of the one before it. The
    cut records where it sits in the ceremony (:class:`Selection`, :meth:`Timeline.ceremony_s`).
    No ``cue_ids``: all the cues (``tl`` itself unless it is a selection to compact: a whole
    ceremony's cues are already ``gap_s`` apart). An unknown id:
    :func:`yuexuan.errors.unknown_cue` naming ``file``."""
    if not cue_ids and (not compact or tl.selection is None):
        return tl
    cues = chosen_cues(tl, cue_ids, file=file) if cue_ids else list(tl.cues)
    index = {c.id: k for k, c in enumerate(tl.cues)}
    ids = {c.id for c in cues}
    t0 = min([c.start for c in cues] + [t for c in cues for t in c.phrases]
             + [n.time for n in tl.notes if n.cue in ids] + [b.time for b in tl.beats if b.cue in ids])
    shift, end = {}, None           # cue id -> seconds its times move back
    for c in cues:
        start = c.start - t0 if end is None or not compact else end + tl.ceremony.gap_s
        shift[c.id] = c.start - start
        end = c.end - shift[c.id]
    # each chosen cue's start in the ceremony, the new origin, and what compact closed before it
    starts = [_ceremony_start(tl, index[c.id]) for c in cues]
    origin = starts[0] - (cues[0].start - shift[cues[0].id])
    closed = tuple(s - origin - (c.start - shift[c.id]) for s, c in zip(starts, cues))
    compacted = bool(compact) or bool(tl.selection and tl.selection.compact)
    return _moved(tl, cues, shift, Selection(origin, compacted, closed))


def _moved(tl: Timeline, cues: list[Cue], shift: dict[str, float], selection: Selection | None) -> Timeline:
    """``tl`` with only ``cues`` and their notes and beats, each cue's times less ``shift[id]`` s."""
    notes = (replace(n, time=n.time - shift[n.cue]) for n in tl.notes if n.cue in shift)
    beats = (replace(b, time=b.time - shift[b.cue]) for b in tl.beats if b.cue in shift)
    return Timeline(
        tl.ceremony,
        tuple(replace(c, start=c.start - shift[c.id], end=c.end - shift[c.id],
                      phrases=tuple(t - shift[c.id] for t in c.phrases)) for c in cues),
        tuple(sorted(notes, key=lambda n: n.time)), tuple(sorted(beats, key=lambda b: b.time)),
        tl.instruments, tl.targets, selection, tl.rite)


def _ceremony_start(tl: Timeline, k: int) -> float:
    """The ceremony second of cue ``k``'s start."""
    sel = tl.selection
    if sel is None:
        return tl.cues[k].start
    return tl.cues[k].start + sel.origin_s + (sel.closed_s[k] if sel.closed_s else 0.0)


def at_ceremony_times(tl: Timeline) -> Timeline:
    """``tl`` with every time a second of the whole ceremony (:meth:`Timeline.ceremony_s`, cue by
    cue): the times a shot log holds (live judging, ``check``). ``tl`` itself when it is not a
    selection."""
    sel = tl.selection
    if sel is None:
        return tl
    back = {c.id: c.start - _ceremony_start(tl, k) for k, c in enumerate(tl.cues)}
    return _moved(tl, list(tl.cues), back, None)


def _r(x: float) -> float:
    return round(float(x), 6)


def to_dict(tl: Timeline) -> dict[str, Any]:
    """The JSON contract (docs/timeline.md). Times rounded to the microsecond."""
    cer = asdict(tl.ceremony)
    if cer.get("mix") is None:
        cer.pop("mix", None)            # written only where the sheet names one
    cues = []
    for c in tl.cues:
        d = asdict(c)
        d["start"], d["end"] = _r(c.start), _r(c.end)
        d["instruments"], d["aliases"] = list(c.instruments), list(c.aliases)
        d["phrases"] = [_r(t) for t in c.phrases]
        cues.append(d)
    notes = []
    for n in tl.notes:
        notes.append({"time": _r(n.time), "duration": _r(n.duration), "instrument": n.instrument,
                      "cue": n.cue, "midi": n.midi, "hz": None if n.hz is None else round(n.hz, 4),
                      "velocity": n.velocity, "lv": n.lv,
                      "cents": None if n.cents is None else round(n.cents, 2), "lyric": n.lyric})
        if n.f0_st is not None:
            notes[-1]["f0_st"] = [round(float(v), 3) for v in n.f0_st]
    beats = []
    for b in tl.beats:
        d = asdict(b)
        d["time"] = _r(b.time)
        beats.append(d)
    sel = tl.selection
    selection = None if sel is None else {"origin_s": _r(sel.origin_s), "compact": sel.compact,
                                          "closed_s": [_r(x) for x in sel.closed_s]}
    return {"schema": SCHEMA_VERSION, "ceremony": cer, "cues": cues, "notes": notes,
            "beats": beats, "instruments": tl.instruments, "targets": tl.targets,
            "selection": selection, "rite": None if tl.rite is None else timeline_rite.to_dict(tl.rite)}


def _record(cls: type[_R], d: dict[str, Any]) -> _R:
    """``cls(**d)`` with JSON arrays as tuples (the dataclasses' form)."""
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def from_dict(d: dict[str, Any], file: str | None = None) -> Timeline:
    """Inverse of :func:`to_dict` (for tools reading a saved timeline). Raises ValueError, one line
    naming the field, for anything ``timeline.schema.json`` and its cross-checks refuse
    (:func:`yuexuan.timeline_schema.validate`), a timeline of another schema number included; then
    :class:`yuexuan.timeline_checks.DamagedTimeline` (a UserError and a ValueError, naming ``file``)
    for a fact every output assumes broken (:func:`yuexuan.timeline_checks.check`)."""
    validate(d)
    timeline_checks.check(d, file)
    return Timeline(_record(Ceremony, d["ceremony"]), tuple(_record(Cue, c) for c in d["cues"]),
                    tuple(_record(Note, n) for n in d["notes"]), tuple(_record(Beat, b) for b in d["beats"]),
                    dict(d.get("instruments", {})), dict(d.get("targets", {})),
                    None if d.get("selection") is None else _record(Selection, d["selection"]),
                    None if d.get("rite") is None else timeline_rite.from_dict(d["rite"]))


def save_json(tl: Timeline, path: str | os.PathLike[str]) -> None:
    """Write the JSON contract to ``path`` atomically (UTF-8, Chinese unescaped)."""
    from yuexuan.atomic import write_text
    write_text(path, json.dumps(to_dict(tl), ensure_ascii=False, indent=1) + "\n")

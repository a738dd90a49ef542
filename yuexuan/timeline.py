"""The Timeline: the single source of truth for timing, read by every output.

All times are seconds from the start of the compiled selection. The JSON form
(:func:`to_dict` / :func:`from_dict`) is a documented, stable contract: the JSON Schema
``yuexuan/timeline.schema.json``, described in ``docs/timeline.md``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from yuexuan.errors import unknown_cue
from yuexuan.timeline_schema import SCHEMA_VERSION, validate


@dataclass(frozen=True)
class Ceremony:
    """What was compiled: the rite, the rank, its suspension and tuning."""

    name: str
    rank: str                 # 天子 | 诸侯 | 卿大夫 | 士
    suspension: str           # 宫县 | 轩县 | 判县 | 特县
    huangzhong_hz: float      # frequency of 黄钟 (合), Hz
    variants: dict = field(default_factory=dict)   # variant key -> chosen commentator


@dataclass(frozen=True)
class Cue:
    """One cue of the music programme, placed on the timeline."""

    id: str
    piece: str
    action: str               # 奏 | 歌 | 管 | 射 | 诺 …
    start: float              # s
    end: float                # s
    instruments: tuple        # instrument names, as in notes
    reconstruction: bool      # True when any music of this cue is a modern reconstruction
    source: str               # the quoted sentence of the text behind the cue
    kind: str = "music"       # music | shejie (射节 drum grid) | shoot (unaccompanied round)
    starts_when: str = ""     # the ritual action that starts it (quoted)
    ends_when: str = ""       # the ritual action that ends it (quoted)
    open_ended: bool = False  # ends on a ritual action, not after a count of 终
    performers: str = ""
    gloss: str = ""           # English gloss of the source
    phrases: tuple = ()       # start times (s) of its phrases; a soft stop ends at the next one
    # metrical step of the cue's own music, s: one quarter note of the MIDI tempo map, the MusicXML
    # metronome and the live MIDI clock (docs/timeline.md, "beat_s"; required in the JSON)
    beat_s: float = 1.0
    # the later source of a melody that is not a Zhou tune (e.g. the Song 风雅十二诗谱); "" for none
    later_source: str = ""
    # where performers who move are during this cue: instrument -> {where, position_m [x, y, z] m,
    # source, attendants?}; an instrument not listed is at its instruments[…].position_m
    # (docs/timeline.md, "places"; the render places its notes there)
    places: dict = field(default_factory=dict)
    # the round (1, 2, 3) a shooting cue (kind shoot or shejie) belongs to; None for the others.
    # Round 2 is shot in two cues (the 三耦, then the 公 and the rest, 去侯 again between them)
    round: int | None = None


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
class Timeline:
    ceremony: Ceremony
    cues: tuple
    notes: tuple              # sorted by (time, instrument)
    beats: tuple              # sorted by time
    instruments: dict = field(default_factory=dict)   # name -> plain dict of instrument facts

    @property
    def duration(self) -> float:
        """Seconds until the last note has finished or the last cue has ended."""
        ends = [c.end for c in self.cues] + [n.time + n.duration for n in self.notes]
        return max(ends, default=0.0)

    def cue(self, cue_id: str) -> Cue:
        for c in self.cues:
            if c.id == cue_id:
                return c
        raise KeyError(cue_id)

    def notes_array(self) -> np.ndarray:
        """Notes as a structured array: time, duration (s), midi, hz (NaN if unpitched), velocity,
        instrument (index into ``instrument_names()``)."""
        names = self.instrument_names()
        index = {n: i for i, n in enumerate(names)}
        arr = np.zeros(len(self.notes), dtype=[("time", "f8"), ("duration", "f8"), ("midi", "i2"),
                                               ("hz", "f8"), ("velocity", "i2"), ("instrument", "i2")])
        if self.notes:
            arr["time"] = [n.time for n in self.notes]
            arr["duration"] = [n.duration for n in self.notes]
            arr["midi"] = [n.midi for n in self.notes]
            arr["hz"] = [np.nan if n.hz is None else n.hz for n in self.notes]
            arr["velocity"] = [n.velocity for n in self.notes]
            arr["instrument"] = [index[n.instrument] for n in self.notes]
        return arr

    def beat_times(self, cue: str | None = None) -> np.ndarray:
        """Times (s) of the 射节 建鼓 strokes, optionally of one cue, ascending."""
        return np.array([b.time for b in self.beats if cue is None or b.cue == cue], dtype=float)

    def instrument_names(self) -> list:
        """Instrument names in a stable order: the instruments table, then any others in notes."""
        names = list(self.instruments)
        seen = set(names)
        for n in self.notes:
            if n.instrument not in seen:
                seen.add(n.instrument)
                names.append(n.instrument)
        return names



def chosen_cues(tl: Timeline, cue_ids, key: str = "--cues", file: str | None = None) -> list:
    """The cues of ``cue_ids``, in timeline order; an unknown id is refused with
    :func:`yuexuan.errors.unknown_cue` (naming ``key`` and ``file``)."""
    known = [c.id for c in tl.cues]
    for cue_id in cue_ids:
        if cue_id not in known:
            raise unknown_cue(cue_id, known, key=key, file=file)
    wanted = set(cue_ids)
    return [c for c in tl.cues if c.id in wanted]


def select(tl: Timeline, cue_ids, file: str | None = None) -> Timeline:
    """The rule of ``--cues`` for a saved timeline: only the cues of ``cue_ids`` (in timeline
    order) with their notes and 射节 beats, all moved so that time 0 is the first chosen cue's
    start (or the earliest note, beat or phrase of theirs, should a hand-edited file put one
    before it); the spaces between the chosen cues stay as they were. No ``cue_ids``: ``tl``
    itself. An unknown id: :func:`yuexuan.errors.unknown_cue` naming ``file``."""
    if not cue_ids:
        return tl
    cues = chosen_cues(tl, cue_ids, file=file)
    ids = {c.id for c in cues}
    notes = [n for n in tl.notes if n.cue in ids]
    beats = [b for b in tl.beats if b.cue in ids]
    t0 = min([c.start for c in cues] + [t for c in cues for t in c.phrases]
             + [n.time for n in notes] + [b.time for b in beats])
    return Timeline(
        tl.ceremony,
        tuple(replace(c, start=c.start - t0, end=c.end - t0, phrases=tuple(t - t0 for t in c.phrases))
              for c in cues),
        tuple(replace(n, time=n.time - t0) for n in notes),
        tuple(replace(b, time=b.time - t0) for b in beats),
        tl.instruments)

def _r(x: float) -> float:
    return round(float(x), 6)


def to_dict(tl: Timeline) -> dict:
    """The JSON contract (docs/timeline.md). Times rounded to the microsecond."""
    cer = asdict(tl.ceremony)
    cues = []
    for c in tl.cues:
        d = asdict(c)
        d["start"], d["end"] = _r(c.start), _r(c.end)
        d["instruments"] = list(c.instruments)
        d["phrases"] = [_r(t) for t in c.phrases]
        cues.append(d)
    notes = []
    for n in tl.notes:
        notes.append({"time": _r(n.time), "duration": _r(n.duration), "instrument": n.instrument,
                      "cue": n.cue, "midi": n.midi, "hz": None if n.hz is None else round(n.hz, 4),
                      "velocity": n.velocity, "lv": n.lv,
                      "cents": None if n.cents is None else round(n.cents, 2), "lyric": n.lyric})
    beats = []
    for b in tl.beats:
        d = asdict(b)
        d["time"] = _r(b.time)
        beats.append(d)
    return {"schema": SCHEMA_VERSION, "ceremony": cer, "cues": cues, "notes": notes,
            "beats": beats, "instruments": tl.instruments}


def _record(cls, d: dict):
    """``cls(**d)`` with JSON arrays as tuples (the dataclasses' form)."""
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def from_dict(d: dict) -> Timeline:
    """Inverse of :func:`to_dict` (for tools reading a saved timeline). Raises ValueError, one line
    naming the field, for anything ``timeline.schema.json`` and its cross-checks refuse
    (:func:`yuexuan.timeline_schema.validate`), a timeline of another schema number included."""
    validate(d)
    return Timeline(_record(Ceremony, d["ceremony"]), tuple(_record(Cue, c) for c in d["cues"]),
                    tuple(_record(Note, n) for n in d["notes"]), tuple(_record(Beat, b) for b in d["beats"]),
                    dict(d.get("instruments", {})))


def save_json(tl: Timeline, path) -> None:
    """Write the JSON contract to ``path`` atomically (UTF-8, Chinese unescaped)."""
    from yuexuan.atomic import write_text
    write_text(path, json.dumps(to_dict(tl), ensure_ascii=False, indent=1) + "\n")


def load_json(path) -> Timeline:
    """Read a timeline saved by :func:`save_json`."""
    from pathlib import Path
    return from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

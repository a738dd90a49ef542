"""The Timeline: the single source of truth for timing, read by every output.

All times are seconds from the start of the compiled selection. The JSON form
(:func:`to_dict` / :func:`from_dict`) is a documented, stable contract: see
``docs/timeline.md``.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, field, fields

import numpy as np

SCHEMA_VERSION = 2


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
    beat_s: float = 1.0       # metrical step of the cue's own music, s (one syllable, one note, one call step)


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


_JSON_TYPES = {"str": str, "float": (int, float), "int": int, "bool": bool, "tuple": list, "dict": dict}
_RANGES = {"midi": (0, 127), "velocity": (0, 127)}


def _checked(cls, d, where: str, element=None):
    """``cls(**d)`` with each field's JSON type checked (numbers finite, MIDI values 0..127,
    list fields' items of type ``element[name]``); ValueError naming ``where`` otherwise."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object, got {type(d).__name__}")
    known = {f.name: f for f in fields(cls)}
    for k in d:
        if k not in known:
            raise ValueError(f"{where}: unknown field {k!r}")
    for name, f in known.items():
        if name not in d:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ValueError(f"{where}: missing field {name!r}")
            continue
        v, kinds = d[name], [a.strip() for a in str(f.type).split("|")]
        if v is None and "None" in kinds:
            continue
        items = v if kinds[0] == "tuple" and isinstance(v, list) else [v]
        want = (element or {}).get(name, kinds[0]) if kinds[0] == "tuple" else kinds[0]
        for x in items:
            ok = isinstance(x, _JSON_TYPES[want]) and not (want in ("float", "int") and isinstance(x, bool))
            ok = ok and (want != "float" or math.isfinite(x))
            lo, hi = _RANGES.get(name, (None, None))
            if not ok or (lo is not None and not lo <= x <= hi) or (name == "duration" and x < 0):
                raise ValueError(f"{where}.{name}: not a valid {want}: {x!r:.40}")
        if not isinstance(v, list if kinds[0] == "tuple" else object):
            raise ValueError(f"{where}.{name}: expected a list")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def from_dict(d: dict) -> Timeline:
    """Inverse of :func:`to_dict` (for tools reading a saved timeline). Raises ValueError,
    naming the field, for anything :func:`to_dict` could not have written."""
    if not isinstance(d, dict):
        raise ValueError("a timeline is a JSON object")
    for key, kind in (("ceremony", dict), ("cues", list), ("notes", list), ("beats", list),
                      ("instruments", dict)):
        if not isinstance(d.get(key, {} if key == "instruments" else None), kind):
            raise ValueError(f"{key}: expected a JSON {'object' if kind is dict else 'list'}")
    cer = _checked(Ceremony, d["ceremony"], "ceremony")
    cues = tuple(_checked(Cue, c, f"cues[{i}]", {"instruments": "str", "phrases": "float"})
                 for i, c in enumerate(d["cues"]))
    notes = tuple(_checked(Note, n, f"notes[{i}]") for i, n in enumerate(d["notes"]))
    beats = tuple(_checked(Beat, b, f"beats[{i}]") for i, b in enumerate(d["beats"]))
    instruments = dict(d.get("instruments", {}))
    for name, facts in instruments.items():
        where = f"instruments[{name!r}]"
        if not isinstance(facts, dict):
            raise ValueError(f"{where}: expected an object of instrument facts")
        for key in ("gm_program", "gm_drum_key"):
            v = facts.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 127):
                raise ValueError(f"{where}.{key}: not a MIDI number 0..127: {v!r:.40}")
        pos = facts.get("position_m", [0.0, 0.0, 0.0])
        if not (isinstance(pos, list) and len(pos) == 3 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in pos)):
            raise ValueError(f"{where}.position_m: expected [x, y, z] in metres: {pos!r:.60}")
    return Timeline(cer, cues, notes, beats, instruments)


def save_json(tl: Timeline, path) -> None:
    """Write the JSON contract to ``path`` atomically (UTF-8, Chinese unescaped)."""
    import json

    from yuexuan.atomic import write_text
    write_text(path, json.dumps(to_dict(tl), ensure_ascii=False, indent=1) + "\n")


def load_json(path) -> Timeline:
    """Read a timeline saved by :func:`save_json`."""
    import json
    from pathlib import Path
    return from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

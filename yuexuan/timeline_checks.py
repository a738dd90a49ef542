"""What a saved timeline must hold beyond its JSON Schema: the facts every output assumes.

:func:`check` runs after :func:`yuexuan.timeline_schema.validate` (so every field has its type and
range, cue ids are unique and every note and beat names a cue) and refuses, in one line naming the
file and the field, a timeline that the compiler could not have written and that an output would
trip over: two frequencies on one MIDI key (the MIDI file's and the live show's tuning table), a
frequency MIDI tuning cannot carry, a note or beat outside its cue, cues out of time order, a time
past a day (the compiler's limit), a cue ``beat_s`` outside what a cue sheet can give (the score
divides by it), a note of an instrument the ``instruments`` table lacks, an instrument without its
``position_m`` or with one over a kilometre away (the drawing, the guide and the render place every
instrument), a shooting 节 without its archer.
Each rule is one pass over one record kind; the notes' rules are numpy arrays (a large roster has
190,000 notes). docs/timeline.md lists the rules; docs/errors.md the messages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from yuexuan.errors import UserError

Doc = dict[str, Any]

MAX_SECONDS = 24 * 3600.0     # a compiled selection lasts at most a day (compiler MAX_TIMELINE_S)
BEAT_S = (0.001, 6 * 3600.0)  # a cue's beat_s, s: a sheet's settings give 3.1 ms (0.2 s / 64) to 6 h
EPS_S = 1e-6                  # times are written rounded to the microsecond
SAME_HZ = 1e-6                # two frequencies closer than this (relative) are one pitch
# a performer's place, m from the courtyard's origin on each axis: the courtyard is about 50 × 143 m
# (ceremony/courtyard.toml); the render delays a sound by its distance (1 km: 2.9 s), so a place
# thousands of km off would make it write days of audio
NEAR_M = 1000.0
ARROWS = 4                    # 乘矢: an archer shoots four arrows a round


def _midi_hz(key: float) -> float:
    """The frequency, Hz, of a (fractional) MIDI key, A4 = key 69 = 440 Hz."""
    return 440.0 * 2.0 ** ((key - 69.0) / 12.0)


# what MIDI Tuning Standard can give a key: from key 0 up to just below key 128, Hz
TUNABLE_HZ = (_midi_hz(0.0), _midi_hz(127.99))


class DamagedTimeline(UserError, ValueError):
    """A timeline that breaks a cross-check: one line naming the file and the field. A ValueError
    too, as :func:`yuexuan.timeline.from_dict` promises its callers."""


def check(d: Doc, file: str | None = None) -> None:
    """Raise :class:`DamagedTimeline` naming ``file`` and the field at fault unless the
    schema-valid timeline dict ``d`` holds every cross-check (module docstring)."""
    cues = d["cues"]
    span = {c["id"]: (i, float(c["start"]), float(c["end"])) for i, c in enumerate(cues)}
    table = d.get("instruments", {})
    _cues(cues, table, file)
    _instruments(table, file)
    _notes(d["notes"], span, table, file)
    _beats(d["beats"], cues, span, file)


def _fail(key: str, message: str, file: str | None) -> DamagedTimeline:
    return DamagedTimeline(message, file=file, key=key)


def _s(t: float) -> str:
    return f"{t:.6g} s"


# -- cues --------------------------------------------------------------------------------------

def _cues(cues: list[Doc], table: Doc, file: str | None) -> None:
    """Each cue ends after it starts, by the end of the day, after the cue before it; its phrases
    lie inside it in order; its beat_s is one a cue sheet can give; it names known instruments."""
    previous_end, previous_id = 0.0, None
    for i, c in enumerate(cues):
        start, end, where = c["start"], c["end"], f"cues[{i}]"
        if end < start:
            raise _fail(f"{where}.end", f"{_s(end)} is before the cue's start ({_s(start)})", file)
        if end > MAX_SECONDS:
            raise _fail(f"{where}.end", f"{_s(end)} is past a day ({MAX_SECONDS:.0f} s), the "
                                        f"longest a timeline may last", file)
        if start < previous_end - EPS_S:
            raise _fail(f"{where}.start", f"{_s(start)} is before the end of the cue before it "
                                          f"({previous_id!r}, {_s(previous_end)}); expected the cues "
                                          f"in time order, one after another", file)
        previous_end, previous_id = end, c["id"]
        phrases = c.get("phrases", [])
        for k, t in enumerate(phrases):
            if not start - EPS_S <= t <= end + EPS_S:
                raise _fail(f"{where}.phrases[{k}]", f"{_s(t)} is outside the cue ({_s(start)} .. "
                                                     f"{_s(end)})", file)
            if k and t < phrases[k - 1]:
                raise _fail(f"{where}.phrases[{k}]", f"{_s(t)} is before the phrase before it; "
                                                     f"expected ascending times", file)
        if not BEAT_S[0] <= c["beat_s"] <= BEAT_S[1]:
            raise _fail(f"{where}.beat_s", f"expected {BEAT_S[0]} s .. {BEAT_S[1]:.0f} s (6 h), "
                                           f"got {c['beat_s']!r:.20}", file)
        for k, name in enumerate(c["instruments"]):
            if name not in table:
                raise _fail(f"{where}.instruments[{k}]", f"{name!r:.40} is not among the "
                                                         f"timeline's instruments", file)
        for name, place in c.get("places", {}).items():
            if name not in table:
                raise _fail(f"{where}.places[{name!r:.40}]", "not among the timeline's instruments",
                            file)
            _near(f"{where}.places[{name!r:.40}].position_m", place["position_m"], file)
            for who, pos in place.get("attendants", {}).items():
                _near(f"{where}.places[{name!r:.40}].attendants[{who!r:.40}]", pos, file)


# -- instruments -------------------------------------------------------------------------------

def _instruments(table: Doc, file: str | None) -> None:
    """Every instrument has its place in the courtyard: the drawing and the guide put each one
    there, and the render delays its sound by its distance."""
    for name, facts in table.items():
        if "position_m" not in facts:
            raise _fail(f"instruments[{name!r}]", "missing field 'position_m' ([x, y, z] in metres)",
                        file)
        _near(f"instruments[{name!r}].position_m", facts["position_m"], file)


def _near(key: str, position_m: list[float], file: str | None) -> None:
    """A position within NEAR_M of the courtyard's origin (the schema has made it three numbers)."""
    if max(abs(v) for v in position_m) > NEAR_M:
        raise _fail(key, f"expected metres within {NEAR_M:.0f} m of the courtyard's origin, got "
                         f"{position_m}", file)


# -- notes -------------------------------------------------------------------------------------

def _first(mask: np.ndarray[Any, np.dtype[np.bool_]]) -> int | None:
    """The index of the first True of ``mask``, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _column(notes: Sequence[Doc], key: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    """One numeric field of every note as floats (None as NaN)."""
    return np.fromiter((math.nan if n[key] is None else n[key] for n in notes), float, len(notes))


def _notes(notes: list[Doc], span: dict[str, tuple[int, float, float]], table: Doc,
           file: str | None) -> None:
    """Each note starts inside its cue, in time order, ends by the end of the day, is of an
    instrument of the table, has a frequency if that instrument is pitched (a voice's spoken call
    aside), and a frequency MIDI tuning can carry, one per MIDI key."""
    if not notes:
        return
    time, hz = _column(notes, "time"), _column(notes, "hz")
    end = time + _column(notes, "duration")
    cue = np.array([span[n["cue"]][0] for n in notes])
    starts = np.array([s for _, s, _ in span.values()])[cue]
    ends = np.array([e for _, _, e in span.values()])[cue]
    i = _first((time < starts - EPS_S) | (time > ends + EPS_S))
    if i is not None:
        raise _fail(f"notes[{i}].time", f"{_s(time[i])} is outside its cue {notes[i]['cue']!r:.40} "
                                        f"({_s(starts[i])} .. {_s(ends[i])})", file)
    i = _first(np.diff(time) < 0)
    if i is not None:
        raise _fail(f"notes[{i + 1}].time", f"{_s(time[i + 1])} is before notes[{i}] "
                                            f"({_s(time[i])}); expected notes sorted by time", file)
    i = _first(end > MAX_SECONDS)
    if i is not None:
        raise _fail(f"notes[{i}].duration", f"the note ends at {_s(end[i])}, past a day "
                                            f"({MAX_SECONDS:.0f} s)", file)
    unknown = {n["instrument"] for n in notes} - table.keys()
    if unknown:
        i = next(k for k, n in enumerate(notes) if n["instrument"] in unknown)
        raise _fail(f"notes[{i}].instrument", f"{notes[i]['instrument']!r:.40} is not among the "
                                              f"timeline's instruments", file)
    # a pitched instrument's note has its frequency; only a voice speaks without one (a call)
    sung = {k for k, f in table.items() if f.get("pitched") is True and f.get("family") != "voice"}
    i = _first(np.isnan(hz) & np.fromiter((n["instrument"] in sung for n in notes), bool, len(notes)))
    if i is not None:
        raise _fail(f"notes[{i}].hz", f"null, but {notes[i]['instrument']!r:.40} is pitched "
                                      f"(its instruments fact 'pitched'); expected its frequency, Hz",
                    file)
    i = _first((hz < TUNABLE_HZ[0]) | (hz >= TUNABLE_HZ[1]))        # NaN (unpitched) compares False
    if i is not None:
        raise _fail(f"notes[{i}].hz", f"expected {TUNABLE_HZ[0]:.2f} .. {TUNABLE_HZ[1]:.0f} Hz "
                                      f"(what MIDI tuning can carry), got {float(hz[i])!r:.20}", file)
    _one_hz_per_key(notes, hz, file)


def key_clash(keys: Sequence[int], hz: np.ndarray[Any, np.dtype[np.float64]]) -> tuple[int, int] | None:
    """One Hz per MIDI key, the rule: (i, k) where note k is the first whose frequency ``hz[k]``
    differs from that of note i, the first note on the same key; None when every key has one.
    ``keys``: each note's MIDI key; ``hz``: its frequency, Hz (NaN for an unpitched note)."""
    pitched = np.flatnonzero(~np.isnan(hz))
    if not pitched.size:
        return None
    _, first, which = np.unique(np.asarray(keys)[pitched], return_index=True, return_inverse=True)
    own = hz[pitched[first[which]]]         # the frequency of the first note on each note's key
    j = _first(np.abs(hz[pitched] - own) > SAME_HZ * hz[pitched])
    return None if j is None else (int(pitched[first[which[j]]]), int(pitched[j]))


def _one_hz_per_key(notes: list[Doc], hz: np.ndarray[Any, np.dtype[np.float64]],
                    file: str | None) -> None:
    """Every pitched note on one MIDI key has one frequency: the key is retuned once, for the whole
    file (MIDI Tuning Standard; yuexuan.formats.midimessages.tuning_table)."""
    clash = key_clash([n["midi"] for n in notes], hz)
    if clash is not None:
        i, k = clash
        raise _fail(f"notes[{k}].hz", f"MIDI key {notes[k]['midi']} would need both {hz[i]:.3f} Hz "
                                      f"(notes[{i}]) and {hz[k]:.3f} Hz; expected one Hz per MIDI key",
                    file)


# -- beats -------------------------------------------------------------------------------------

def _beats(beats: list[Doc], cues: list[Doc], span: dict[str, tuple[int, float, float]],
           file: str | None) -> None:
    """Each beat is a stroke of a 射节 cue (kind shejie), inside it, in time order; a shooting
    节 names its pair, role, archer and arrow (1..4)."""
    previous = -math.inf
    for i, b in enumerate(beats):
        k, start, end = span[b["cue"]]
        where = f"beats[{i}]"
        if cues[k].get("kind", "music") != "shejie":
            raise _fail(f"{where}.cue", f"{b['cue']!r:.40} is of kind {cues[k].get('kind', 'music')}; "
                                        f"expected a cue of kind shejie (射节)", file)
        t = b["time"]
        if not start - EPS_S <= t <= end + EPS_S:
            raise _fail(f"{where}.time", f"{_s(t)} is outside its cue {b['cue']!r:.40} "
                                         f"({_s(start)} .. {_s(end)})", file)
        if t < previous:
            raise _fail(f"{where}.time", f"{_s(t)} is before beats[{i - 1}] ({_s(previous)}); "
                                         f"expected beats sorted by time", file)
        previous = t
        if b["shoot"]:
            for field in ("pair", "role", "archer", "arrow"):
                if b[field] is None or b[field] == "":
                    raise _fail(f"{where}.{field}", f"a shooting 节 (shoot true) needs its {field}, "
                                                    f"got {json.dumps(b[field])}", file)
            if b["arrow"] > ARROWS:
                raise _fail(f"{where}.arrow", f"expected 1 .. {ARROWS}, got {b['arrow']}", file)

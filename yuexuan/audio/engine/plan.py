"""The render plan: which cached waveform starts at which sample, with which gain.

Everything the plan knows of an instrument (family, pitched, ``[synth]`` table, position) comes
from the timeline's ``instruments`` facts, never from the instrument files: a saved timeline JSON
renders the same wherever it is read. A note is heard from where its performers are during its
cue: the cue's ``places`` entry for its instrument, else the instrument's ``position_m``.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.audio.engine import notecache
from yuexuan.audio.engine.gain_envelope import Envelope, GainEnvelope, by_instrument
from yuexuan.audio.room import space, tail
from yuexuan.audio.synthesis import drums, source_level, synth
from yuexuan.audio.voice import ensemble
from yuexuan.audio.voice.line_readings import readings
from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.rite import venue
from yuexuan.rite.courtyard import Listener
from yuexuan.rite.instruments import FAMILIES
from yuexuan.timeline import Timeline

TAIL = -2                      # the NoteKey singer of an ensemble's shared diffuse tail
TAKES_BYTES = 16 * 2 ** 20     # an ensemble's dry singer takes kept for its tail and its seats
TARGET_LUFS = -16.0
CEILING_DBTP = -1.0
BLOCK = 1 << 16                # samples a block


@dataclass(frozen=True)
class Options:
    sample_rate: int = 48000
    listener: str = "宾"
    cues: tuple[str, ...] | None = None          # cue ids to render, by yuexuan.timeline.select (time 0 = the
                                       # first one's start); None: the whole timeline
    target_lufs: float = TARGET_LUFS
    ceiling_dbtp: float = CEILING_DBTP
    block: int = BLOCK
    # a produced mix's gain over time per group of stems: called once with the selected timeline
    # and its plan (yuexuan/audio/engine/gain_envelope.py); None: every stem at its physical level
    envelopes: Callable[[Timeline, Plan], Sequence[GainEnvelope]] | None = None


class Body(NamedTuple):
    """What the render needs of one instrument, read from the timeline's instrument facts."""

    name: str
    family: str                        # a synth family (bell, stone, drum, string, pipe, voice)
    pitched: bool
    synth: dict[str, Any]              # its [synth] table
    position_m: tuple[float, ...]      # (x east, y north, z up), metres
    level: float                       # its amplitude at 1 m, Pa (source_level.source_level)
    performers: int = 1                # its count (an ensemble's singers sound each)
    facing: str = ""                   # 北 东 南 西: the row of an ensemble runs across it


class Pcm(NamedTuple):
    """A cached waveform in 16-bit PCM, full scale at its own peak (96 dB under it: half the bytes
    of float32, so the whole ceremony's waveforms stay cached): ``samples × unit`` is its value,
    mono (n,) or stereo (n, 2)."""

    samples: npt.NDArray[np.int16]
    unit: float

    @property
    def nbytes(self) -> int:
        return int(self.samples.nbytes)


def to_pcm(x: npt.NDArray[np.float32]) -> Pcm:
    """``x`` as :class:`Pcm` (rounded to the nearest step)."""
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    unit = peak / 32767.0 if peak > 0 else 1.0
    y = np.multiply(x, np.float32(1.0 / unit), dtype=np.float32)
    return Pcm(np.rint(y, out=y).astype(np.int16), unit)


class PlacedKey(NamedTuple):
    """Identity of a cached stereo waveform: a note's sound heard from one of the plan's
    placements (the same note from two places is two waveforms)."""

    note: notecache.NoteKey
    place: int                         # index into the plan's placements


def cue_positions(timeline: Timeline) -> dict[tuple[str, str], tuple[float, ...]]:
    """{(cue id, instrument): (x, y, z) metres} of every cue's ``places``."""
    out = {}
    for c in timeline.cues:
        for name, entry in c.places.items():
            pos = entry.get("position_m") if isinstance(entry, dict) else None
            if not (isinstance(pos, (list, tuple)) and len(pos) == 3):
                raise UserError(f"cue {c.id!r}: places[{name!r}] has no position_m [x, y, z]; "
                                f"recompile the cue sheet")
            out[(c.id, name)] = tuple(float(v) for v in pos)
    return out


def bodies(timeline: Timeline, names: Iterable[str]) -> dict[str, Body]:
    """:class:`Body` of each instrument in ``names``, by name, from ``timeline.instruments``."""
    out = {}
    for name in names:
        facts = timeline.instruments.get(name)
        if facts is None:
            raise UserError(f"instrument {name!r} has notes but is not among the timeline's "
                            f"instruments (no synthesis); recompile the cue sheet")
        family, pitched, params = facts.get("family"), facts.get("pitched"), facts.get("synth")
        pos = facts.get("position_m")
        if family not in FAMILIES or not isinstance(pitched, bool) or not isinstance(params, dict) \
                or not (isinstance(pos, (list, tuple)) and len(pos) == 3):
            raise UserError(f"instruments[{name!r}] lacks what the render needs (family, pitched, "
                            f"synth, position_m); recompile the cue sheet")
        count = facts.get("count", 1)
        out[name] = Body(name, family, pitched, params, tuple(float(v) for v in pos),
                         source_level.source_level(name, params),
                         int(count) if isinstance(count, int) and 1 <= count <= 64 else 1,
                         str(facts.get("facing") or ""))
    return out


class SharedMono:
    """The mono waveform of a note, synthesised once when the note is heard from several places:
    kept until each of its placements has taken it, then dropped (so memory stays bounded; a
    placement rebuilt after the cache evicted it synthesises again, identically)."""

    def __init__(self, synthesise: Callable[[notecache.NoteKey], npt.NDArray[np.float32]],
                 keys: Iterable[PlacedKey]) -> None:
        uses = Counter(k.note for k in set(keys))
        self._synthesise = synthesise
        self._waiting = {note: n for note, n in uses.items() if n > 1}   # placements not yet built
        self._kept: dict[notecache.NoteKey, npt.NDArray[np.float32]] = {}
        self._lock = threading.Lock()

    def __call__(self, note: notecache.NoteKey) -> npt.NDArray[np.float32]:
        with self._lock:
            wave = self._kept.get(note)
            left = self._waiting.get(note, 0)
            if left:
                self._waiting[note] = left - 1
                if left == 1:
                    self._kept.pop(note, None)
        if wave is None:
            wave = self._synthesise(note)
            if left > 1:
                with self._lock:
                    self._kept[note] = wave
        return wave


@dataclass
class Plan:
    sample_rate: int
    starts: npt.NDArray[np.int64]                 # int64 start sample of each event (travel delay included)
    ends: npt.NDArray[np.int64]                   # int64 end sample (exclusive)
    gains: npt.NDArray[np.float32]                  # float32 amplitude of each event
    keys: list[PlacedKey]              # PlacedKey of each event
    inst: npt.NDArray[np.integer[Any]]                   # int index into names
    names: list[str]                   # instrument names with events, timeline order
    total: int                         # samples in the file
    cache: notecache.NoteCache         # of :class:`Pcm` by :class:`PlacedKey`
    taps: dict[int, tuple[space.Tap, ...]] = field(default_factory=dict)
    # events whose waveform is a mono take heard through these taps (an ensemble's singers), by index
    envelopes: dict[int, Envelope] = field(default_factory=dict)
    # the gain over time of the instruments (index into names) that Options.envelopes shapes
    speech: frozenset[int] = frozenset()
    # the instruments (index into names) of the dialogue bus: those of envelopes marked dialogue

    @property
    def duration_s(self) -> float:
        return self.total / self.sample_rate

    @staticmethod
    def group(key: PlacedKey) -> notecache.NoteKey:
        """What a cached waveform shares with others when made: one note's mono (its placements),
        one syllable's takes (its singers and their tail)."""
        return key.note._replace(singer=0) if key.note.singer >= 0 or key.note.singer == TAIL \
            else key.note


def plan(timeline: Timeline, options: Options, listener_table: dict[str, Listener],
         room: venue.Room | None = None, data: DataSource = DataSource(), shaped: bool = True) -> Plan:
    """Place every note of ``timeline`` (sample 0 = its time 0), heard from
    ``listener_table[options.listener]`` in ``room`` (default: the venue of the timeline's variant
    ``houdao``, O24, in the courtyard of ``data``), the voices reading their words by ``data``'s
    readings table; waveforms are rendered lazily by the plan's cache.
    ``options.cues`` is applied before, by :func:`yuexuan.audio.engine.render.render`.
    ``shaped=False`` leaves ``options.envelopes`` to :func:`shape` (the mixer needs them, the
    synthesis does not)."""
    sr = int(options.sample_rate)
    if not 8000 <= sr <= 192000:
        raise UserError(f"sample rate {sr} Hz is out of range (8000..192000)", key="--sample-rate")
    if options.listener not in listener_table:
        raise UserError(f"unknown listener {options.listener!r}; choose one of "
                        f"{', '.join(listener_table)}", key="--listener")
    listener = listener_table[options.listener]
    room = room if room is not None else venue.for_timeline(timeline, data)
    notes = timeline.notes
    used = {n.instrument for n in notes}
    names = [nm for nm in timeline.instrument_names() if nm in used]
    insts = bodies(timeline, names)
    for n in notes:
        spoken = n.hz is None and insts[n.instrument].family == "voice"    # a call without a pitch
        if insts[n.instrument].pitched and not spoken and not (n.hz and 10.0 <= n.hz <= 0.45 * sr):
            raise UserError(f"note of cue {n.cue!r} at {n.time:.3f} s on {n.instrument} has "
                            f"frequency {n.hz!r} Hz; expected 10 Hz .. {0.45 * sr:.0f} Hz")
    index = {nm: i for i, nm in enumerate(names)}
    moved = cue_positions(timeline)
    placements: list[space.Placement] = []
    place_of: dict[tuple[str, tuple[float, ...]], int] = {}     # (instrument, position) -> its index

    def place_index(name: str, pos: tuple[float, ...]) -> int:
        k = place_of.get((name, pos))
        if k is None:
            k = place_of[(name, pos)] = len(placements)
            placements.append(space.placement(listener, pos, sr, seed_name=name, room=room))
        return k

    starts, ends, gains, keys, inst_idx, mono_taps = [], [], [], [], [], []
    # a note's key and its (lead, length) in samples, by the key's arguments: 6,921 notes, ~1,000 keys
    key_of: dict[tuple[Any, ...], tuple[notecache.NoteKey, int, int]] = {}
    said = readings(notes, {nm: b.family for nm, b in insts.items()}, data)
    strokes = drums.timeline_strokes([n.instrument for n in notes],
                                     {nm for nm, b in insts.items() if b.family == "drum"})
    for j, n in enumerate(notes):
        body = insts[n.instrument]
        pos = moved.get((n.cue, n.instrument), body.position_m)
        hz = n.hz if body.pitched else None
        gain = source_level.velocity_gain(n.velocity) * body.level           # the waveform's level is 1
        stroke = strokes.get(j, -1)
        if stroke >= 0:                    # a drum's stroke: its own force
            gain *= drums.stroke_gain(stroke)
        if ensemble.is_ensemble(body.family, body.synth, body.performers):
            st = ensemble.settings_of(body.synth)
            offsets, levels = ensemble.rendition(synth.seed_of(n.instrument, n.cue, round(n.time, 4)),
                                                 body.performers, st)
            voices = [(i, place_index(f"{n.instrument}#{i + 1}", seat), float(offsets[i]),
                       float(levels[i]) / math.sqrt(body.performers))
                      for i, seat in enumerate(ensemble.seats(pos, body.facing, body.performers, st.seat_m))]
            # the room's diffuse tail of the whole row: one more event (heard from the row's middle)
            voices.append((TAIL, place_index(n.instrument, pos), 0.0, 1.0))
        else:
            voices = [(-1, place_index(n.instrument, pos), 0.0, 1.0)]
        for singer, k, offset_s, level in voices:
            place = placements[k]
            args = (n.instrument, body.family, hz, n.velocity, n.duration, n.lyric, said.get(j), singer,
                    n.f0_st, stroke)
            known = key_of.get(args)
            if known is None:
                nk = notecache.note_key(*args)
                known = key_of[args] = (nk, notecache.lead_samples(nk, sr),
                                        synth.length(body.family, body.synth, nk.duration_s, sr, nk.hz,
                                                     nk.reading()))
            note_key, lead, length = known
            key = PlacedKey(note_key, k if singer < 0 else -1)   # a singer's take is placed in the mix
            s = int(round((n.time + offset_s) * sr)) + place.delay_samples - lead
            e = s + length + (space.taps_extra(place) if singer >= 0 else place.length_extra)
            if e <= 0:
                continue
            starts.append(s)
            ends.append(e)
            gains.append(gain * level)
            keys.append(key)
            inst_idx.append(index[n.instrument])
            mono_taps.append(place.taps if singer >= 0 else None)
    starts_a = np.asarray(starts, dtype=np.int64)
    ends_a = np.asarray(ends, dtype=np.int64)
    total = max(int(math.ceil(timeline.duration * sr)), int(ends_a.max()) if len(ends_a) else 0)
    order = np.argsort(starts_a, kind="stable")

    def synthesise(note: notecache.NoteKey) -> npt.NDArray[np.float32]:
        body = insts[note.instrument]
        if note.singer == TAIL:            # the row's diffuse tail: the singers' takes are incoherent,
            return takes(note._replace(singer=0))    # their power sums to one take's at unit gain
        return source_level.level_normalised(notecache.note_from_key(note, body.family, body.synth, sr), sr)

    mono = SharedMono(synthesise, [k for k in keys if k.note.singer < 0])
    takes = notecache.Recent(synthesise, TAKES_BYTES)

    def make(key: PlacedKey) -> Pcm:
        if key.note.singer >= 0:           # one singer of an ensemble: mono, his seat's taps in the mix
            return to_pcm(takes(key.note))
        if key.note.singer == TAIL:
            return to_pcm(tail.apply(placements[key.place].tail, mono(key.note), sr,
                                     len(takes(key.note._replace(singer=0)))
                                     + placements[key.place].length_extra))
        return to_pcm(space.spatialise(mono(key.note), placements[key.place], sr))

    schedule: dict[Hashable, tuple[list[int], list[int]]] = {}
    for i in order:
        uses = schedule.setdefault(keys[i], ([], []))
        uses[0].append(int(starts_a[i]))
        uses[1].append(int(ends_a[i]))
    taps = {j: t for j, i in enumerate(order) if (t := mono_taps[i]) is not None}
    placed = Plan(sr, starts_a[order], ends_a[order], np.asarray(gains, np.float32)[order],
                  [keys[i] for i in order], np.asarray(inst_idx, dtype=np.int64)[order], names,
                  total,
                  notecache.NoteCache(make, schedule=schedule), taps)
    if shaped:
        shape(placed, timeline, options)
    return placed


def shape(placed: Plan, timeline: Timeline, options: Options) -> None:
    """Give ``placed`` (of ``timeline``) the gain envelopes of ``options.envelopes``, if any."""
    if options.envelopes is not None:
        placed.envelopes = by_instrument(options.envelopes(timeline, placed), placed.names,
                                         placed.sample_rate)
        placed.speech = frozenset(i for i, env in placed.envelopes.items() if env.dialogue)

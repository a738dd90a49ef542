"""Timeline → a Standard MIDI File (type 1): a conductor track, then one named track per instrument.

The messages (tuning, programs, notes) are :func:`yuexuan.formats.midimessages.timeline_messages`.
Tempo: from each cue's start a quarter note lasts the cue's ``beat_s`` (:func:`tempo_map`), so a
sequencer's beats are the cue's own syllables, notes, call steps or arrows (docs/timeline.md).
"""

from __future__ import annotations

import bisect
import math
import os
from typing import NamedTuple

import mido

from yuexuan.atomic import atomic_path
from yuexuan.formats.midimessages import CONDUCTOR, assign_tracks, timeline_messages
from yuexuan.timeline import Timeline

TICKS_PER_BEAT = 1920
MAX_TEMPO_US = 0xFFFFFF       # the longest quarter note a set_tempo event holds, µs


class TempoChange(NamedTuple):
    """From ``start_s`` on, a quarter note lasts ``tempo_us`` microseconds (a set_tempo event)."""

    start_s: float
    tempo_us: int


def tempo_map(tl: Timeline) -> list[TempoChange]:
    """One :class:`TempoChange` at each cue's start, by start time: a quarter note = the cue's
    ``beat_s``, to the microsecond. A beat longer than MIDI's longest quarter (:data:`MAX_TEMPO_US`,
    16.777215 s) is written as the fewest equal quarters that fit. 1 s a quarter with no cues."""
    changes = []
    for c in sorted(tl.cues, key=lambda c: c.start):
        us = max(1, round(c.beat_s * 1e6))
        changes.append(TempoChange(c.start, round(us / math.ceil(us / MAX_TEMPO_US))))
    return changes or [TempoChange(0.0, 1_000_000)]


class TickMap:
    """Seconds → ticks through a tempo map (:func:`tempo_map`); before its first change the
    first tempo holds from 0 s."""

    def __init__(self, changes: list[TempoChange], tpb: int = TICKS_PER_BEAT) -> None:
        self.starts, self.ticks_at, self.s_per_tick = [], [], []
        tick, prev = 0.0, TempoChange(min(0.0, changes[0].start_s), changes[0].tempo_us)
        for ch in [prev, *changes]:
            tick += (ch.start_s - prev.start_s) / (prev.tempo_us / 1e6 / tpb)
            self.starts.append(ch.start_s)
            self.ticks_at.append(tick)
            self.s_per_tick.append(ch.tempo_us / 1e6 / tpb)
            prev = ch

    def ticks(self, t: float) -> int:
        """The tick of time ``t`` (s): the last segment starting at or before it (1 ns slack)."""
        k = max(0, bisect.bisect_right(self.starts, t + 1e-9) - 1)
        return int(round(self.ticks_at[k] + (t - self.starts[k]) / self.s_per_tick[k]))


def to_midifile(tl: Timeline, pitch_bend: bool = False) -> mido.MidiFile:
    """The timeline as a type-1 MidiFile: conductor track, then one named track per instrument."""
    tempi = tempo_map(tl)
    tmap = TickMap(tempi)
    mf = mido.MidiFile(type=1, ticks_per_beat=TICKS_PER_BEAT, charset="utf-8")
    cond = [(0, mido.MetaMessage("track_name", name=CONDUCTOR))]
    cond += [(0, mido.MetaMessage("text", text=f"{tl.ceremony.name} · {tl.ceremony.rank} "
                                              f"{tl.ceremony.suspension}"
                                              f" · 黄钟 {tl.ceremony.huangzhong_hz:g} Hz · 三分损益"))]
    for change in tempi:
        cond.append((tmap.ticks(change.start_s), mido.MetaMessage("set_tempo", tempo=change.tempo_us)))
    for c in tl.cues:
        label = f"{c.id}: {c.action}{c.piece}" + (" (reconstruction)" if c.reconstruction else "")
        cond.append((tmap.ticks(c.start), mido.MetaMessage("marker", text=label)))
    per_track = {CONDUCTOR: cond}
    for tr in assign_tracks(tl):
        per_track[tr.name] = [(0, mido.MetaMessage("track_name", name=tr.name))]
    for tm in timeline_messages(tl, pitch_bend):
        per_track[tm.track].append((tmap.ticks(tm.time_s), tm.message))
    for evs in per_track.values():
        track = mido.MidiTrack()
        last = 0
        for tick, m in sorted(evs, key=lambda e: e[0]):
            track.append(m.copy(time=tick - last))
            last = tick
        track.append(mido.MetaMessage("end_of_track", time=0))
        mf.tracks.append(track)
    return mf


def write_smf(tl: Timeline, path: str | os.PathLike[str], pitch_bend: bool = False) -> None:
    """Write the timeline as a Standard MIDI File, atomically."""
    mf = to_midifile(tl, pitch_bend)
    with atomic_path(path) as tmp:
        mf.save(str(tmp))

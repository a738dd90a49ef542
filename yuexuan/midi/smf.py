"""Timeline → MIDI messages and a Standard MIDI File (type 1).

Tuning: the exact 三分损益 pitches are sent as MIDI Tuning Standard real-time single-note tuning
changes (``F0 7F 7F 08 02 …``) into tuning program 0 of bank 0, which every channel then selects with
the RPN tuning-bank (0x0004) and tuning-program (0x0003) messages, as FluidSynth requires. With
``pitch_bend=True`` each note is instead preceded by a pitch bend on its channel (bend range ±2
semitones), for synths without MTS; notes of one instrument then share that instrument's bend.

Tempo: from each cue's start a quarter note lasts the cue's ``beat_s`` (:func:`tempo_map`), so a
sequencer's beats are the cue's own syllables, notes, call steps or arrows (docs/timeline.md).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import NamedTuple

import mido

from yuexuan.atomic import atomic_path
from yuexuan.timeline import Timeline

TICKS_PER_BEAT = 1920
DRUM_CHANNEL = 9
CONDUCTOR = "乐县"            # name of track 0: tempo map, cue markers, tuning SysEx
MAX_TEMPO_US = 0xFFFFFF       # the longest quarter note a set_tempo event holds, µs
BEND_RANGE_SEMITONES = 2
TUNING_PROGRAM = 0
TUNING_BANK = 0


@dataclass(frozen=True)
class Track:
    name: str
    channel: int
    program: int | None       # GM program (None on the drum channel)


def assign_tracks(tl: Timeline) -> list:
    """One track per instrument that sounds, in instrument order; drums share channel 10."""
    sounding = {n.instrument for n in tl.notes}
    names = [n for n in tl.instrument_names() if n in sounding]
    tracks, free, by_program = [], [c for c in range(16) if c != DRUM_CHANNEL], {}
    pitched = {n.instrument for n in tl.notes if n.hz is not None}
    for name in names:
        program = tl.instruments.get(name, {}).get("gm_program")
        if name not in pitched:
            tracks.append(Track(name, DRUM_CHANNEL, None))
            continue
        if free:
            ch = free.pop(0)
            by_program.setdefault(program, ch)
        elif program in by_program:          # more than 15 pitched bodies: share by GM program
            ch = by_program[program]
        else:
            ch = len(tracks) % 15
            ch = ch + 1 if ch >= DRUM_CHANNEL else ch
        tracks.append(Track(name, ch, program if program is not None else 0))
    return tracks


def tuning_table(tl: Timeline) -> dict:
    """{MIDI key: exact Hz} for every pitched note of the timeline.

    Raises ValueError if two different frequencies would need the same key.
    """
    table = {}
    for n in tl.notes:
        if n.hz is None:
            continue
        old = table.setdefault(n.midi, n.hz)
        if abs(old - n.hz) > 1e-6 * n.hz:
            raise ValueError(f"key {n.midi} would need both {old:.3f} and {n.hz:.3f} Hz")
    return table


def mts_single_note(table: dict, program: int = TUNING_PROGRAM) -> list:
    """MTS real-time single-note tuning change SysEx messages (≤ 127 keys each)."""
    out, items = [], sorted(table.items())
    for i in range(0, len(items), 127):
        chunk = items[i:i + 127]
        data = [0x7F, 0x7F, 0x08, 0x02, program, len(chunk)]
        for key, hz in chunk:
            semis = 69.0 + 12.0 * math.log2(hz / 440.0)
            base = int(math.floor(semis))
            frac = int(round((semis - base) * 16384))
            if frac == 16384:
                base, frac = base + 1, 0
            data += [key, base, frac >> 7, frac & 0x7F]
        out.append(mido.Message("sysex", data=data))
    return out


def _rpn(channel: int, msb: int, lsb: int, value: int) -> list:
    return [mido.Message("control_change", channel=channel, control=101, value=msb),
            mido.Message("control_change", channel=channel, control=100, value=lsb),
            mido.Message("control_change", channel=channel, control=6, value=value),
            mido.Message("control_change", channel=channel, control=38, value=0),
            mido.Message("control_change", channel=channel, control=101, value=127),
            mido.Message("control_change", channel=channel, control=100, value=127)]


def setup_messages(tl: Timeline, pitch_bend: bool = False) -> list:
    """(track, Message) to send before time 0: tuning, bend range, programs."""
    tracks = assign_tracks(tl)
    out = []
    if not pitch_bend:
        out += [(CONDUCTOR, m) for m in mts_single_note(tuning_table(tl))]
    done = set()
    for tr in tracks:
        if tr.channel == DRUM_CHANNEL or tr.channel in done:
            continue
        done.add(tr.channel)
        if pitch_bend:
            out += [(tr.name, m) for m in _rpn(tr.channel, 0, 0, BEND_RANGE_SEMITONES)]
        else:
            out += [(tr.name, m) for m in _rpn(tr.channel, 0, 4, TUNING_BANK)]
            out += [(tr.name, m) for m in _rpn(tr.channel, 0, 3, TUNING_PROGRAM)]
        out.append((tr.name, mido.Message("program_change", channel=tr.channel, program=tr.program)))
    return out


def bend_value(cents: float) -> int:
    """Pitch-wheel value (-8192..8191) for an offset in cents at ±BEND_RANGE_SEMITONES."""
    return max(-8192, min(8191, int(round(cents / (100.0 * BEND_RANGE_SEMITONES) * 8192))))


class TimedMessage(NamedTuple):
    """One message of the timeline, with the cue of the note it sounds."""

    time_s: float
    track: str                   # track (instrument) name
    cue: str | None              # the note's cue id; None for the setup messages
    message: mido.Message
    onset_s: float | None = None  # onset of the note the message belongs to, s; None for setup


_OFF, _BEND, _ON = range(3)      # order of a note's messages at equal times


def timeline_messages(tl: Timeline, pitch_bend: bool = False) -> list:
    """Every message of the timeline as :class:`TimedMessage` records, time-sorted.

    Setup messages (tuning, programs; cue None) come first at time 0. A note's pitch bend,
    note-on and note-off carry its cue and onset. At equal times note-offs precede note-ons.
    Timing is taken from the Timeline and nothing else.
    """
    tracks = {t.name: t for t in assign_tracks(tl)}
    out = [TimedMessage(0.0, name, None, m) for name, m in setup_messages(tl, pitch_bend)]
    keyed = []                   # ((time_s, order, note index), TimedMessage)
    for i, n in enumerate(tl.notes):
        # a spoken call (hz None) of a singing voice goes to the drum channel, which selects no
        # tuning program: its key is never retuned (docs/timeline.md, "Spoken calls")
        ch = DRUM_CHANNEL if n.hz is None else tracks[n.instrument].channel
        if pitch_bend and n.cents is not None:
            bend = mido.Message("pitchwheel", channel=ch, pitch=bend_value(n.cents))
            keyed.append(((n.time, _BEND, i),
                          TimedMessage(n.time, n.instrument, n.cue, bend, n.time)))
        on = mido.Message("note_on", channel=ch, note=n.midi, velocity=n.velocity)
        keyed.append(((n.time, _ON, i), TimedMessage(n.time, n.instrument, n.cue, on, n.time)))
        off = mido.Message("note_off", channel=ch, note=n.midi, velocity=0)
        end = n.time + n.duration
        keyed.append(((end, _OFF, i), TimedMessage(end, n.instrument, n.cue, off, n.time)))
    keyed.sort(key=lambda pair: pair[0])
    return out + [message for _, message in keyed]


class TempoChange(NamedTuple):
    """From ``start_s`` on, a quarter note lasts ``tempo_us`` microseconds (a set_tempo event)."""

    start_s: float
    tempo_us: int


def tempo_map(tl: Timeline) -> list:
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

    def __init__(self, changes: list, tpb: int = TICKS_PER_BEAT):
        self.starts, self.ticks_at, self.s_per_tick = [], [], []
        tick, prev = 0.0, TempoChange(min(0.0, changes[0].start_s), changes[0].tempo_us)
        for ch in [prev] + list(changes):
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
    cond += [(0, mido.MetaMessage("text", text=f"{tl.ceremony.name} · {tl.ceremony.rank} {tl.ceremony.suspension}"
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
    for name, evs in per_track.items():
        track = mido.MidiTrack()
        last = 0
        for tick, m in sorted(evs, key=lambda e: e[0]):
            track.append(m.copy(time=tick - last))
            last = tick
        track.append(mido.MetaMessage("end_of_track", time=0))
        mf.tracks.append(track)
    return mf


def write_smf(tl: Timeline, path, pitch_bend: bool = False) -> None:
    """Write the timeline as a Standard MIDI File, atomically."""
    mf = to_midifile(tl, pitch_bend)
    with atomic_path(path) as tmp:
        mf.save(str(tmp))

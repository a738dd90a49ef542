"""Timeline → MIDI messages: tracks and channels, the tuning, each note's messages in time order.

Shared by the Standard MIDI File (:mod:`yuexuan.midi.smf`) and the live show (:mod:`yuexuan.live`).

Tuning: the exact 三分损益 pitches are sent as MIDI Tuning Standard real-time single-note tuning
changes (``F0 7F 7F 08 02 …``) into tuning program 0 of bank 0, which every channel then selects with
the RPN tuning-bank (0x0004) and tuning-program (0x0003) messages, as FluidSynth requires. With
``pitch_bend=True`` each note is instead preceded by a pitch bend on its channel (bend range ±2
semitones), for synths without MTS; notes of one instrument then share that instrument's bend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import mido
import numpy as np

from yuexuan.timeline import Timeline
from yuexuan.timeline_checks import key_clash

DRUM_CHANNEL = 9
CONDUCTOR = "乐县"            # name of track 0: tempo map, cue markers, tuning SysEx
BEND_RANGE_SEMITONES = 2
TUNING_PROGRAM = 0
TUNING_BANK = 0


@dataclass(frozen=True)
class Track:
    name: str
    channel: int
    program: int | None       # GM program (None on the drum channel)


def assign_tracks(tl: Timeline) -> list[Track]:
    """One track per instrument that sounds, in instrument order; drums share channel 10."""
    sounding = {n.instrument for n in tl.notes}
    names = [n for n in tl.instrument_names() if n in sounding]
    tracks: list[Track] = []
    free = [c for c in range(16) if c != DRUM_CHANNEL]
    by_program: dict[int | None, int] = {}
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


def tuning_table(tl: Timeline) -> dict[int, float]:
    """{MIDI key: exact Hz} for every pitched note of the timeline.

    One Hz per key is a rule of the timeline itself (:func:`yuexuan.timeline_checks.key_clash`):
    the loader refuses a saved timeline that breaks it, in one line naming the note, and the
    compiler puts the twelve 律 on twelve keys. A Timeline built in code that breaks it is a
    programming error: ValueError.
    """
    hz = np.array([math.nan if n.hz is None else n.hz for n in tl.notes], dtype=float)
    clash = key_clash([n.midi for n in tl.notes], hz)
    if clash is not None:
        i, k = clash
        raise ValueError(f"notes[{k}]: key {tl.notes[k].midi} would need both {hz[i]:.3f} and "
                         f"{hz[k]:.3f} Hz (notes[{i}])")
    return {n.midi: n.hz for n in reversed(tl.notes) if n.hz is not None}   # each key's first note


def mts_single_note(table: dict[int, float], program: int = TUNING_PROGRAM) -> list[mido.Message]:
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


def _rpn(channel: int, msb: int, lsb: int, value: int) -> list[mido.Message]:
    return [mido.Message("control_change", channel=channel, control=101, value=msb),
            mido.Message("control_change", channel=channel, control=100, value=lsb),
            mido.Message("control_change", channel=channel, control=6, value=value),
            mido.Message("control_change", channel=channel, control=38, value=0),
            mido.Message("control_change", channel=channel, control=101, value=127),
            mido.Message("control_change", channel=channel, control=100, value=127)]


def setup_messages(tl: Timeline, pitch_bend: bool = False) -> list[tuple[str, mido.Message]]:
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


def timeline_messages(tl: Timeline, pitch_bend: bool = False) -> list[TimedMessage]:
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

"""What the live show puts on the scheduler's queue: a :class:`Payload` of one :class:`Kind`."""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple


class Kind(IntEnum):
    """What a queued payload (or a cue's event) is."""

    ON = 0          # a note-on of a cue
    OFF = 1         # a note-off of a cue
    OTHER = 2       # any other message of a cue (pitch bend)
    START = 3       # a cue starts playing
    END = 4         # a cue has played to its end
    CUT = 5         # a soft stop ends a cue here
    CLOCK = 6       # a MIDI clock byte (start, continue or pulse)
    MTC = 7         # an MTC quarter frame (data = its index)
    REFILL = 8      # time to queue the next stretch of clock pulses and quarter frames


CUE_KINDS = frozenset({Kind.ON, Kind.OFF, Kind.OTHER, Kind.START, Kind.END, Kind.CUT})
SYNC_KINDS = frozenset({Kind.CLOCK, Kind.MTC, Kind.REFILL})


class Payload(NamedTuple):
    """One queued item; due at its run's anchor + ``t`` (cue kinds) or the show anchor + ``t``."""

    gen: int | None              # generation it belongs to; stale ones are ignored
    t: float                     # timeline seconds (cue kinds) or show seconds (sync kinds)
    cue: str | None              # cue id (cue kinds)
    kind: Kind
    data: tuple | int | None = None   # raw bytes; the quarter-frame index for MTC
    key: tuple | None = None     # (channel, note) for ON/OFF

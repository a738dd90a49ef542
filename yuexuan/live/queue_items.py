"""What the live show puts on the scheduler's queue: a :class:`Payload` of one :class:`Kind`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import Any, NamedTuple

#: one raw MIDI message: its bytes
RawMessage = tuple[int, ...]
#: delivers one raw message to the rig; False: it was dropped
Send = Callable[[Sequence[int]], bool]


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
    data: RawMessage | int | None = None   # raw bytes; the quarter-frame index for MTC; None: a marker
    key: tuple[Any, ...] | None = None     # (channel, note) for ON/OFF; (tag, Beat) for a beat marker

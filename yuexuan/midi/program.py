"""What the live show plays: the setup messages and each selected cue's events.

Built from the :class:`yuexuan.midi.smf.TimedMessage` records of
:func:`yuexuan.midi.smf.timeline_messages`, each of which names the cue of its note: nothing
here works out a message's cue from times.
"""

from __future__ import annotations

from dataclasses import dataclass

from yuexuan.errors import UserError
from yuexuan.midi.queue_items import Kind
from yuexuan.timeline import chosen_cues


@dataclass(frozen=True)
class Event:
    """One message of a cue: timeline time ``t`` (s), raw bytes, note-on/off bookkeeping key."""

    t: float
    cue: str
    kind: Kind                   # ON | OFF | OTHER
    data: tuple
    key: tuple | None = None     # (channel, note) for ON/OFF


@dataclass(frozen=True)
class Program:
    """What the show plays: setup messages (tuning, programs) and each cue's events."""

    cues: tuple                  # selected Cue objects, timeline order
    setup: tuple                 # raw messages sent before anything (and again on port return)
    events: dict                 # cue id -> list[Event], time-sorted
    channels: tuple              # MIDI channels (0-based) the show uses


def message_kind(msg) -> Kind:
    """ON for a sounding note-on, OFF for a note-off (or a note-on at velocity 0), else OTHER."""
    if msg.type == "note_on" and msg.velocity > 0:
        return Kind.ON
    if msg.type in ("note_on", "note_off"):
        return Kind.OFF
    return Kind.OTHER


def select_cues(timeline, cue_ids=None, from_s=None, until_s=None) -> list:
    """The cues of ``cue_ids`` (all when None) that overlap the window [from_s, until_s)."""
    chosen = timeline.cues if cue_ids is None else chosen_cues(timeline, cue_ids)
    if from_s is not None and until_s is not None and until_s <= from_s:
        raise UserError(f"--until ({until_s}) must be after --from ({from_s})", key="--until")
    lo = float("-inf") if from_s is None else from_s
    hi = float("inf") if until_s is None else until_s
    cues = [c for c in chosen if c.end > lo and c.start < hi]
    if not cues:
        raise UserError("no cue in the selected window", key="--cues")
    return cues


def build_program(timeline, messages, cue_ids=None, from_s=None, until_s=None) -> Program:
    """Split ``timeline_messages`` records into setup messages and per-cue events.

    Setup = the records without a cue (tuning, banks, programs), sent before anything and again
    when a lost port returns. Every other record goes to the cue it names; ``from_s`` /
    ``until_s`` keep the notes whose onset lies in [from_s, until_s), with their note-offs.
    """
    cues = select_cues(timeline, cue_ids, from_s, until_s)
    lo = float("-inf") if from_s is None else from_s
    hi = float("inf") if until_s is None else until_s
    setup, events, channels = [], {c.id: [] for c in cues}, set()
    for rec in messages:
        msg = rec.message
        if rec.cue is None:
            setup.append(tuple(msg.bytes()))
        elif rec.cue in events and lo <= rec.onset_s < hi:
            kind = message_kind(msg)
            key = (msg.channel, msg.note) if kind in (Kind.ON, Kind.OFF) else None
            events[rec.cue].append(Event(float(rec.time_s), rec.cue, kind, tuple(msg.bytes()),
                                         key))
        else:
            continue
        if hasattr(msg, "channel"):
            channels.add(msg.channel)
    for evs in events.values():
        evs.sort(key=lambda e: (e.t, e.kind != Kind.OFF))
    return Program(tuple(cues), tuple(setup), events, tuple(sorted(channels)))

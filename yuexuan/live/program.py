"""What the live show plays: the setup messages and each selected cue's events.

Built from the :class:`yuexuan.formats.midimessages.TimedMessage` records of
:func:`yuexuan.formats.midimessages.timeline_messages`, each of which names the cue of its note: nothing
here works out a message's cue from times.

The window (``play --from TIME --until TIME``, for a rehearsal started part-way): TIME is
seconds of the timeline played (``1136.5``; with ``--cues``, of the selection: 0 is the first
selected cue's start, the spaces between cues the ceremony's unless ``--compact``) or a cue id with
an offset in seconds from its start (``lishou``, ``lishou+30``, ``lishou-2.5``), resolved by
:func:`window_time`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from yuexuan.errors import UserError, unknown_cue
from yuexuan.formats.midimessages import TimedMessage
from yuexuan.live.queue_items import Kind, RawMessage
from yuexuan.timeline import Cue, Timeline, chosen_cues


@dataclass(frozen=True)
class Event:
    """One message of a cue: timeline time ``t`` (s), raw bytes, note-on/off bookkeeping key."""

    t: float
    cue: str
    kind: Kind                   # ON | OFF | OTHER
    data: RawMessage
    key: tuple[int, int] | None = None     # (channel, note) for ON/OFF


@dataclass(frozen=True)
class Program:
    """What the show plays: setup messages (tuning, programs) and each cue's events."""

    cues: tuple[Cue, ...]        # selected Cue objects, timeline order
    setup: tuple[RawMessage, ...]  # raw messages sent before anything (and again on port return)
    events: dict[str, list[Event]]  # cue id -> its events, time-sorted
    channels: tuple[int, ...]    # MIDI channels (0-based) the show uses
    from_s: float | None = None  # the window, timeline s (--from, --until resolved)
    until_s: float | None = None


def message_kind(msg: Any) -> Kind:      # a mido.Message (mido has no type hints)
    """ON for a sounding note-on, OFF for a note-off (or a note-on at velocity 0), else OTHER."""
    if msg.type == "note_on" and msg.velocity > 0:
        return Kind.ON
    if msg.type in ("note_on", "note_off"):
        return Kind.OFF
    return Kind.OTHER


def window_time(timeline: Timeline, value: str | float | None, option: str = "--from") -> float | None:
    """``value`` (None, seconds, or text: seconds, ``CUE``, ``CUE+S``, ``CUE-S``) as seconds of
    ``timeline`` (a selection's, not the whole ceremony's). A cue id is the one error
    :func:`yuexuan.errors.unknown_cue` when unknown; an offset past the cue's end is refused (a
    rehearsal starts inside the cue it names)."""
    if value is None or isinstance(value, (int, float)):
        seconds = None if value is None else float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            seconds = _cue_time(timeline, text, option)
    if seconds is not None and not math.isfinite(seconds):
        raise UserError(f"expected timeline seconds or CUE[+S], got {value!r}", key=option)
    return seconds


def _cue_time(timeline: Timeline, text: str, option: str) -> float:
    """``CUE``, ``CUE+S`` or ``CUE-S``: the cue's start plus the offset (s). The cue id is the
    longest prefix before a sign that names a cue, so ids holding ``-`` or ``+`` work too."""
    ids = timeline.cue_names()                          # ids and aliases (a 天子's zouyu is lishou too)
    cut = len(text) if text in ids else next(
        (i for i in range(len(text) - 1, 0, -1) if text[i] in "+-" and text[:i].strip() in ids),
        None)
    if cut is None:
        raise unknown_cue(re.split(r"[+-]", text, maxsplit=1)[0].strip() or text, list(ids), key=option)
    cue_id = text[:cut].strip()
    cue = timeline.cue(cue_id)
    try:
        offset = float(text[cut] + text[cut + 1:].strip()) if cut < len(text) else 0.0
    except ValueError:
        raise UserError(f"{text!r}: the offset after {cue_id!r} must be seconds "
                        f"(e.g. {cue_id}+30)", key=option) from None
    if not math.isfinite(offset):
        raise UserError(f"{text!r}: the offset must be a finite number of seconds", key=option)
    if offset > cue.end - cue.start:
        raise UserError(f"{text!r} is past the end of cue {cue_id!r} "
                        f"({cue.end - cue.start:.1f} s long)", key=option)
    return cue.start + offset


def select_cues(timeline: Timeline, cue_ids: Iterable[str] | None = None, from_s: float | None = None,
                until_s: float | None = None) -> list[Cue]:
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


def build_program(timeline: Timeline, messages: Iterable[TimedMessage], cue_ids: Iterable[str] | None = None,
                  from_s: str | float | None = None, until_s: str | float | None = None) -> Program:
    """Split ``timeline_messages`` records into setup messages and per-cue events.

    Setup = the records without a cue (tuning, banks, programs), sent before anything and again
    when a lost port returns. Every other record goes to the cue it names; ``from_s`` /
    ``until_s`` (seconds or ``CUE[+S]``, :func:`window_time`) keep the notes whose onset lies in
    [from_s, until_s), with their note-offs.
    """
    from_s = window_time(timeline, from_s, "--from")
    until_s = window_time(timeline, until_s, "--until")
    cues = select_cues(timeline, cue_ids, from_s, until_s)
    lo = float("-inf") if from_s is None else from_s
    hi = float("inf") if until_s is None else until_s
    setup: list[RawMessage] = []
    events: dict[str, list[Event]] = {c.id: [] for c in cues}
    channels: set[int] = set()
    for rec in messages:
        msg = rec.message
        if rec.cue is None:
            setup.append(tuple(msg.bytes()))
        elif rec.cue in events and rec.onset_s is not None and lo <= rec.onset_s < hi:
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
    return Program(tuple(cues), tuple(setup), events, tuple(sorted(channels)), from_s, until_s)

"""Sync for other gear: MIDI clock (24 ppqn), MIDI Time Code, MIDI Show Control; trigger matching.

Pure encoders, decoders and pulse times; the show's sync streams (:mod:`yuexuan.live.clock_out`)
send them. Times are seconds on the show clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mido
import numpy as np
import numpy.typing as npt

from yuexuan.errors import UserError

PPQN = 24                       # MIDI clock pulses per quarter note
MTC_RATES = {24: 0, 25: 1, 30: 3}   # frames per second -> MTC rate code (29.97 drop-frame unused)

# MIDI Show Control (MMA MSC 1.0): F0 7F <device> 02 <command format> <command> <data> F7
MSC_ALL_CALL = 0x7F
MSC_LIGHTING = 0x01             # command format "Lighting (General)"
MSC_COMMANDS = {"go": 0x01, "stop": 0x02, "resume": 0x03, "all_off": 0x08}
_MSC_NAMES = {v: k for k, v in MSC_COMMANDS.items()}


# -- MIDI clock ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClockSegment:
    """From show time ``start_s`` on, the clock runs at ``beat_s`` seconds a quarter note."""

    start_s: float
    beat_s: float


def beat_s_of_bpm(bpm: float) -> float:
    """Seconds a quarter note lasts at ``bpm`` (the ``--bpm`` override of the clock)."""
    if not bpm > 0:
        raise UserError(f"clock tempo must be above 0 BPM, got {bpm}", key="--bpm")
    return 60.0 / bpm


def clock_period_s(beat_s: float) -> float:
    """Seconds between MIDI clock pulses for a quarter note of ``beat_s`` seconds."""
    if not beat_s > 0:
        raise ValueError(f"a clock beat must be above 0 s, got {beat_s}")
    return beat_s / PPQN


def _pulse_index(origin_s: float, period_s: float, t_s: float) -> int:
    """Index of the first pulse at or after ``t_s`` on the grid ``origin_s + k·period_s``."""
    return max(0, int(np.ceil((t_s - origin_s) / period_s - 1e-9)))


def clock_times(start_s: float, end_s: float, beat_s: float,
                origin_s: float | None = None) -> npt.NDArray[np.floating[Any]]:
    """Times (s) of the clock pulses in [start_s, end_s) at ``beat_s`` seconds a quarter note.

    The pulses lie on the grid ``origin_s + k·beat_s/24`` (``origin_s`` defaults to
    ``start_s``, which then has the first pulse); adjacent windows share no pulse.
    """
    period = clock_period_s(beat_s)
    origin = start_s if origin_s is None else origin_s
    return origin + period * np.arange(_pulse_index(origin, period, start_s),
                                       _pulse_index(origin, period, end_s))


def cue_clock_times(segments: Sequence[ClockSegment], start_s: float,
                    end_s: float) -> npt.NDArray[np.floating[Any]]:
    """Pulse times (s) in [start_s, end_s) of a clock whose tempo follows ``segments``.

    ``segments`` (:class:`ClockSegment`, by start) each run until the next one starts, their
    pulses on a grid from their own start (a cue's first pulse falls on its first beat).
    """
    parts: list[npt.NDArray[np.floating[Any]]] = [np.empty(0)]
    for seg, nxt in zip(segments, [*segments[1:], None]):
        lo = max(start_s, seg.start_s)
        hi = end_s if nxt is None else min(end_s, nxt.start_s)
        if lo < hi:
            parts.append(clock_times(lo, hi, seg.beat_s, origin_s=seg.start_s))
    return np.concatenate(parts)


# -- MIDI Time Code --------------------------------------------------------------------------
def _check_fps(fps: int) -> int:
    if fps not in MTC_RATES:
        raise UserError(f"MTC frame rate must be one of {sorted(MTC_RATES)}, got {fps}",
                        key="--mtc-fps")
    return fps


def timecode(frame: int, fps: int) -> tuple[int, int, int, int]:
    """(hours, minutes, seconds, frames) of frame number ``frame`` (non-drop)."""
    ff = frame % fps
    total_s = frame // fps
    return (total_s // 3600) % 24, (total_s // 60) % 60, total_s % 60, ff


def mtc_full_frame(seconds: float, fps: int = 25) -> mido.Message:
    """Full-frame MTC SysEx locating a receiver at ``seconds`` (floored to a frame)."""
    fps = _check_fps(fps)
    hh, mm, ss, ff = timecode(int(np.floor(seconds * fps + 1e-9)), fps)
    return mido.Message("sysex", data=[0x7F, 0x7F, 0x01, 0x01,
                                       (MTC_RATES[fps] << 5) | hh, mm, ss, ff])


def mtc_quarter_frame(index: int, fps: int = 25) -> mido.Message:
    """Quarter frame number ``index`` counted from 00:00:00:00 (four per frame).

    Piece ``index % 8`` carries a nibble of the timecode of the frame at which piece 0 of its
    eight-piece cycle was sent, as the MTC specification has it.
    """
    fps = _check_fps(fps)
    piece = index % 8
    hh, mm, ss, ff = timecode((index - piece) // 4, fps)
    if piece < 6:
        field = (ff, ss, mm)[piece // 2]
        value = field >> 4 if piece % 2 else field & 0x0F
    elif piece == 6:
        value = hh & 0x0F
    else:
        value = (MTC_RATES[fps] << 1) | (hh >> 4)
    return mido.Message("quarter_frame", frame_type=piece, frame_value=value)


def mtc_index_at(seconds: float, fps: int = 25) -> int:
    """The first quarter-frame index due at or after ``seconds``."""
    return int(np.ceil(seconds * 4 * _check_fps(fps) - 1e-9))


def mtc_first_index(seconds: float, fps: int = 25) -> int:
    """The first quarter-frame index at or after ``seconds`` that starts a cycle (piece 0)."""
    k = mtc_index_at(seconds, fps)
    return k + (-k) % 8


def mtc_index_time(index: int, fps: int = 25) -> float:
    """Show time (s) at which quarter frame ``index`` is due."""
    return index / (4.0 * fps)


# -- MIDI Show Control -----------------------------------------------------------------------
def msc_message(command: str, device: int, cue_number: str | int | None = None,
                command_format: int = MSC_LIGHTING) -> mido.Message:
    """An MSC SysEx: ``command`` is go, stop, resume or all_off; ``cue_number`` as ASCII."""
    if not 0 <= device <= 0x7F:
        raise UserError(f"MSC device id must be 0..127, got {device}", key="--msc")
    data = [0x7F, device, 0x02, command_format, MSC_COMMANDS[command]]
    if cue_number is not None:
        data += list(str(cue_number).encode("ascii"))
    return mido.Message("sysex", data=data)


def parse_msc(message: mido.Message, device: int | None = None) -> tuple[str, str | None] | None:
    """``(command, cue_number)`` of an MSC SysEx addressed to ``device`` (or all-call).

    ``device`` None accepts any device id. Returns None for anything else.
    """
    if message.type != "sysex":
        return None
    d = list(message.data)
    if len(d) < 5 or d[0] != 0x7F or d[2] != 0x02:
        return None
    if device is not None and d[1] not in (device, MSC_ALL_CALL):
        return None
    name = _MSC_NAMES.get(d[4])
    if name is None:
        return None
    rest = bytes(d[5:]).split(b"\x00")[0]
    return name, (rest.decode("ascii", "replace") or None)


# -- foot-switch triggers --------------------------------------------------------------------
@dataclass(frozen=True)
class Trigger:
    """An incoming MIDI event that means a command: a note-on, or a CC at value >= 64."""

    kind: str                  # note | cc
    number: int
    channel: int | None = None  # 0-based; None = any


def parse_trigger(text: str, option: str = "--go-midi") -> Trigger:
    """``note:60``, ``cc:64`` or with a channel (1-based) ``cc:64@1``."""
    body, _, chan = text.partition("@")
    kind, _, num = body.partition(":")
    try:
        number = int(num)
        channel = int(chan) - 1 if chan else None
    except ValueError:
        number, channel = -1, None
    if kind not in ("note", "cc") or not 0 <= number <= 127 or (
            channel is not None and not 0 <= channel <= 15):
        raise UserError(f"expected note:N or cc:N (N 0..127, optional @channel 1..16), "
                        f"got {text!r}", key=option)
    return Trigger(kind, number, channel)


def matches(trigger: Trigger, message: mido.Message) -> bool:
    """True when ``message`` fires ``trigger`` (note-on with velocity > 0; CC value >= 64)."""
    if trigger.channel is not None and getattr(message, "channel", None) != trigger.channel:
        return False
    if trigger.kind == "note":
        return message.type == "note_on" and message.note == trigger.number and message.velocity > 0
    return (message.type == "control_change" and message.control == trigger.number
            and message.value >= 64)


MSC_SHOW_COMMANDS = {"go": "go", "stop": "stop", "resume": "resume", "all_off": "panic"}   # MSC → show


def command_for_midi(data: Sequence[int], go: Trigger, stop: Trigger,
                     msc_device: int | None) -> str | None:
    """The show command an incoming raw message fires (an MSC command to ``msc_device``, the
    GO or the soft-stop trigger), or None."""
    try:
        msg = mido.Message.from_bytes(list(data))
    except ValueError:
        return None
    msc = parse_msc(msg, msc_device)
    if msc is not None:
        return MSC_SHOW_COMMANDS[msc[0]]
    if matches(go, msg):
        return "go"
    return "stop" if matches(stop, msg) else None

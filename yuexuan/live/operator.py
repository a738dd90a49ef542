"""The operator's terminal: a pure status text and a pure key handler.

Keys: space, g or Enter — GO; s — soft stop (乐阕 at the phrase end); h — hold/resume;
p or ! — PANIC; q — quit. Input that is not a terminal is read by lines, each line a key or a
word (go, stop, hold, resume, panic, quit), so a script or a test can drive the show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yuexuan.timeline import Cue

KEYS = {" ": "go", "g": "go", "\n": "go", "\r": "go", "s": "stop", "h": "toggle-hold",
        "p": "panic", "!": "panic", "q": "quit"}
WORDS = {"go", "stop", "hold", "resume", "panic", "quit", "toggle-hold"}
HELP = "[space/g] GO   [s] soft stop (乐阕)   [h] hold/resume   [p] PANIC   [q] quit"


@dataclass(frozen=True)
class Status:
    """A snapshot of the show for the operator's screen (:meth:`yuexuan.live.show.Show.status`)."""

    state: str                   # waiting | playing | stopping | held | stopped | done
    cue: Cue | None              # the Cue playing (or last played)
    position_s: float | None     # timeline seconds within the current cue
    stop_at_s: float | None      # where a soft stop will end it (timeline s)
    next_cue: Cue | None
    auto: bool
    port: str
    port_ok: bool
    sent: int
    dropped: int
    notices: tuple[str, ...]     # the latest few notices
    notice_count: int            # notices so far (to tell the new ones)


def command_for_key(key: str) -> str | None:
    """The command a key press means, or None."""
    return KEYS.get(key if key in KEYS else key.lower())


def command_for_line(line: str) -> str | None:
    """The command a line of text means (a word, or a key), or None."""
    word = line.strip().lower()
    if word in WORDS:
        return word
    if line in ("\n", "\r\n"):
        return "go"
    return command_for_key(word[:1]) if len(word) == 1 else None


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--.-"
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    return f"{sign}{int(s // 60):02d}:{s % 60:04.1f}"


def render(status: Status, width: int = 78, judged: tuple[str, ...] = ()) -> str:
    """The status screen as plain text (no escape codes); ``judged``: the live judge's latest
    lines (verdicts, tallies, bad messages), shown under the cues."""
    rule = "─" * width
    lines = [f"乐县 yuexuan play — {status.state.upper()}"
             + ("   (auto)" if status.auto else ""), rule]
    cue = status.cue
    if cue is not None and status.state in ("playing", "stopping", "held"):
        lines.append(f"NOW   {cue.id}  {cue.action}{cue.piece}   "
                     f"{_clock(status.position_s)} of {_clock(cue.end)}")
        if cue.source:
            lines.append(f"      {cue.source}")
        if status.stop_at_s is not None:
            lines.append(f"      乐阕 at {_clock(status.stop_at_s)} (end of the phrase)")
        elif cue.open_ended and cue.ends_when:
            lines.append(f"      open-ended: soft stop (乐阕) when {cue.ends_when}")
    elif cue is not None:
        lines.append(f"LAST  {cue.id}  {cue.action}{cue.piece} (ended)")
    else:
        lines.append("NOW   (silence)")
    nxt = status.next_cue
    if nxt is not None:
        lines.append(f"NEXT  {nxt.id}  {nxt.action}{nxt.piece}")
        if nxt.starts_when:
            lines.append(f"      GO when {nxt.starts_when}")
    elif status.state != "done":
        lines.append("NEXT  (end of the programme)")
    lines.append(rule)
    if judged:
        lines.extend(f"  {j}" for j in judged)
        lines.append(rule)
    port = status.port + ("" if status.port_ok else "  — GONE, waiting for it to return")
    lines.append(f"out: {port}   sent {status.sent}"
                 + (f", dropped {status.dropped}" if status.dropped else ""))
    lines.extend(f"» {n}" for n in status.notices)
    lines.append(HELP)
    return "\n".join(lines)

"""The operator's terminal: a pure status screen and a pure key handler.

Keys: space, g or Enter — GO; s — soft stop (乐阕 at the phrase end); h — hold/resume;
p or ! — PANIC; q twice within :data:`QUIT_WITHIN_S` — quit. Input that is not a terminal is read
by lines, each line a key or a word (go, stop, hold, resume, panic, quit), so a script or a test
can drive the show.

:func:`render` fits the screen to the terminal: never more lines than its rows (the least
needed lines give way first: quotes, older verdicts, older notices, rules), every line cut to its
columns, counted in cells (a CJK character takes two, prompt_toolkit's ``get_cwidth``), and
control characters a sender put in a name shown as ``?`` (they would move the cursor).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yuexuan.timeline import Cue

KEYS = {" ": "go", "g": "go", "\n": "go", "\r": "go", "s": "stop", "h": "toggle-hold",
        "p": "panic", "!": "panic", "q": "quit"}
WORDS = {"go", "stop", "hold", "resume", "panic", "quit", "toggle-hold"}
HELP = "[space/g] GO   [s] soft stop (乐阕)   [h] hold/resume   [p] PANIC   [q q] quit"
QUIT_WITHIN_S = 2.0          # a quit is asked twice: the second q within this many seconds
ROWS, COLUMNS = 24, 80       # the screen's size when the terminal's is not known
LANGS = ("zh", "en", "both")  # play --lang: the cues' words in Chinese, English or both
BOTH_FROM_COLUMNS = 100      # --lang's default is both from this width on, else zh


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
    next_stroke: tuple[float, str] | None = None   # (seconds to it, "上耦下射, 节 4")
    server_ok: bool = True       # --api jack: the JACK server is there
    notes_dropped: int = 0       # note-ons that could not be sent (port or server gone)


@dataclass(frozen=True)
class Judging:
    """What live judging puts on the screen (:func:`render`): the latest verdict lines and the
    rounds' tallies (never pushed off by bad input), bad input as one counter line, the input's
    and the log's health, and the latest notices (refusals, remote commands with their source)."""

    verdicts: tuple[str, ...] = ()
    tallies: tuple[str, ...] = ()
    bad: str | None = None           # e.g. "bad input: 8 messages (last: …)"
    health: tuple[str, ...] = ()     # listening address, refused/dropped counts, log state
    notices: tuple[str, ...] = ()


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


def default_lang(columns: int) -> str:
    """``--lang``'s default for a terminal ``columns`` wide: both where there is room."""
    return "both" if columns >= BOTH_FROM_COLUMNS else "zh"


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--.-"
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    return f"{sign}{int(s // 60):02d}:{s % 60:04.1f}"


def cells(text: str) -> int:
    """The terminal cells ``text`` takes (a CJK character two: prompt_toolkit's ``get_cwidth``,
    imported on first use, so that ``play`` without a terminal never loads prompt_toolkit)."""
    from prompt_toolkit.utils import get_cwidth
    return sum(get_cwidth(c) for c in text)


def printable(text: str) -> str:
    """``text`` with each control or format character (escape, newline, bidi marks …) as ``?``:
    what a sender puts in a name must not move the operator's cursor or start a new line."""
    return "".join("?" if unicodedata.category(c) in ("Cc", "Cf") else c for c in text)


def cut(text: str, columns: int) -> str:
    """``text`` (printable) cut to ``columns`` terminal cells; a cut line ends with ``…``."""
    if cells(text) <= columns:
        return text
    out, used = [], 0
    for c in text:
        w = cells(c)
        if used + w > columns - 1:
            break
        out.append(c)
        used += w
    return "".join(out) + "…"


def keep_end(text: str, columns: int, sep: str = "  ", most: int = 24) -> str:
    """``text`` cut to ``columns`` cells in its middle, so that what follows its last ``sep``
    (a verdict line's "算 释" or "· 不鼓不释", at most ``most`` cells) stays on the screen."""
    head, _, end = text.rpartition(sep)
    width = cells(end)
    if not head or width > most or cells(text) <= columns:
        return text
    return cut(head, columns - width - len(sep)) + sep + end      # cut() ends it with …


# line priorities: when the screen has too few rows, the lowest go first (the oldest of equals)
MUST, TALLY, NEXT_HINT, NOTICE, VERDICT, QUOTE, RULE = 9.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0


def render(status: Status, width: int = COLUMNS, judged: tuple[str, ...] | Judging = (),
           height: int | None = None, listening: str | None = None, lang: str = "zh") -> str:
    """The status screen as plain text (no escape codes), at most ``height`` lines (all of them
    when None), each at most ``width`` cells. ``judged``: live judging's lines (a
    :class:`Judging`, or plain lines shown as verdicts); ``listening``: where OSC comes in;
    ``lang`` (:data:`LANGS`): the cues' quotes and conditions in Chinese (the text's own), in
    English (each cue's gloss, ``starts_when_en``/``ends_when_en``) or both.

    Two clocks: the ``cue clock`` (head line) runs from the cue's start, of its length; the
    ``show clock`` (NOW line) is the timeline's, of the time the cue ends."""
    zh, en = lang in ("zh", "both"), lang in ("en", "both")
    j = judged if isinstance(judged, Judging) else Judging(verdicts=tuple(judged))
    lines: list[tuple[float, str]] = []

    def add(prio: float, text: str) -> None:
        lines.append((prio, text))

    cue = status.cue
    playing = cue is not None and status.state in ("playing", "stopping", "held")
    head = f"乐县 yuexuan play — {status.state.upper()}" + ("   (auto)" if status.auto else "")
    if playing and cue is not None and status.position_s is not None:
        head += f"   cue clock {_clock(status.position_s - cue.start)} of {_clock(cue.end - cue.start)}"
    add(MUST, head)
    rule = "─" * width
    add(RULE, rule)
    if playing and cue is not None:
        add(MUST, f"NOW   {cue.id}  {cue.action}{cue.piece}   "
                  f"show clock {_clock(status.position_s)} of {_clock(cue.end)}")
        if zh and cue.source:
            add(QUOTE, f"      {cue.source}")
        if en and cue.gloss:
            add(NEXT_HINT, f"      {cue.gloss}")
        if status.stop_at_s is not None:
            add(MUST, f"      乐阕 at {_clock(status.stop_at_s)} (end of the phrase)")
        elif cue.open_ended:
            for when in (cue.ends_when if zh else "", cue.ends_when_en if en else ""):
                if when:
                    add(NEXT_HINT, f"      open-ended: soft stop (乐阕) when {when}")
    elif cue is not None:
        add(MUST, f"LAST  {cue.id}  {cue.action}{cue.piece} (ended)")
    else:
        add(MUST, "NOW   (silence)")
    if status.next_stroke is not None:
        in_s, what = status.next_stroke
        add(MUST, f"NEXT STROKE in {in_s:.1f} s: {what}")
    elif status.state == "held":
        add(MUST, "NEXT STROKE  — (held)")
    elif playing:
        add(MUST, "NEXT STROKE  — (no 射节 stroke left in this cue)")
    nxt = status.next_cue
    if nxt is not None:
        add(MUST, f"NEXT  {nxt.id}  {nxt.action}{nxt.piece}")
        if en and nxt.gloss:
            add(NEXT_HINT, f"      {nxt.gloss}")
        for when in (nxt.starts_when if zh else "", nxt.starts_when_en if en else ""):
            if when:
                add(NEXT_HINT, f"      GO when {when}")
    elif status.state != "done":
        add(MUST, "NEXT  (end of the programme)")
    add(RULE, rule)
    if j.verdicts or j.tallies or j.bad:
        for i, v in enumerate(j.verdicts):      # the latest verdict must stay
            add(MUST if i == len(j.verdicts) - 1 else VERDICT + i / 100,
                keep_end(printable(f"  {v}"), width))
        for t in j.tallies:
            add(TALLY, f"  {t}")
        if j.bad:
            add(MUST, f"  {j.bad}")
        add(RULE, rule)
    out = status.port + ("" if status.port_ok else "  — GONE, waiting for it to return")
    if not status.server_ok:
        out = status.port + "  — JACK SERVER DOWN, waiting for it to return"
    add(MUST, f"out: {out}   sent {status.sent}"
              + (f", dropped {status.dropped}" if status.dropped else "")
              + (f", {status.notes_dropped} notes not sent" if status.notes_dropped else ""))
    if listening and not j.health:
        add(MUST, f"osc: listening on {listening}")
    for h in j.health:
        add(MUST, h)
    notices = [*status.notices, *j.notices]
    for i, n in enumerate(notices):
        add(NOTICE + i / 100, f"» {n}")
    add(TALLY, HELP)
    if height is not None:
        while len(lines) > height:
            low = min(range(len(lines)), key=lambda k: (lines[k][0], k))
            del lines[low]
    return "\n".join(cut(printable(text), width) for _, text in lines)

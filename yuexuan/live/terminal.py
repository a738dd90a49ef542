"""The operator's terminal for ``yuexuan play``: keys in, the status screen out (docs/play.md,
"The operator").

On a terminal the screen is drawn through prompt_toolkit's output (the alternate screen, cursor
moves, line erasing and the terminal's size come from it, not from escape codes written here),
redrawn in place at the terminal's current size (:func:`yuexuan.live.operator.render` fits it);
keys are read one at a time in cbreak mode, so Ctrl-C stays a signal. When the show ends the
normal screen comes back with the last status printed on it. Otherwise (a pipe, a script, a
test) lines go in and what changed comes out, one a line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import select
import sys
import threading
from typing import TYPE_CHECKING, Any

from yuexuan.live import operator
from yuexuan.live.health import health_lines

if TYPE_CHECKING:
    from yuexuan.live.judging import Hub

BAD_PREFIX = "bad message: "     # how the hub says a bad message (yuexuan.live.judging)


def judging_view(hub: Hub, listening: str | None = None) -> operator.Judging:
    """Live judging's lines for the screen: the verdicts and tallies (:meth:`Hub.screen`), every
    bad message collapsed into one counter line (a flood never pushes a verdict off), the input's
    and the log's health (:func:`yuexuan.live.health.health_lines`; ``listening`` when the hub
    has none) and the latest other notices (refusals, remote commands and their source)."""
    lines = hub.screen()
    tallies = tuple(x for x in lines if x.startswith("round "))
    verdicts = tuple(x for x in lines if not x.startswith("round "))
    h = hub.health()
    if h.listening is None and listening is not None:
        h = dataclasses.replace(h, listening=listening)
    bad = None
    if h.bad:
        last = hub.bad[-1]["why"] if hub.bad else ""
        bad = f"bad input: {h.bad} messages" + (f" (last: {last})" if last else "")
    notices = tuple(n for n in hub.notices() if not n.startswith(BAD_PREFIX))
    return operator.Judging(verdicts, tallies, bad, tuple(health_lines(h)), notices)


class Terminal:
    """Raw key input and a redrawn status screen on a TTY; lines in, lines out otherwise.
    ``listening``: where OSC comes in ("HOST:PORT"), shown on the screen; ``lang``: the cues'
    words on it (:data:`yuexuan.live.operator.LANGS`; None: by the terminal's width,
    :func:`yuexuan.live.operator.default_lang`)."""

    def __init__(self, commands: queue.Queue[str], listening: str | None = None,
                 lang: str | None = None) -> None:
        self.commands = commands
        self.listening = listening
        self.lang = lang
        self.tty = sys.stdin.isatty() and sys.stdout.isatty()
        self._saved: list[Any] | None = None        # the TTY's modes before (termios)
        self._stop = threading.Event()
        self._last: tuple[str, str | None] | None = None
        self._notices_seen = 0
        self._said_seen = 0
        self._screen = ""                            # the last screen drawn
        self._out: Any = None                        # prompt_toolkit's Output, on a TTY
        if self.tty:
            import termios
            import tty

            from prompt_toolkit.output import create_output
            self._saved = termios.tcgetattr(sys.stdin.fileno())
            tty.setcbreak(sys.stdin.fileno())
            self._out = create_output(stdout=sys.stdout)
            self._out.enter_alternate_screen()
            self._out.hide_cursor()
            self._out.disable_autowrap()
            self._out.flush()
        threading.Thread(target=self._read, daemon=True, name="yuexuan-keys").start()

    def _read(self) -> None:
        fd = sys.stdin.fileno()
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.1)
            except (OSError, ValueError):
                return
            if not ready:
                continue
            if self.tty:
                try:
                    key = os.read(fd, 1).decode("utf-8", "replace")
                except OSError:
                    return                  # the terminal has gone (SIGHUP follows)
                if not key:
                    return
                cmd = operator.command_for_key(key)
            else:
                line = sys.stdin.readline()
                if not line:
                    return              # end of input: keep playing (auto) or until signalled
                cmd = operator.command_for_line(line)
            if cmd:
                self.commands.put(cmd)

    def show(self, status: operator.Status, hub: Hub | None = None) -> None:
        """Draw the screen (with the hub's latest verdicts), or print what changed, one a line."""
        if self._out is not None:
            size = self._out.get_size()
            judged = (judging_view(hub, self.listening) if hub is not None
                      else operator.Judging())
            lang = self.lang or operator.default_lang(size.columns)
            self._screen = operator.render(status, width=size.columns, judged=judged,
                                           height=size.rows, listening=self.listening, lang=lang)
            self._out.cursor_goto(0, 0)
            for i, line in enumerate(self._screen.split("\n")):
                if i:
                    self._out.write_raw("\r\n")
                self._out.write(line)
                self._out.erase_end_of_line()
            self._out.erase_down()
            self._out.flush()
            return
        said: list[str] = []
        if hub is not None:
            said, self._said_seen = hub.lines_since(self._said_seen)
        for line in said:
            print(line, flush=True)
        key = (status.state, status.cue.id if status.cue else None)
        if key != self._last:
            self._last = key
            print(f"{status.state}" + (f" {key[1]}" if key[1] else ""), flush=True)
        fresh = status.notice_count - self._notices_seen
        for n in status.notices[-fresh:] if fresh > 0 else ():
            print(f"» {n}", flush=True)
        self._notices_seen = status.notice_count

    def close(self) -> None:
        """The terminal as it was, with the last screen printed on it (a closed terminal, after
        SIGHUP, is left alone)."""
        self._stop.set()
        if self._saved is None:
            return
        import termios
        with contextlib.suppress(OSError, termios.error):
            self._out.enable_autowrap()
            self._out.show_cursor()
            self._out.quit_alternate_screen()
            self._out.flush()
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved)
            sys.stdout.write(self._screen + "\n")
            sys.stdout.flush()

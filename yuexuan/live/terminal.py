"""The operator's terminal for ``yuexuan play``: keys in, the status screen out (moved here from
the command as it was; docs/play.md, "The operator")."""

from __future__ import annotations

import os
import queue
import select
import sys
import threading
from typing import TYPE_CHECKING, Any

from yuexuan.live import operator

if TYPE_CHECKING:
    from yuexuan.live.judging import Hub


class Terminal:
    """Raw key input and a redrawn status screen on a TTY; lines in, lines out otherwise."""

    def __init__(self, commands: queue.Queue[str]) -> None:
        self.commands = commands
        self.tty = sys.stdin.isatty() and sys.stdout.isatty()
        self._saved: list[Any] | None = None        # the TTY's modes before (termios)
        self._stop = threading.Event()
        self._last: tuple[str, str | None] | None = None
        self._notices_seen = 0
        self._said_seen = 0
        if self.tty:
            import termios
            import tty
            self._saved = termios.tcgetattr(sys.stdin.fileno())
            tty.setcbreak(sys.stdin.fileno())
            sys.stdout.write("\x1b[?25l")
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
                key = os.read(fd, 1).decode("utf-8", "replace")
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
        if self.tty:
            judged = tuple(hub.screen()) if hub is not None else ()
            sys.stdout.write("\x1b[H\x1b[2J" + operator.render(status, judged=judged) + "\n")
            sys.stdout.flush()
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
        self._stop.set()
        if self._saved is not None:
            import termios
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved)
            sys.stdout.write("\x1b[?25h\n")
            sys.stdout.flush()

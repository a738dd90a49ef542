"""``yuexuan play`` in a subprocess for the live-MIDI tests, and what a recorder heard from it."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import mido
from cli_support import DEFAULT_CUES, popen


class Play:
    """``yuexuan play`` in a subprocess, its stdout lines readable with a timeout."""

    def __init__(self, env, *args, report: Path, sheet: Path = DEFAULT_CUES):
        self.report = report
        self.proc = popen(
            [sys.executable, "-m", "yuexuan", "play", str(sheet), "--api", "jack",
             "--report", str(report), *args],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        self.lines: queue.Queue = queue.Queue()
        self.seen: list = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, pattern: str, timeout: float = 10.0) -> str:
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line matching {pattern!r}; saw {self.seen}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if re.search(pattern, line):
                return line

    def say(self, word: str) -> float:
        self.proc.stdin.write(word + "\n")
        self.proc.stdin.flush()
        return time.monotonic()

    def finish(self, timeout: float = 30.0) -> tuple[int, str, dict]:
        rc = self.proc.wait(timeout)
        err = self.proc.stderr.read()
        return rc, err, json.loads(self.report.read_text())


def as_messages(rows):
    """A recorder's ``(arrival s, bytes)`` rows as ``(arrival s, mido.Message)``."""
    return [(t, mido.Message.from_bytes(d)) for t, d in rows]


def note_ons(msgs):
    return [(t, m) for t, m in msgs if m.type == "note_on" and m.velocity > 0]


def assert_nothing_left_sounding(msgs):
    """Every note-on closed by a note-off, and CC 123 on every channel used, after the last on."""
    open_ = Counter()
    for _, m in msgs:
        if m.type == "note_on" and m.velocity > 0:
            open_[(m.channel, m.note)] += 1
        elif m.type in ("note_on", "note_off") and open_[(m.channel, m.note)] > 0:
            open_[(m.channel, m.note)] -= 1
    assert not +open_, f"left sounding: {dict(+open_)}"
    ons = note_ons(msgs)
    last_on = max(t for t, _ in ons)
    cc123 = {m.channel for t, m in msgs
             if m.type == "control_change" and m.control == 123 and t >= last_on}
    assert {m.channel for _, m in ons} <= cc123

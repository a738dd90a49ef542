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
        if not self.report.exists():
            raise AssertionError(f"play ended (status {rc}) with no report; its stdout "
                                 f"{self.seen[-10:]}, stderr {err[-2000:]!r}")
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


# -- what a recorder of raw messages heard (jack_support.MidiDump) ---------------------------------
NOTE_ON, NOTE_OFF, CONTROL_CHANGE = 0x90, 0x80, 0xB0
ALL_NOTES_OFF, ALL_SOUND_OFF = 123, 120
ACTIVE_SENSING = 0xFE


def sounding_after(raw, start: Counter | None = None) -> Counter:
    """(channel, key) → note-ons not yet answered, after the raw messages ``raw`` (bytes, in
    order), from ``start``: a note-on is answered by a note-off of its key on its channel (or a
    note-on of velocity 0) or by CC 123 (All Notes Off) on its channel."""
    open_ = Counter(start or ())
    for b in raw:
        kind, ch = b[0] & 0xF0, b[0] & 0x0F
        if kind == NOTE_ON and len(b) == 3 and b[2] > 0:
            open_[(ch, b[1])] += 1
        elif kind in (NOTE_ON, NOTE_OFF) and len(b) == 3 and open_[(ch, b[1])] > 0:
            open_[(ch, b[1])] -= 1
        elif kind == CONTROL_CHANGE and len(b) == 3 and b[1] == ALL_NOTES_OFF:
            for k in [k for k in open_ if k[0] == ch]:
                open_[k] = 0
    return +open_


def first_note_on(raw) -> int | None:
    """The index of the first note-on in ``raw``, or None."""
    return next((i for i, b in enumerate(raw) if b[0] & 0xF0 == NOTE_ON and len(b) == 3 and b[2] > 0),
                None)


def resets_before(raw, end: int | None) -> set[tuple[int, int]]:
    """(controller, channel) of every CC 123 / CC 120 of value 0 among ``raw[:end]``."""
    return {(b[1], b[0] & 0x0F) for b in raw[:end]
            if b[0] & 0xF0 == CONTROL_CHANGE and len(b) == 3 and b[1] in (ALL_NOTES_OFF, ALL_SOUND_OFF)
            and b[2] == 0}

"""``kill -9`` of ``yuexuan render``, ``build`` and ``guide``, 1, 2 and 3 s after their render's
worker processes first exist, leaves no process of theirs 2 s later (issue 34): the workers end
with their parent however it ends (yuexuan/audio/engine/workers.py).

The nine cases run at once (2 s of waiting each, not 18 in a row), each on the timeline of a
short selection saved as JSON (what tests/test_kill_commands.py renders). Every 10 ms the test
notes each command's descendants (pid and start time: a pid used again later is not them); at the
kill time it stops the command (SIGSTOP: no new worker can start), notes its descendants once
more and kills it with SIGKILL. Two seconds later none of them may be alive (a zombie is dead).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cache_support import artefact
from cli_support import DEFAULT_CUES, popen, run_cli, yuexuan_argv

SMALL_CUES = "xingong,lishou"          # tests/test_kill_commands.py's small input, shared with it
AFTER_S = (1.0, 2.0, 3.0)
GRACE_S = 2.0
POLL_S = 0.01


@pytest.fixture(scope="module")
def small_input(artefact_root) -> Path:
    def build(d: Path) -> None:
        r = run_cli("compile", DEFAULT_CUES, "--cues", SMALL_CUES, "-o", d / "dashe.mid", "--timeline",
                    d / "dashe.json", fork=False)
        assert r.returncode == 0, r.stderr
    return artefact(artefact_root, "kill-input", (SMALL_CUES,), build) / "dashe.json"


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks) of process ``pid``, or None if there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[19])


def _children(pid: int) -> list[int]:
    out = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    return out


def _descendants(pid: int) -> set[tuple[int, int]]:
    """(pid, start time) of every process below ``pid``."""
    found, todo = set(), _children(pid)
    while todo:
        p = todo.pop()
        st = _stat(p)
        if st is not None:
            found.add((p, st[1]))
            todo += _children(p)
    return found


class Case:
    def __init__(self, command: str, after_s: float, timeline: Path, out: Path) -> None:
        self.name = f"{command}+{after_s:g}s"
        self.after_s = after_s
        target = [out / "x.wav"] if command == "render" else [out]
        flag = "--out-dir" if command == "build" else "-o"
        self.proc = popen(yuexuan_argv(command, timeline, flag, *target), stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
        self.seen: set[tuple[int, int]] = set()
        self.workers_at: float | None = None
        self.killed_at: float | None = None
        self.ended_early = False

    def watch(self, now: float) -> None:
        """Note the descendants; stop, note and kill the command once its time has come."""
        if self.killed_at is not None or self.ended_early:
            return
        if self.proc.poll() is not None:
            self.ended_early = True
            return
        self.seen |= _descendants(self.proc.pid)
        if self.seen and self.workers_at is None:
            self.workers_at = now
        if self.workers_at is not None and now >= self.workers_at + self.after_s:
            os.kill(self.proc.pid, signal.SIGSTOP)
            self.seen |= _descendants(self.proc.pid)
            os.kill(self.proc.pid, signal.SIGKILL)
            self.killed_at = time.monotonic()
            self.proc.wait()

    def alive(self) -> list[int]:
        return [p for p, start in self.seen if (st := _stat(p)) is not None and st[1] == start
                and st[0] != "Z"]


def test_killed_commands_leave_no_worker(small_input, tmp_path):
    cases = [Case(cmd, t, small_input, tmp_path / f"{cmd}{t:g}") for cmd in ("render", "build", "guide")
             for t in AFTER_S]
    try:
        deadline = time.monotonic() + 120
        while any(c.killed_at is None and not c.ended_early for c in cases):
            assert time.monotonic() < deadline, [c.name for c in cases if c.killed_at is None]
            for c in cases:
                c.watch(time.monotonic())
            time.sleep(POLL_S)
        time.sleep(max(0.0, max(c.killed_at or 0.0 for c in cases) + GRACE_S - time.monotonic()))
        left = {c.name: c.alive() for c in cases if c.alive()}
        assert not left, f"workers alive {GRACE_S} s after their command was killed: {left}"
        early = [c.name for c in cases if c.ended_early]
        assert not early, f"ended before the kill, so not tested: {early}"
        assert all(c.seen for c in cases)
    finally:
        for c in cases:
            if c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()
            for p in c.alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)

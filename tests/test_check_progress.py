"""``check --beats-from`` shows its progress on a terminal (decoding and finding the strokes,
placing) and nothing in a pipe (issue 31 item 4); a recording without a drum is reported with how
much of it was read.

The terminal is a real pseudo-terminal (``pty.openpty``): the command's stderr is its slave end,
as in a judge's shell, and what it wrote is read from the master.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf
from cli_support import DEFAULT_CUES, ROOT
from drum_support import SR, synth_drum

from yuexuan.compiler import compile_file

HEADER = "time,archer,rank,role,target,result,pair,round\n"


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """40 s of the 射节's drum from 3 s before its first stroke (a synthesised drummer on the
    plan, on to the recording's end) and a log."""
    plan = np.array(sorted(b.time for b in compile_file(DEFAULT_CUES).beats if b.cue == "lishou"))
    start = plan[0] - 3.0
    strokes = plan[plan < start + 39.5] - start
    d = tmp_path_factory.mktemp("progress")
    path = d / "drum.flac"
    sf.write(path, synth_drum(strokes, 40.0), SR)
    silent = d / "silence.flac"
    sf.write(silent, np.random.default_rng(2).normal(0, 0.001, 95 * SR), SR)
    log = d / "shots.csv"
    log.write_text(HEADER + f"{plan[3] + 0.01:.3f},上耦上射,士,上射,干,贯,上耦,3\n", encoding="utf-8")
    return path, silent, log


def on_a_terminal(*args) -> tuple[int, str, str]:
    """Run ``yuexuan ARGS`` with its stderr on a pseudo-terminal; (status, stdout, terminal)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "yuexuan", *map(str, args)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            p.kill()
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:                     # the slave closed: the command ended
            break
        if not chunk:
            break
        seen += chunk
    out = p.stdout.read().decode("utf-8") if p.stdout else ""
    code = p.wait(timeout=120)
    os.close(master)
    return code, out, seen.decode("utf-8", errors="replace")


def test_progress_on_a_terminal_and_none_in_a_pipe(recording):
    path, _, log = recording
    code, out, tty = on_a_terminal("check", DEFAULT_CUES, log, "--beats-from", path)
    assert code == 0, tty
    assert "释" in out
    assert "yuexuan check: decoding and finding strokes" in tty, tty
    assert "100%" in tty and "\r" in tty                       # the bar, drawn in place
    assert "yuexuan check: placing" in tty, tty
    r = subprocess.run([sys.executable, "-m", "yuexuan", "check", str(DEFAULT_CUES), str(log),
                        "--beats-from", str(path)], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout == out.replace("\r\n", "\n")


def test_no_drum_says_how_much_was_read(recording):
    _, silent, log = recording
    r = subprocess.run([sys.executable, "-m", "yuexuan", "check", str(DEFAULT_CUES), str(log),
                        "--beats-from", str(silent)], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "no drum strokes found" in r.stderr, r.stderr
    assert f"{silent}: " in r.stderr and "(read 1:35 of audio)" in r.stderr, r.stderr

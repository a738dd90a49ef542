"""The ``yuexuan`` program's end (cli.run): after the command, the atexit handlers and finalizers
run and the standard streams are flushed, and the process ends with the command's status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """
import atexit, sys, weakref
from yuexuan import cli

class Held:
    pass

held = Held()
weakref.finalize(held, print, "finalizer ran", file=sys.stderr)
atexit.register(print, "atexit ran")
sys.stdout.write("unflushed: " * 3000)          # more than a buffer: flushed by run
sys.argv = ["yuexuan", *sys.argv[1:]]
cli.run()
"""


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


def test_exit_handlers_run_and_output_is_flushed():
    r = _run("variants")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("unflushed: ") == 3000 and r.stdout.rstrip().endswith("atexit ran")
    assert "finalizer ran" in r.stderr and "O1" in r.stdout


def test_a_users_mistake_still_ends_with_status_2():
    r = _run("render", "no-such-sheet.toml", "-o", "x.wav")
    assert r.returncode == 2 and "no such file" in r.stderr and "atexit ran" in r.stdout

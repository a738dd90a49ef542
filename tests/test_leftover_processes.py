"""A test run fails when a process it started outlives it (tests/leftover_processes.py).

Evidence: pytest runs of their own (this suite's conftest, as ``-p conftest``) over test files that
leave a process behind, and /proc after they end: the run's exit status and summary, the pid it
names, and that process gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent

LEAKY = '''
import os, subprocess, sys, time
from pathlib import Path

def test_orphan():
    # a sleeper whose parent (sh) ends at once: re-parented to init, as a killed render's workers were
    out = subprocess.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"], capture_output=True,
                         text=True, check=True).stdout
    Path("orphan.pid").write_text(out.strip())

def test_clean():
    subprocess.run(["sleep", "0.01"], check=True)            # ended: not a leftover
    p = subprocess.Popen(["sleep", "600"])
    p.kill()
    p.wait()
'''

UNMARKED = '''
import subprocess
from pathlib import Path

def test_child_without_the_mark():
    # an environment of its own (no YUEXUAN_TEST_RUN), still this process's child at the end
    p = subprocess.Popen(["sleep", "600"], env={"PATH": "/usr/bin:/bin"})
    Path("child.pid").write_text(str(p.pid))
'''


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "-q", "-c", os.devnull, "--rootdir", str(folder), *args],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _summary(r: subprocess.CompletedProcess) -> str:
    return r.stdout.strip().splitlines()[-1]


def test_an_orphan_left_by_a_worker_fails_the_run_and_is_killed(tmp_path):
    (tmp_path / "test_leaky.py").write_text(LEAKY, encoding="utf-8")
    r = _pytest(tmp_path, "-n", "2", "test_leaky.py")
    pid = int((tmp_path / "orphan.pid").read_text())
    try:
        assert r.returncode == 1, r.stdout + r.stderr
        assert "2 passed, 1 leftover" in _summary(r), r.stdout
        line = next(x for x in r.stdout.splitlines() if x.startswith(f"pid {pid}:"))
        assert "sleep 600" in line and "test_leaky.py::test_orphan (call)" in line, line
        assert sum(x.startswith("pid ") for x in r.stdout.splitlines()) == 1, r.stdout   # sleep 0.01 ended
        assert not _alive(pid), f"the leftover {pid} is still running"
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_a_child_without_the_mark_is_found_as_a_descendant(tmp_path):
    (tmp_path / "test_unmarked.py").write_text(UNMARKED, encoding="utf-8")
    r = _pytest(tmp_path, "test_unmarked.py")
    pid = int((tmp_path / "child.pid").read_text())
    try:
        assert r.returncode == 1 and "1 passed, 1 leftover" in _summary(r), r.stdout + r.stderr
        assert f"pid {pid}: sleep 600" in r.stdout, r.stdout
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:     # the run's child: init reaps it
            time.sleep(0.05)
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)

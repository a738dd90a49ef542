"""No process outlives the test run: a pytest plugin (tests/conftest.py registers it).

At the start the run marks its environment with ``YUEXUAN_TEST_RUN``, a fresh id added to the
ids of any run it is nested in; every process the run starts inherits it, whoever its parent is
now (a forked render worker re-parented to init keeps the environment it was started with). At
the end — in the controller after the xdist workers have ended, or in the one pytest process
after the session's fixtures and the tests' long-lived helpers are closed — every live process
whose environment holds the id is a leftover, and so is every live descendant of the pytest
process. A leftover is listed (pid, its command, the test that was running when its program
started: ``PYTEST_CURRENT_TEST`` in that environment), killed, and the run fails (exit status 1,
"N leftover" in the summary line). A process that ends within ``GRACE_S`` of the end (a JACK
server told by ``PR_SET_PDEATHSIG``, a worker ending on its pipe's EOF) is not a leftover.

What it cannot see: a process started with an environment of its own making (``env -i``) that is
no longer a descendant of the pytest process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from dataclasses import dataclass

import pytest

RUN_VAR = "YUEXUAN_TEST_RUN"
GRACE_S = 2.0                  # how long a process may take to end after the run's end
KILL_WAIT_S = 5.0


@dataclass(frozen=True)
class Leftover:
    pid: int
    command: str
    started_in: str            # PYTEST_CURRENT_TEST of its environment, or ""

    def line(self) -> str:
        where = f"  (started during {self.started_in})" if self.started_in else ""
        return f"pid {self.pid}: {self.command}{where}"


def mark_run() -> str:
    """A fresh run id, added to ``YUEXUAN_TEST_RUN`` of this process (children inherit it)."""
    run_id = uuid.uuid4().hex
    os.environ[RUN_VAR] = " ".join([*os.environ.get(RUN_VAR, "").split(), run_id])
    return run_id


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:                 # gone, or another user's
        return None


def _live_processes() -> dict[int, tuple[int, bytes]]:
    """{pid: (ppid, environ)} of every process that has not ended (zombies left out)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = _read(f"/proc/{name}/stat")
        if stat is None:
            continue
        state, ppid = stat[stat.rfind(b")") + 2:].split()[:2]
        if state in (b"Z", b"X"):
            continue
        out[int(name)] = (int(ppid), _read(f"/proc/{name}/environ") or b"")
    return out


def _env_value(environ: bytes, name: str) -> str | None:
    key = name.encode() + b"="
    for entry in environ.split(b"\0"):
        if entry.startswith(key):
            return entry[len(key):].decode(errors="replace")
    return None


def _ours(run_id: str) -> list[int]:
    """The live processes marked with ``run_id`` or descending from this process."""
    procs = _live_processes()
    me = os.getpid()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    found = {pid for pid, (_, env) in procs.items()
             if run_id in (_env_value(env, RUN_VAR) or "").split()}
    stack = list(children.get(me, ()))
    while stack:
        pid = stack.pop()
        found.add(pid)
        stack.extend(children.get(pid, ()))
    found.discard(me)
    return sorted(found)


def _describe(pid: int) -> Leftover:
    cmd = (_read(f"/proc/{pid}/cmdline") or b"").replace(b"\0", b" ").decode(errors="replace").strip()
    test = _env_value(_read(f"/proc/{pid}/environ") or b"", "PYTEST_CURRENT_TEST") or ""
    return Leftover(pid, cmd[:300] or "?", test)


def leftovers(run_id: str, grace_s: float = GRACE_S) -> list[Leftover]:
    """The processes of run ``run_id`` still alive after ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        pids = _ours(run_id)
        if not pids or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return [_describe(pid) for pid in pids]


def kill(found: list[Leftover]) -> None:
    """SIGKILL each leftover and wait (up to KILL_WAIT_S) until it is gone."""
    for p in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    pending = {p.pid for p in found}
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:                    # our own child: reap it; another's: see whether it is gone
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    pending.discard(pid)
                    continue
            except ChildProcessError:
                pass
            stat = _read(f"/proc/{pid}/stat")
            if stat is None or stat[stat.rfind(b")") + 2:][:1] in (b"Z", b"X"):
                pending.discard(pid)
        time.sleep(0.02)


class LeftoverCheck:
    """The plugin: checks for run ``run_id``'s leftovers (:func:`mark_run`) at the very end of the
    session, after calling ``closers`` (what ends this process's long-lived helpers)."""

    def __init__(self, run_id: str, closers=()):
        self.run_id = run_id
        self.closers = closers

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        if os.environ.get("PYTEST_XDIST_WORKER"):
            return                  # the controller checks, after every worker has ended
        for close in self.closers:
            close()
        found = leftovers(self.run_id)
        if not found:
            return
        kill(found)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        n = len(found)
        lines = [f"{n} process{'es' if n > 1 else ''} started by this run outlived it (killed now):",
                 *(p.line() for p in found)]
        if reporter is not None:
            reporter.stats.setdefault("leftover", []).extend(found)
            reporter.ensure_newline()
            reporter.write_sep("=", "processes left behind", red=True)
            for line in lines:
                reporter.write_line(line)
        else:
            print("\n".join(lines), file=sys.stderr)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

"""``python -m yuexuan ARGS`` for the tests, without paying Python's start-up and the big imports
(numpy, scipy, soundfile, librosa, music21, matplotlib: 0.3–3 s a command) each time.

A fork server (this file run as a script) imports those libraries once and then forks a child per
command. The child takes the command's working folder, environment and standard streams (passed
over a Unix socket), SIGINT and SIGTERM as a new interpreter has them, ``sys.argv`` and
``sys.path[0]`` as ``python -m`` sets them, and runs the ``yuexuan`` package as ``__main__``
(``runpy``, what ``-m`` does); the interpreter then ends as after ``python -m yuexuan``: atexit
handlers, flushed streams, the exit status of ``SystemExit``, a traceback and status 1 for any
other exception. The server imports the package's modules before it forks (0.3–1 s of a command's
start-up): none reads the environment, the working folder or the arguments, or installs a signal
handler, on import (tests/test_packaging.py's probes of a fresh interpreter check what a command
imports). The server, not the test, is the child's parent: it reports the exit status (as
``subprocess`` does: −N for a signal N).

:func:`spawn` returns a :class:`Child` (``pid``, ``poll``, ``wait``, ``send_signal``, ``kill``,
``returncode``). ``YUEXUAN_TEST_FORK=0`` runs every command as a new process instead.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# what the commands import (0.3–1 s of start-up a command: numpy and pypinyin for every command
# that compiles a sheet, scipy.signal and soundfile for check reading a recording, music21 for
# score and build); a forked command has them all loaded, whatever it would have imported
PRELOAD = ("numpy", "scipy.signal", "soundfile", "pypinyin", "music21")
ENABLED = os.environ.get("YUEXUAN_TEST_FORK", "1") != "0"
# a forked command has the server's interpreter: its locale, stream encoding and Python settings
STARTUP_ENV = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "PYTHONIOENCODING", "PYTHONUTF8",
               "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS", "PYTHONDEVMODE")


# -- the test's side -------------------------------------------------------------------------------

class Child:
    """A command the server forked: like ``subprocess.Popen`` for what the tests use of it."""

    def __init__(self, conn: socket.socket, pid: int):
        self._conn = conn
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None     # our ends of its pipes (cli_support)

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._conn], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"yuexuan (pid {self.pid})", timeout)
            self._read_status()
        return self.returncode

    def _read_status(self) -> None:
        data = b""
        while not data.endswith(b"\n"):
            chunk = self._conn.recv(64)
            if not chunk:
                raise RuntimeError("the fork server went away")
            data += chunk
        self.returncode = int(data)
        self._conn.close()

    def communicate(self, timeout: float | None = None) -> tuple:
        """As ``subprocess.Popen.communicate()`` (no input): what its pipes held, once it ended."""
        if self.stdin is not None:
            self.stdin.close()
        read: dict = {}
        readers = [threading.Thread(target=lambda k=k, f=f: read.update({k: f.read()}), daemon=True)
                   for k, f in (("out", self.stdout), ("err", self.stderr)) if f is not None]
        for t in readers:
            t.start()
        self.wait(timeout)
        for t in readers:
            t.join(timeout)
            if t.is_alive():                 # a pipe still open (a grandchild holds it)
                raise subprocess.TimeoutExpired(f"yuexuan (pid {self.pid})", timeout)
        return read.get("out"), read.get("err")

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_SERVER: dict = {}


def _server() -> Path:
    """The socket of this process's fork server, started on first use."""
    if _SERVER.get("pid") == os.getpid():
        return _SERVER["socket"]
    folder = Path(tempfile.mkdtemp(prefix="yx-fork-"))
    path = folder / "s"
    # the server ends when its standard input (this process's pipe) closes
    proc = subprocess.Popen([sys.executable, __file__, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if proc.stdout.readline().strip() != b"ready":
        raise RuntimeError("the fork server did not start")
    atexit.register(stop)
    _SERVER.update(pid=os.getpid(), socket=path, proc=proc)
    return path


def stop() -> None:
    """End this process's fork server, if it started one (at the end of the session, and at exit)."""
    if _SERVER.get("pid") != os.getpid():
        return
    proc, path = _SERVER.pop("proc"), _SERVER.pop("socket")
    _SERVER.clear()
    proc.kill()
    proc.wait()
    path.unlink(missing_ok=True)
    path.parent.rmdir()


def spawn(args, *, cwd, env: dict, stdin: int, stdout: int, stderr: int) -> Child:
    """Fork ``python -m yuexuan ARGS`` with these standard streams (file descriptors)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(_server()))
    request = json.dumps({"args": [str(a) for a in args], "cwd": str(cwd), "env": env}).encode()
    socket.send_fds(conn, [request + b"\n"], [stdin, stdout, stderr])
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            raise RuntimeError("the fork server went away")
        data += chunk
    return Child(conn, int(data))


def forkable(argv: list, env: dict) -> bool:
    """True when ``argv`` is ``python -m yuexuan …`` and ``env`` starts an interpreter as this
    one's (:data:`STARTUP_ENV`)."""
    return ENABLED and argv[:3] == [sys.executable, "-m", "yuexuan"] \
        and all(env.get(k) == os.environ.get(k) for k in STARTUP_ENV)


# -- the server ------------------------------------------------------------------------------------

def _serve(path: str) -> dict:
    """Accept commands; fork each. Returns only in a forked child: what it is to run."""
    import importlib
    import pkgutil

    for name in PRELOAD:
        importlib.import_module(name)
    # the package too, every module of it but the entry point (which the child runs): none reads
    # the environment, the working folder or the arguments, or installs a handler, on import
    sys.path.insert(0, str(ROOT))              # the checkout's package, as ``-m`` in it finds it
    import yuexuan
    for info in pkgutil.walk_packages(yuexuan.__path__, "yuexuan."):
        if info.name != "yuexuan.__main__":
            importlib.import_module(info.name)
    # and the rite's data files parsed (yuexuan.rite.tomlfile memoises a parse by the file's text,
    # so a command reading other or changed files parses those)
    from yuexuan.rite import tomlfile
    for folder in ("instruments", "pieces", "ceremony", "cues"):
        for data_file in sorted((ROOT / folder).rglob("*.toml")):
            tomlfile.load(data_file)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    waiting: dict = {}                  # pidfd → (pid, connection)
    while True:
        ready, _, _ = select.select([listener, sys.stdin, *waiting], [], [])
        for r in ready:
            if r is sys.stdin:
                if not os.read(0, 1):
                    sys.exit(0)
            elif r is listener:
                conn, _ = listener.accept()
                msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                while not msg.endswith(b"\n"):
                    msg += conn.recv(1 << 20)
                job = json.loads(msg)
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for fd in waiting:
                        os.close(fd)
                    for _, c in waiting.values():
                        c.close()
                    conn.close()
                    job["fds"] = fds
                    return job
                for fd in fds:
                    os.close(fd)
                conn.sendall(b"%d\n" % pid)
                waiting[os.pidfd_open(pid)] = (pid, conn)
            else:
                pid, conn = waiting.pop(r)
                os.close(r)
                _, status = os.waitpid(pid, 0)
                code = os.waitstatus_to_exitcode(status)
                try:
                    conn.sendall(b"%d\n" % code)
                except OSError:
                    pass
                conn.close()


def _run(job: dict) -> None:
    """In the forked child: become ``python -m yuexuan ARGS`` (the interpreter's exit follows)."""
    import io
    import runpy

    for target, fd in enumerate(job["fds"]):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # the standard streams as Python's start-up makes them on these descriptors
    enc = sys.stdout.encoding
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=enc)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding=enc,
                                  line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding=enc,
                                  errors="backslashreplace", line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    sys.argv = ["-m", *job["args"]]
    sys.path[0] = os.getcwd()
    runpy.run_module("yuexuan", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _run(_serve(sys.argv[1]))

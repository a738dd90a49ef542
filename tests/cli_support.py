"""Running ``yuexuan`` from the tests: a child process per command (:func:`run_cli`, :func:`popen`;
forked by tests/forkserver.py where the command's interpreter would start as the server's did,
else a new process) or a long-lived child that runs commands on request (:class:`CliWorker`).

Every child starts with SIGINT at its default action (:func:`default_sigint`): a parent that
ignores SIGINT (a shell's background job, ``nohup``) would otherwise pass that on, and Python
installs no KeyboardInterrupt handler where SIGINT is ignored, so the tests that interrupt a
command with SIGINT would see it ignored.
"""

from __future__ import annotations

import io
import json
import locale
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from pathlib import Path

import forkserver

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CUES = ROOT / "cues" / "dashe.toml"


def default_sigint() -> None:
    """``preexec_fn`` of every child: SIGINT at its default action (see the module doc)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def merged_env(env: dict | None = None) -> dict:
    """``os.environ`` updated with ``env``."""
    e = dict(os.environ)
    e.update(env or {})
    return e


def with_checkout_path(env: dict) -> dict:
    """``env`` with the checkout first on its PYTHONPATH, the folders already there kept."""
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    return dict(env, PYTHONPATH=os.pathsep.join([str(ROOT), *rest]))


def _fd(stream, index: int, opened: list, pipes: dict) -> int | None:
    """A file descriptor for the child's stream ``index`` (0, 1, 2) from ``stream`` (None, DEVNULL,
    PIPE, a descriptor or a file), or None if only ``subprocess`` can make it. A pipe's child end
    is put in ``opened`` (closed once the child has it) and its own end in ``pipes``."""
    if stream is None:
        return index
    if stream == subprocess.DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        opened.append(fd)
        return fd
    if stream == subprocess.PIPE:
        r, w = os.pipe()
        child, own = (r, w) if index == 0 else (w, r)
        opened.append(child)
        pipes[index] = own
        return child
    if isinstance(stream, int):
        return stream if stream >= 0 else None
    return stream.fileno() if hasattr(stream, "fileno") else None


def _pipe_file(fd: int, index: int, text: bool):
    """Our end of a pipe to a forked child, as ``subprocess.Popen`` makes it (text mode: the
    locale's encoding, universal newlines when reading)."""
    if not text:
        return os.fdopen(fd, "wb" if index == 0 else "rb")
    enc = locale.getpreferredencoding(False)
    if index == 0:
        return io.TextIOWrapper(io.open(fd, "wb"), encoding=enc, write_through=True)
    return io.TextIOWrapper(io.open(fd, "rb"), encoding=enc)


def popen(argv: list, *, fork: bool = True, cwd=None, env: dict | None = None, stdin=None, stdout=None,
          stderr=None, text: bool = False, **kwargs):
    """``subprocess.Popen(argv)`` in the checkout, SIGINT at its default (see the module doc).
    ``python -m yuexuan …`` is forked by tests/forkserver.py instead where it can be (streams
    that are files, descriptors, DEVNULL or PIPE; ``text``), its pipes' ends as ``stdin``,
    ``stdout`` and ``stderr`` of what it returns (``fork=False``: a new process in any case)."""
    argv = [str(a) for a in argv]
    e = dict(env) if env is not None else dict(os.environ)
    opened: list = []
    pipes: dict = {}
    forked = None
    try:
        if fork and not kwargs and forkserver.forkable(argv, e):
            fds = [_fd(s, k, opened, pipes) for k, s in enumerate((stdin, stdout, stderr))]
            if None not in fds:
                forked = forkserver.spawn(argv[3:], cwd=cwd or ROOT, env=e, stdin=fds[0],
                                          stdout=fds[1], stderr=fds[2])
    finally:
        for fd in opened:
            os.close(fd)
        if forked is None:
            for fd in pipes.values():
                os.close(fd)
    if forked is not None:
        for index, fd in pipes.items():
            setattr(forked, ("stdin", "stdout", "stderr")[index], _pipe_file(fd, index, text))
        return forked
    if text:
        kwargs["text"] = True
    return subprocess.Popen(argv, preexec_fn=default_sigint, cwd=cwd or ROOT, env=env, stdin=stdin,
                            stdout=stdout, stderr=stderr, **kwargs)


def yuexuan_argv(*args) -> list:
    return [sys.executable, "-m", "yuexuan", *map(str, args)]


def run_cli(*args, timeout: float = 300, cwd=None, env=None, fork: bool = True) -> subprocess.CompletedProcess:
    """Run ``python -m yuexuan ARGS``; text output captured (forked: see :func:`popen`)."""
    argv = yuexuan_argv(*args)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = popen(argv, fork=fork, cwd=cwd, env=merged_env(env), stdout=out, stderr=err)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        texts = []
        for f in (out, err):                  # decoded as subprocess's text mode decodes
            f.seek(0)
            texts.append(io.TextIOWrapper(f, encoding=locale.getpreferredencoding(False)).read())
    return subprocess.CompletedProcess(argv, code, *texts)


# -- the worker: cli.main in a child process, one request at a time, with a timeout ---------------

class Hang(AssertionError):
    pass


_WORKERS: weakref.WeakSet = weakref.WeakSet()


def close_workers() -> None:
    """Close every :class:`CliWorker` of this process (tests/conftest.py, at the session's end)."""
    for w in list(_WORKERS):
        w.close()


class CliWorker:
    """A child process running ``yuexuan`` commands in-process on request.

    ``run(argv, timeout)`` returns ``(code, stdout, stderr)``, where ``code`` is the exit status
    the real CLI would give (``SystemExit`` codes included) or ``"traceback"`` with the traceback
    as ``stderr`` for any other exception. A request that takes longer than ``timeout`` kills the
    child and raises :class:`Hang`; the next request starts a fresh child.
    """

    def __init__(self, env: dict | None = None):
        self.env = env
        self.proc = None
        self.answers: queue.Queue = queue.Queue()
        _WORKERS.add(self)

    def _start(self):
        env = with_checkout_path(dict(self.env) if self.env is not None else dict(os.environ))
        self.proc = popen([sys.executable, __file__, "worker"], env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          encoding="utf-8")
        answers = self.answers = queue.Queue()
        out = self.proc.stdout

        def pump():
            for line in out:
                answers.put(line)
            answers.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def run(self, argv, timeout: float = 60.0):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps([str(a) for a in argv]) + "\n")
        self.proc.stdin.flush()
        try:
            line = self.answers.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise Hang(f"yuexuan {' '.join(map(str, argv))}: no answer within {timeout} s") from None
        if line is None:
            code = self.proc.wait()
            self.proc = None
            raise AssertionError(f"yuexuan {' '.join(map(str, argv))}: the process died ({code})")
        a = json.loads(line)
        return a["code"], a["stdout"], a["stderr"]

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _serve() -> None:
    """The child's loop: one JSON argv a line in, one JSON answer a line out."""
    import contextlib
    import traceback

    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)                         # stray writes to fd 1 must not corrupt the answers
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)                      # commands see an empty stdin (play reads its keys there)
    sys.stdin = open(os.devnull, encoding="utf-8")
    from yuexuan import cli
    for line in requests:
        argv = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exc:                     # argparse
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                code = "traceback"
                err.write(traceback.format_exc())
        proto.write(json.dumps({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
                    + "\n")
        proto.flush()


if __name__ == "__main__" and sys.argv[1:] == ["worker"]:
    _serve()

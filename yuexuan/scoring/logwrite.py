"""The live shot log (``play --shots-log FILE``): one row a judged shot, on disk before it is shown.

Rows are in the columns of ``check --format csv`` (:func:`yuexuan.scoring.report.fields_out`),
written by :mod:`csv` (CRLF line ends, as ``check`` writes them), each followed by ``flush`` and
:func:`os.fsync`: once :meth:`ShotLogWriter.write` has returned, a kill (even SIGKILL, or the
machine losing power after the disk has the data) keeps that row. The header is written with the
first row, the two in one atomic replace (so ``play`` never leaves a log of a header alone, or
of a header cut short); an existing file is appended to when its header is the same (a show
resumed after a crash goes on in the same log).

A crash during a write can leave the last line cut short. That row was never confirmed (its
verdict was neither shown nor sent), so opening the file again drops it — the only change ever
made to rows already there — and says so in :attr:`ShotLogWriter.repaired`. ``check`` reads such
a file as it is, with a warning (:mod:`yuexuan.scoring.logread`).

A scorer's correction (``/yuexuan/correct``) changes a row already written: :meth:`rewrite`
writes every row to a temporary file beside the log, fsyncs it, renames it over the log and
fsyncs the folder, so a crash leaves either the old log or the new one, whole.

A write that fails (a full disk, an I/O error) is cut back: the file is truncated to where it
was, so it always ends on a whole line, and :meth:`write` raises (the caller sends no verdict).
A full disk is met by a reserve: ``FILE.reserve`` beside the log, given its size at the start
with :func:`os.posix_fallocate` (refused at once when the disk has not that much), is shrunk when
a write finds no space, and the write tried again. :func:`show_reserve_bytes` is the whole show's
rows, twice (a correction's rewrite needs a second copy), and a margin. The reserve is removed
when the log closes.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
import tempfile
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from yuexuan.errors import UserError
from yuexuan.scoring import report

COLUMNS = report.fields_out(None)
ROW_BYTES = 320            # a row's bytes but its names' (times, codes, a reason, CRLF): ≤ ~250
PAGE_BYTES = 4096          # the reserve is given back a page at least at a time
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
T = TypeVar("T")


def show_reserve_bytes(archers: Iterable[str], rounds: int = 3, arrows: int = 4,
                       margin: float = 0.5) -> int:
    """Bytes for a whole show's log: every archer's ``arrows`` in each of ``rounds`` (a roster
    of none: 16 archers), each row with its archer's (and pair's) name, twice over (a
    correction rewrites the log beside itself), ``margin`` more for corrections and resent
    shots, and the header."""
    names = [len(a.encode("utf-8")) for a in archers] or [16] * 16
    rows = len(names) * rounds * arrows
    one = ROW_BYTES + 2 * max(names)
    return int(2 * rows * one * (1 + margin)) + len(HEADER) + PAGE_BYTES


def _header_line() -> bytes:
    buf = io.StringIO()
    csv.writer(buf).writerow(COLUMNS)
    return buf.getvalue().encode("utf-8")


HEADER = _header_line()


def _cell(value: Any) -> Any:
    """A value as ``check --format csv`` writes it: empty for None, true/false for booleans."""
    return "" if value is None else report.csv_cell(value)


class ShotLogWriter:
    """Appends judged rows (dicts of :data:`COLUMNS`) to ``path``, each fsynced; with
    ``reserve_bytes``, a reserve of that many bytes is held beside it (module docstring)."""

    def __init__(self, path: str | os.PathLike[str], reserve_bytes: int | None = None) -> None:
        self.path = str(path)
        self.repaired: str | None = None          # what opening the file changed, if anything
        self.reserve_path = self.path + ".reserve"
        self.reserve_bytes: int | None = None     # the reserve still held (None: none)
        self._reserve_fd = self._fd = -1
        self._fresh = True          # no row yet: the first comes with the header, atomically
        self._size = 0
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            if os.path.exists(self.path):
                self._fd = os.open(self.path, os.O_RDWR)
            elif not os.access(folder, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, "its folder cannot be written to")
        except OSError as exc:
            raise UserError(f"cannot open the shot log: {exc.strerror}", file=self.path) from None
        try:
            if reserve_bytes is not None:
                self._reserve(reserve_bytes)
            if self._fd >= 0:
                self._prepare()
        except BaseException as exc:
            self.close()
            if isinstance(exc, OSError):
                raise UserError(f"cannot write the shot log: {exc.strerror}", file=self.path,
                                key="--shots-log") from None
            raise
        self._buf = io.StringIO()
        self._csv = csv.writer(self._buf)

    def _reserve(self, size: int) -> None:
        """Hold ``size`` bytes of the disk in the reserve file, or refuse the start."""
        self._reserve_fd = os.open(self.reserve_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(self._reserve_fd, 0)
            if size > 0:
                os.posix_fallocate(self._reserve_fd, 0, size)  # noqa: TID251 (the log's own, above)
        except OSError as exc:
            raise UserError(f"cannot reserve {size} bytes for the show's rows beside the shot "
                            f"log ({self.reserve_path}): {exc.strerror}; free space or give "
                            "--shots-log-reserve", file=self.path, key="--shots-log") from None
        self.reserve_bytes = size

    def _give_back(self, need: int) -> bool:
        """Shrink the reserve by ``need`` bytes (a page at least); False when it is empty."""
        if self._reserve_fd < 0 or not self.reserve_bytes:
            return False
        take = -(-max(need, 1) // PAGE_BYTES) * PAGE_BYTES
        left = max(0, self.reserve_bytes - take)
        os.ftruncate(self._reserve_fd, left)
        self.reserve_bytes = left
        return True

    def _spending_reserve(self, need: int, act: Callable[[], T]) -> T:
        """``act()``; when it finds the disk full, again after the reserve gave ``need`` bytes
        back (as long as it has some)."""
        while True:
            try:
                return act()
            except OSError as exc:
                if exc.errno not in NO_SPACE or not self._give_back(need):
                    raise

    def _prepare(self) -> None:
        """An old file must have the header, and loses a cut-short last line; an empty one, or
        one whose header a crash cut, is as new (the first row replaces it, with the header)."""
        size = os.fstat(self._fd).st_size
        text = os.pread(self._fd, size, 0)
        if HEADER.startswith(text):                 # empty, whole header, or a header cut short
            self._fresh = text != HEADER
            self._size = size
            if text and self._fresh:
                self.repaired = "a header cut short by a crash: rewritten with the first row"
            return
        if not text.startswith(HEADER.rstrip(b"\r\n")):
            raise UserError("exists and is not a live shot log (its header is not "
                            f"{','.join(COLUMNS)}): give a new file", file=self.path,
                            key="--shots-log")
        self._fresh = False
        self._size = size
        if not text.endswith(b"\n"):
            keep = text.rfind(b"\n") + 1
            os.ftruncate(self._fd, keep)
            os.fsync(self._fd)
            self._size = keep
            self.repaired = (f"dropped a last line cut short by a crash ({size - keep} bytes, "
                             "never confirmed)")

    def _append(self, data: bytes) -> None:
        """Write ``data`` at the end and fsync; on a failure, cut the file back to where it was
        (it ends on a whole line) and raise."""
        size = self._size
        try:
            view = memoryview(data)
            at = size
            while view:
                n = os.pwrite(self._fd, view, at)
                view, at = view[n:], at + n
            os.fsync(self._fd)
        except OSError:
            os.ftruncate(self._fd, size)        # needs no space
            with contextlib.suppress(OSError):
                os.fsync(self._fd)
            raise
        self._size = size + len(data)

    def write(self, row: dict[str, Any]) -> None:
        """Append one row and return once it is on disk (fsync); an OSError leaves the file as
        it was (the reserve is spent first when the disk is full)."""
        self._buf.seek(0)
        self._buf.truncate()
        self._csv.writerow([_cell(row.get(name)) for name in COLUMNS])
        data = self._buf.getvalue().encode("utf-8")
        if self._fresh:                             # the header and the first row, whole
            self._spending_reserve(len(HEADER + data), lambda: self._replace(HEADER + data))
            self._fresh = False
        else:
            self._spending_reserve(len(data), lambda: self._append(data))

    def rewrite(self, rows: list[dict[str, Any]]) -> None:
        """Replace the log by the header and ``rows`` (every shot, latest verdicts), atomically."""
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(COLUMNS)
        writer.writerows([_cell(row.get(name)) for name in COLUMNS] for row in rows)
        data = buf.getvalue().encode("utf-8")
        self._spending_reserve(len(data), lambda: self._replace(data))
        self._fresh = False

    def _replace(self, data: bytes) -> None:
        """``data`` to a temporary file beside the log, fsynced, renamed over the log (the
        folder fsynced): a crash leaves the old log or the new one, whole."""
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(self.path)}.", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR)
        self._size = len(data)

    def close(self) -> None:
        """Close the log; the reserve is given back (its file removed)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._reserve_fd >= 0:
            os.close(self._reserve_fd)
            self._reserve_fd = -1
            self.reserve_bytes = None
            with contextlib.suppress(OSError):
                os.unlink(self.reserve_path)

    def __enter__(self) -> ShotLogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

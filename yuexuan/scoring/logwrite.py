"""The live shot log (``play --shots-log FILE``): one row a judged shot, on disk before it is shown.

Rows are in the columns of ``check --format csv`` (:func:`yuexuan.scoring.report.fields_out`),
written by :mod:`csv` (CRLF line ends, as ``check`` writes them), each followed by ``flush`` and
:func:`os.fsync`: once :meth:`ShotLogWriter.write` has returned, a kill (even SIGKILL, or the
machine losing power after the disk has the data) keeps that row. The header is written when the
file is new or empty; an existing file is appended to when its header is the same (a show
resumed after a crash goes on in the same log).

A crash during a write can leave the last line cut short. That row was never confirmed (its
verdict was neither shown nor sent), so opening the file again drops it — the only change ever
made to rows already there — and says so in :attr:`ShotLogWriter.repaired`. ``check`` reads such
a file as it is, with a warning (:mod:`yuexuan.scoring.logread`).

A scorer's correction (``/yuexuan/correct``) changes a row already written: :meth:`rewrite`
writes every row to a temporary file beside the log, fsyncs it, renames it over the log and
fsyncs the folder, so a crash leaves either the old log or the new one, whole.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from typing import Any

from yuexuan.errors import UserError
from yuexuan.scoring import report

COLUMNS = report.fields_out(None)


def _header_line() -> bytes:
    buf = io.StringIO()
    csv.writer(buf).writerow(COLUMNS)
    return buf.getvalue().encode("utf-8")


HEADER = _header_line()


def _cell(value: Any) -> Any:
    """A value as ``check --format csv`` writes it: empty for None, true/false for booleans."""
    return "" if value is None else report._csv_cell(value)


class ShotLogWriter:
    """Appends judged rows (dicts of :data:`COLUMNS`) to ``path``, each fsynced."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.repaired: str | None = None          # what opening the file changed, if anything
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UserError(f"cannot open the shot log: {exc.strerror}", file=self.path) from None
        try:
            self._prepare()
        except BaseException:
            os.close(self._fd)
            raise
        self._buf = io.StringIO()
        self._csv = csv.writer(self._buf)

    def _prepare(self) -> None:
        """A new file gets the header; an old one must have it, and loses a cut-short last line."""
        size = os.fstat(self._fd).st_size
        if size == 0:
            self._append(HEADER)
            return
        text = os.pread(self._fd, size, 0)
        if HEADER.startswith(text) and text != HEADER:          # a crash while writing the header
            os.ftruncate(self._fd, 0)
            self._append(HEADER)
            self.repaired = "rewrote a header cut short by a crash"
            return
        if not text.startswith(HEADER.rstrip(b"\r\n")):
            raise UserError("exists and is not a live shot log (its header is not "
                            f"{','.join(COLUMNS)}): give a new file", file=self.path,
                            key="--shots-log")
        if not text.endswith(b"\n"):
            keep = text.rfind(b"\n") + 1
            os.ftruncate(self._fd, keep)
            os.fsync(self._fd)
            self.repaired = (f"dropped a last line cut short by a crash ({size - keep} bytes, "
                             "never confirmed)")
            if keep == 0:                          # even the header was cut
                self._append(HEADER)

    def _append(self, data: bytes) -> None:
        os.lseek(self._fd, 0, os.SEEK_END)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        os.fsync(self._fd)

    def write(self, row: dict[str, Any]) -> None:
        """Append one row and return once it is on disk (fsync)."""
        self._buf.seek(0)
        self._buf.truncate()
        self._csv.writerow([_cell(row.get(name)) for name in COLUMNS])
        self._append(self._buf.getvalue().encode("utf-8"))

    def rewrite(self, rows: list[dict[str, Any]]) -> None:
        """Replace the log by the header and ``rows`` (every shot, latest verdicts), atomically."""
        folder = os.path.dirname(os.path.abspath(self.path))
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(COLUMNS)
        writer.writerows([_cell(row.get(name)) for name in COLUMNS] for row in rows)
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(self.path)}.", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(buf.getvalue().encode("utf-8"))
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
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_RDWR)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ShotLogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

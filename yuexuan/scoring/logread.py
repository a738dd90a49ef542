"""Reading a shot log file (UTF-8 CSV with a header row, or JSON lines) into columns of text.

The CSV goes through :mod:`csv`, JSON lines through :mod:`json`; nothing is validated here but
the file itself (readable, not binary, UTF-8, not empty) and its layout (a header naming the
required columns, rows of the header's width, one JSON object a line). Every mistake is a
:class:`~yuexuan.errors.UserError` naming the file, the line, the shot row and the column.

A log written live (``play --shots-log``) may end in a line a crash cut short: the file does not
end with a line break and its last line is not whole — not UTF-8 (a character cut), fewer fields
than the header (CSV) or not a JSON object (JSON lines). That line is left out with a warning
(:attr:`Columns.warnings`); anywhere else the same faults are errors. A line cut inside its last
field cannot be told from a whole one (the live log's last column, ``reason``, is not read).
"""

from __future__ import annotations

import contextlib
import csv
import gc
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.errors import UserError

REQUIRED = ("time", "archer", "rank", "role", "target", "result")
OPTIONAL = ("pair", "round")
FIELDS = REQUIRED + OPTIONAL

MAX_FILE_BYTES = 2 * 1024 ** 3
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
CSV_SUFFIXES = (".csv", ".txt")


@dataclass(frozen=True)
class Columns:
    """A shot log's fields as text, before validation.

    ``values`` maps every name of :data:`FIELDS` to one string a row (as read, blanks kept; an
    optional column the log lacks is all empty); ``lines`` is each row's 1-based line in the file.
    """

    path: str
    values: dict[str, list[str]]
    lines: npt.NDArray[np.int64]          # int64
    warnings: tuple[str, ...] = ()     # e.g. a last line cut short, left out


def field_error(path: str | Path, line: int | None, row: int | None, column: str | None,
                message: str) -> UserError:
    """The error for one field: ``FILE:LINE: COLUMN: row ROW: message`` (row 1 = first shot)."""
    where = f"row {row}: " if row else ""
    return UserError(f"{where}{message}", file=str(path), line=line, key=column)


def read_text(path: Path) -> str:
    """The file's text: UTF-8, BOM removed; refused when unreadable, binary, not UTF-8 or empty."""
    return read_log_text(path)[0]


def _cut_short(path: str | Path, line: int) -> str:
    """The warning for a last line (1-based ``line``) cut short, left out."""
    return f"{path}:{line}: the last line is cut short (a crash while it was written?): left out"


ENCODINGS = {"utf-8": "utf-8", "utf-16": "utf-16", "gb18030": "gb18030", "gbk": "gb18030"}
BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def _utf16_without_bom(raw: bytes) -> str | None:
    """'utf-16-le' or 'utf-16-be' when ``raw`` looks like UTF-16 text without a BOM (every other
    byte NUL, as ASCII text is in UTF-16), else None."""
    head = raw[:4096]
    if len(head) < 4 or len(head) % 2:
        head = head[:len(head) - len(head) % 2]
    if len(head) < 4:
        return None
    odd, even = head[1::2], head[0::2]
    if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "utf-16-be"
    return None


def read_log_text(path: Path, encoding: str | None = None) -> tuple[str, str | None]:
    """:func:`read_text`, and a warning when an unterminated last line is not UTF-8 (a character
    cut by a crash): that line is then left out of the text. UTF-8 and UTF-16 (what spreadsheet
    programs write as "Unicode text"), with or without a BOM, are read as such; ``encoding``
    (``--encoding``: utf-8, utf-16, gb18030) forces one. Other text is refused with what it looks
    like (GBK/GB18030: how to convert it)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, io.SEEK_END)
            if size > MAX_FILE_BYTES:
                raise UserError(f"file is {size} bytes; the limit is {MAX_FILE_BYTES}",
                                file=str(path))
            f.seek(0)
            raw = f.read()
    except FileNotFoundError:
        raise UserError("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise UserError("is a directory, expected a shot log (CSV or JSON lines)",
                        file=str(path)) from None
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}", file=str(path)) from None
    codec = None if encoding is None else ENCODINGS[encoding]
    for bom, name in BOMS:
        if raw.startswith(bom) and codec in (None, name.split("-le")[0].split("-be")[0]):
            raw, codec = raw[len(bom):], name
            break
    if codec is None:
        codec = _utf16_without_bom(raw)
    if codec is not None and codec != "utf-8":
        try:
            text = raw.decode(codec)
        except UnicodeDecodeError as exc:
            raise UserError(f"not {codec.upper()} text (bad byte at offset {exc.start})",
                            file=str(path)) from None
        if not text or text.isspace():
            raise UserError("empty file: expected a header row (time,archer,rank,role,target,result)"
                            " or JSON lines", file=str(path))
        return text.replace("\r\n", "\n") if codec.startswith("utf-16") else text, None
    if not raw or raw.isspace():
        raise UserError("empty file: expected a header row (time,archer,rank,role,target,result)"
                        " or JSON lines", file=str(path))
    nul = raw.find(b"\0")
    if nul >= 0:
        raise UserError(f"binary file (NUL byte at offset {nul}): expected UTF-8 CSV or JSON lines",
                        file=str(path), line=raw.count(b"\n", 0, nul) + 1)
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        last = raw.rfind(b"\n") + 1
        if not raw.endswith(b"\n") and exc.start >= last > 0:
            try:
                return raw[:last].decode("utf-8"), _cut_short(path, raw.count(b"\n") + 1)
            except UnicodeDecodeError:
                pass
        if _looks_chinese(raw, "gb18030"):
            raise UserError("looks like GBK/GB18030 text: save it as UTF-8 (or pass --encoding "
                            "gb18030)", file=str(path)) from None
        raise UserError(f"not UTF-8 text (bad byte at offset {exc.start}): expected UTF-8 CSV "
                        "or JSON lines", file=str(path),
                        line=raw.count(b"\n", 0, exc.start) + 1) from None


def _looks_chinese(raw: bytes, codec: str) -> bool:
    """Whether ``raw`` decodes as ``codec`` into text with CJK characters (not UTF-8 by then)."""
    try:
        text = raw.decode(codec)
    except UnicodeDecodeError:
        return False
    return sum("\u4e00" <= ch <= "\u9fff" for ch in text) >= 2


def _header_index(path: Path, header: list[str]) -> dict[str, int]:
    """Column name → position in the row, for the names of :data:`FIELDS` (case and blanks
    ignored; other columns are left out)."""
    index = {}
    for k, h in enumerate(header):
        name = h.strip().lower()
        if name in FIELDS:
            if name in index:
                raise field_error(path, 1, None, name, f"column '{name}' appears twice in the header")
            index[name] = k
    missing = [f for f in REQUIRED if f not in index]
    if missing:
        raise field_error(
            path, 1, None, missing[0],
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}: the header "
            f"must name {', '.join(REQUIRED)} (and optionally pair, round); found "
            f"{','.join(h.strip() for h in header) or 'nothing'}")
    return index


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (restored after). Reading a log keeps one list a
    row alive at once — lists of strings, never cycles — and the collector's passes over them
    took about three times as long as the reading itself (bench/bench_check.py)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _is_blank(row: list[str]) -> bool:
    return not row or (len(row) == 1 and not row[0].strip())


def _line_numbers(text: str) -> list[int]:
    """The 1-based line on which each row after the header ends (rows may span lines)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader, None)
    return [reader.line_num for _ in reader]


DELIMITERS = {",": ",", ";": ";", "tab": "\t", "\t": "\t", "\\t": "\t", "|": "|"}
DECIMAL_COMMA = re.compile(r"\s*[+-]?\d+,\d+\s*")


def sniff_delimiter(path: Path, text: str) -> str:
    """The field separator of a CSV log: comma, semicolon (Excel in locales with a decimal comma)
    or tab (Excel's "text"), by :class:`csv.Sniffer` on the first lines; a comma when it cannot
    tell (a one-column file)."""
    sample = "\n".join(text.splitlines()[:20])
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t").delimiter
    except csv.Error:
        first = text.splitlines()[0] if text else ""
        counts = {d: first.count(d) for d in ",;\t"}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] else ","


def read_csv(path: Path, text: str, delimiter: str | None = None) -> Columns:
    """A CSV with a header row; blank lines are skipped, a row of another width is refused. The
    separator is ``delimiter`` or sniffed (:func:`sniff_delimiter`); where it is not a comma, a
    time with a decimal comma (``1144,33``) is read as a decimal point."""
    sep = delimiter or sniff_delimiter(path, text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    header = next(reader, [])
    index = _header_index(path, header)
    ncol = len(header)
    with _cyclic_gc_paused():
        rows = list(reader)
        if reader.line_num == len(rows) + 1:             # one line a row: the common case
            lines = np.arange(2, len(rows) + 2, dtype=np.int64)
        else:                                            # a quoted field held a line break
            lines = np.array(_line_numbers(text), dtype=np.int64)
        warnings: tuple[str, ...] = ()
        if (rows and not text.endswith(("\n", "\r")) and len(rows[-1]) < ncol
                and not _is_blank(rows[-1])):               # cut short by a crash
            warnings = (_cut_short(path, int(lines[-1])),)
            rows.pop()
            lines = lines[:-1]
        width = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        odd = np.flatnonzero(width != ncol)
        if odd.size:
            blank = np.array([_is_blank(rows[i]) for i in odd], dtype=bool)
            if not blank.all():
                k = int(np.flatnonzero(~blank)[0])
                i = int(odd[k])
                t = index["time"]
                row = rows[i]
                if (sep == "," and len(row) == ncol + 1 and t + 1 < len(row)
                        and DECIMAL_COMMA.fullmatch(f"{row[t]},{row[t + 1]}")):
                    raise field_error(path, int(lines[i]), i + 1 - k, "time",
                                      f'"{row[t].strip()},{row[t + 1].strip()}" — a decimal '
                                      f"comma? quote it or use a point")
                raise field_error(path, int(lines[i]), i + 1 - k, None,
                                  f"has {len(rows[i])} fields, the header has {ncol} "
                                  f"({sep.join(header)})")
            keep = np.ones(len(rows), dtype=bool)
            keep[odd] = False
            rows = [rows[i] for i in np.flatnonzero(keep)]
            lines = lines[keep]
        empty = [""] * len(rows)
        values = {name: list(map(itemgetter(index[name]), rows)) if name in index else empty
                  for name in FIELDS}
        del rows
        if sep != ",":                    # a decimal comma, as where ";" separates the fields
            values["time"] = [v.replace(",", ".", 1) if "," in v and DECIMAL_COMMA.fullmatch(v)
                              else v for v in values["time"]]
    return Columns(str(path), values, lines, warnings)


def _json_value(path: str | Path, line: int, row: int, name: str, value: Any) -> str:
    """A JSON field as the text a CSV would hold (numbers for time and round, null for empty)."""
    if name == "time":
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise field_error(path, line, row, "time", f"time {value!r} is not a number of seconds")
        if isinstance(value, str):
            return value
        try:
            return repr(float(value))
        except OverflowError:                      # an integer beyond any float
            raise field_error(path, line, row, "time",
                              "time is not a finite number of seconds") from None
    if value is None:
        return ""
    if name == "round" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise field_error(path, line, row, name, f"{name} {value!r} must be a string")
    return value


def read_jsonl(path: Path, text: str) -> Columns:
    """One JSON object a line (lines end at ``\n``; blank lines skipped), each with the fields of
    :data:`REQUIRED`."""
    values: dict[str, list[str]] = {name: [] for name in FIELDS}
    lines: list[int] = []
    warnings: tuple[str, ...] = ()
    split = text.split("\n")
    for lineno, line in enumerate(split, start=1):
        if not line.strip():
            continue
        row = len(lines) + 1
        try:
            obj = json.loads(line)
            if lineno == len(split) and not isinstance(obj, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            if lineno == len(split):                    # unterminated last line: cut short
                warnings = (_cut_short(path, lineno),)
                break           # JSONDecodeError, or an integer of too many digits
            why = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) \
                else str(exc)
            raise field_error(path, lineno, row, None,
                              f"not valid JSON ({why}); expected one object a line") from None
        if not isinstance(obj, dict):
            raise field_error(path, lineno, row, None, "expected a JSON object a line")
        for name in FIELDS:
            if name in obj:
                values[name].append(_json_value(path, lineno, row, name, obj[name]))
            elif name in OPTIONAL:
                values[name].append("")
            else:
                raise field_error(path, lineno, row, name,
                                  f"missing field '{name}': each line needs "
                                  f"{', '.join(REQUIRED)} (and optionally pair, round)")
        lines.append(lineno)
    return Columns(str(path), values, np.array(lines, dtype=np.int64), warnings)


def is_jsonl(path: Path, text: str) -> bool:
    """JSON lines by the suffix (.jsonl, .ndjson, .json), else by a first ``{``."""
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return True
    if suffix in CSV_SUFFIXES:
        return False
    return text.lstrip().startswith("{")


def read_columns(path: str | Path, delimiter: str | None = None,
                 encoding: str | None = None) -> Columns:
    """The shot log at ``path`` as columns of text (CSV or JSON lines); ``delimiter`` and
    ``encoding`` force the CSV's separator and the file's encoding (else sniffed)."""
    path = Path(path)
    text, cut = read_log_text(path, encoding)
    if text.lstrip().startswith("[") and path.suffix.lower() not in (".jsonl", ".ndjson"):
        raise UserError("this is JSON, not CSV: a JSON array; write one JSON object a line "
                        "(JSON lines) or a CSV with a header row", file=str(path), line=1)
    columns = (read_jsonl(path, text) if is_jsonl(path, text)
               else read_csv(path, text, DELIMITERS.get(delimiter or "", delimiter)))
    if cut:
        columns = Columns(columns.path, columns.values, columns.lines, (cut, *columns.warnings))
    return columns

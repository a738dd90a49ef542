"""Reading TOML data files with errors that name the file, the line and the key."""

from __future__ import annotations

import functools
import math
import pickle
import re
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, TypeAlias

from yuexuan.errors import UserError

MAX_FILE_BYTES = 8 * 1024 * 1024


def load(path: str | Path) -> tuple[dict[str, Any], str]:
    """Parse a TOML file; return (data, text). Syntax errors become :class:`UserError`."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserError("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise UserError("is a directory, expected a TOML file", file=str(path)) from None
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}", file=str(path)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise UserError(f"file is {len(raw)} bytes; the limit is {MAX_FILE_BYTES}", file=str(path))
    if b"\0" in raw:
        raise UserError("binary file, expected UTF-8 TOML text", file=str(path))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"not UTF-8 text (byte {exc.start})", file=str(path)) from None
    try:
        return pickle.loads(_parsed(text)), text
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        line = int(m.group(1)) if m else None
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg)
        col = f", column {m.group(2)}" if m else ""
        raise UserError(f"TOML syntax error{col}: {msg}", file=str(path), line=line) from None


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> bytes:
    """tomllib's parse of ``text``, pickled (a pure function, memoised: a command reads the same
    data files more than once, and a process that runs commands reads them for each; tomllib
    parses in Python, 25 times the time of an unpickle). Each caller gets its own copy."""
    return pickle.dumps(tomllib.loads(text), protocol=pickle.HIGHEST_PROTOCOL)


@functools.lru_cache(maxsize=8)
def _lines(text: str) -> tuple[str, ...]:
    """The lines of a file's text, split once (a pure function, memoised: a cue sheet's text is
    looked up once per table, and re-splitting it each time would be quadratic)."""
    return tuple(text.splitlines())


def line_of(text: str, key: str, value: str | None = None, start: int = 1) -> int | None:
    """1-based line of ``key = …`` (optionally ``key = "value"``) at or after line ``start``."""
    pat = re.compile(r"^\s*" + re.escape(key) + r"\s*=" +
                     (r"\s*[\"']" + re.escape(value) + r"[\"']" if value is not None else ""))
    lines = _lines(text)
    for i in range(max(start, 1) - 1, len(lines)):
        if pat.search(lines[i]):
            return i + 1
    return None


def _is_header(line: str, target: str) -> bool:
    """Whether ``line`` is the table header ``target`` (``[name]`` or ``[[name]]``), a comment
    after it or not."""
    line = line.strip()
    return line == target or (line.startswith(target) and line[len(target):].lstrip().startswith("#"))


def table_lines(text: str, header: str) -> list[int]:
    """1-based lines of every ``[[header]]`` array-of-tables header, in order (one pass)."""
    return list(_table_lines(text, header))


@functools.lru_cache(maxsize=32)
def _table_lines(text: str, header: str) -> tuple[int, ...]:
    """:func:`table_lines`, memoised: a cue sheet's tables look up their own lines one by one."""
    target = f"[[{header}]]"
    return tuple(i for i, line in enumerate(_lines(text), start=1) if _is_header(line, target))


def table_line(text: str, header: str, index: int) -> int | None:
    """1-based line of the ``index``-th (0-based) ``[[header]]`` array-of-tables header."""
    lines = _table_lines(text, header)
    return lines[index] if 0 <= index < len(lines) else None


@functools.lru_cache(maxsize=256)
def header_line(text: str, header: str) -> int | None:
    """1-based line of the ``[header]`` table header, or None."""
    target = f"[{header}]"
    return next((i for i, line in enumerate(_lines(text), start=1) if _is_header(line, target)), None)


#: the keys a TOML table may have (:meth:`Fields.known_keys`): each a value (None) or a table's schema
Schema: TypeAlias = Mapping[str, "Schema | None"] | set[str] | frozenset[str]


class Fields:
    """Typed access to one TOML table with errors naming file, line and key."""

    def __init__(self, data: dict[str, Any], file: str, text: str, prefix: str,
                 line: int | None = None) -> None:
        if not isinstance(data, dict):
            raise UserError("expected a table", file=file, line=line, key=prefix)
        self.data, self.file, self.text, self.prefix, self.line = data, file, text, prefix, line

    def _key(self, k: str) -> str:
        return f"{self.prefix}.{k}" if self.prefix else k

    def line_for(self, k: str) -> int | None:
        """1-based line of key ``k`` (searched from this table's line), else this table's line."""
        return line_of(self.text, k, start=self.line or 1) or self.line

    def error(self, k: str, msg: str) -> UserError:
        return UserError(msg, file=self.file, line=self.line_for(k), key=self._key(k))

    def has(self, k: str) -> bool:
        return k in self.data

    def get(self, k: str, kind: type | tuple[type, ...], default: Any = ..., *,
            choices: Collection[Any] | None = None, lo: float | None = None, hi: float | None = None) -> Any:
        """Value of key ``k``: of ``kind``, in ``choices``, within [lo, hi]; ``default`` if absent."""
        if k not in self.data:
            if default is ...:
                raise UserError("missing key", file=self.file, line=self.line, key=self._key(k))
            return default
        v: Any = self.data[k]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if (isinstance(v, bool) and bool not in kinds) or not any(isinstance(v, t) for t in kinds):
            names = " or ".join({float: "a number", int: "an integer", str: "a string", bool: "true or false",
                                 list: "an array", dict: "a table"}.get(t, t.__name__) for t in kinds)
            raise self.error(k, f"expected {names}, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise self.error(k, f"expected a finite number, got {v!r}")
        if choices is not None and v not in choices:
            raise self.error(k, f"unknown value {v!r}; expected one of: {', '.join(map(str, choices))}")
        if lo is not None and v < lo:
            raise self.error(k, f"{v!r} is too small; expected at least {lo}")
        if hi is not None and v > hi:
            raise self.error(k, f"{v!r} is too large; expected at most {hi}")
        return v

    def table(self, k: str, default: Any = ...) -> Fields:
        """The table under key ``k`` (a ``[k]`` section at the top level, else an inline table)."""
        line = header_line(self.text, k) if not self.prefix else None
        return Fields(self.get(k, dict, default), self.file, self.text, self._key(k),
                      line or self.line_for(k))

    def tables(self, k: str, default: Any = ..., *, limit: int | None = None) -> list[Fields]:
        """The tables of the array under key ``k`` (``[[k]]`` headers at the top level, else an
        inline array of tables), each as Fields named ``k[i]`` with its line; at most ``limit``."""
        items = self.get(k, list, default)
        if limit is not None and len(items) > limit:
            raise self.error(k, f"{len(items)} {k}s; the limit is {limit}")
        if self.prefix:
            lines: list[int | None] = [self.line_for(k)] * len(items) if items else []
        else:
            lines = list(table_lines(self.text, k))
        return [Fields(item, self.file, self.text, f"{self._key(k)}[{i}]",
                       lines[i] if i < len(lines) else None)
                for i, item in enumerate(items)]

    def strings(self, k: str) -> tuple[str, ...]:
        """An array of non-empty strings (names) under key ``k``; () if absent."""
        v = self.get(k, list, None)
        if v is None:
            return ()
        for x in v:
            if not isinstance(x, str) or not x:
                raise self.error(k, f"expected an array of names, got {x!r}")
        return tuple(v)

    def unknown(self, allowed: Collection[str]) -> None:
        """Reject keys not in ``allowed`` (catches typos)."""
        for k in self.data:
            if k not in allowed:
                raise self.error(k, f"unknown key; expected one of: {', '.join(sorted(allowed))}")

    def known_keys(self, schema: Schema) -> None:
        """Reject any key, at any depth, that ``schema`` does not name (a typo is an error naming the
        key, the file and its line, not a value silently ignored).

        ``schema`` maps each allowed key to None (a value) or to the schema of the table, or of each
        table of the array of tables, found under it; a set or frozenset is a schema of values only.
        A key whose value has another type is left to the reader (which says what it expected)."""
        allowed = dict.fromkeys(schema) if isinstance(schema, (set, frozenset)) else schema
        self.unknown(allowed)
        for k, sub in allowed.items():
            v = self.data.get(k)
            if sub is None or v is None:
                continue
            if isinstance(v, dict):
                self.table(k).known_keys(sub)
            elif isinstance(v, list) and v and all(isinstance(item, dict) for item in v):
                for item in self.tables(k):
                    item.known_keys(sub)

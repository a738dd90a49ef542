"""Reading and validating shot logs (CSV or JSON lines) into numpy arrays.

A shot log has one row per arrow: ``time`` (seconds), ``archer``, ``rank`` (公 | 宾 | 卿 | 大夫 | 士),
``role`` (上射 | 下射), ``target`` (the 侯 hit: 大侯 | 参 | 干; empty for a miss), ``result``
(贯 | 离维纲 | 扬触 | 梱复 | 不中) and optionally ``pair`` and ``round`` (1 | 2 | 3; default 3).
Every mistake is a :class:`~yuexuan.errors.UserError` naming the file, the line, the row and the
column. A plain CSV (no quotes) is split on the raw bytes with numpy, never a Python object per
field; quoted CSV goes through :mod:`csv`, JSON lines through :mod:`json`.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from yuexuan.errors import UserError

RANKS = ("公", "宾", "卿", "大夫", "士")          # most senior first
ROLES = ("上射", "下射")
TARGETS = ("大侯", "参", "干")
RESULTS = ("贯", "离维纲", "扬触", "梱复", "不中")
MISS = RESULTS.index("不中")

REQUIRED = ("time", "archer", "rank", "role", "target", "result")
OPTIONAL = ("pair", "round")
FIELDS = REQUIRED + OPTIONAL

MAX_FILE_BYTES = 2 * 1024 ** 3
MAX_FAST_FIELD_BYTES = 256      # longer fields go through the csv module


@dataclass(frozen=True)
class Shots:
    """A validated shot log, one entry per input row, in input order.

    Category columns hold indices into :data:`RANKS`, :data:`ROLES`, :data:`TARGETS` (−1 = no
    target, a miss) and :data:`RESULTS`; ``archer`` and ``pair`` index ``archer_names`` and
    ``pair_names`` (pair −1 = none given). ``lines`` gives each row's 1-based line in the file.
    """

    path: str
    time: np.ndarray          # float64, seconds, as read (before any clock offset)
    archers: object           # () -> (int32 index per row, names); grouped when first asked
    rank: np.ndarray          # int8 index into RANKS
    role: np.ndarray          # int8 index into ROLES
    target: np.ndarray        # int8 index into TARGETS, -1 for none
    result: np.ndarray        # int8 index into RESULTS
    pair: np.ndarray          # int32 index into pair_names, -1 for none
    pair_names: list
    round: np.ndarray         # int8, 1..3
    lines: np.ndarray         # int64, 1-based line of each row
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.time)

    def _archers(self):
        if "archers" not in self._memo:
            self._memo["archers"] = self.archers()
        return self._memo["archers"]

    @property
    def archer(self) -> np.ndarray:
        """int32 index into :attr:`archer_names`, per row (the rules never need it, so it is
        computed when first asked for, for the output)."""
        return self._archers()[0]

    @property
    def archer_names(self) -> list:
        return self._archers()[1]


def _fail(path, line, row, column, message):
    where = f"row {row}: " if row else ""
    raise UserError(f"{where}{message}", file=str(path), line=line, key=column)


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserError("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise UserError("is a directory, expected a shot log (CSV or JSON lines)",
                        file=str(path)) from None
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}", file=str(path)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise UserError(f"file is {len(raw)} bytes; the limit is {MAX_FILE_BYTES}", file=str(path))
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw or raw.isspace():
        raise UserError("empty file: expected a header row (time,archer,rank,role,target,result)"
                        " or JSON lines", file=str(path))
    nul = raw.find(b"\0")
    if nul >= 0:
        raise UserError(f"binary file (NUL byte at offset {nul}): expected UTF-8 CSV or JSON lines",
                        file=str(path), line=raw.count(b"\n", 0, nul) + 1)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"not UTF-8 text (bad byte at offset {exc.start}): expected UTF-8 CSV "
                        "or JSON lines", file=str(path),
                        line=raw.count(b"\n", 0, exc.start) + 1) from None
    return raw


# -- columns: two sources, one interface --------------------------------------------------------

class _ListColumns:
    """Columns held as lists of str (quoted CSV, JSON lines)."""

    def __init__(self, cols: dict, lines: np.ndarray):
        self.cols = cols
        self.lines = lines
        self.n = len(lines)

    def has(self, name):
        return name in self.cols

    def text(self, name, i) -> str:
        return self.cols[name][i]

    def empty(self, name) -> np.ndarray:
        return np.array([not v.strip() for v in self.cols[name]], dtype=bool)

    def floats(self, name):
        values = self.cols[name]
        if any("_" in v for v in values):
            return None
        try:
            return np.array([v.strip() for v in values], dtype=np.float64)
        except ValueError:
            return None

    def codes(self, name, vocab: dict) -> np.ndarray:
        values = [v.strip() for v in self.cols[name]]
        return np.fromiter(map(vocab.get, values, itertools.repeat(-2)), dtype=np.int16,
                           count=self.n)

    def factorize(self, name):
        values = [v.strip() for v in self.cols[name]]
        uniq = dict.fromkeys(values)
        names = [k for k in uniq if k]
        index = {k: i for i, k in enumerate(names)}
        return np.fromiter(map(index.get, values, itertools.repeat(-1)), dtype=np.int32,
                           count=self.n), names


_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 13, 32]] = True      # tab, CR, space: trimmed from both ends of a field
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)   # low k bytes


class _ByteColumns:
    """Columns of a plain CSV as (start, end) byte offsets into the file; numpy throughout.

    A field is read as little-endian 8-byte words loaded straight from the buffer (an unaligned
    strided view), masked to its length: one gather a word, no Python object a field.
    """

    def __init__(self, raw: bytes, starts: np.ndarray, ends: np.ndarray, ncol: int, index: dict,
                 first_line: int):
        """``starts``/``ends``: byte offsets of every field, row after row (ncol a row)."""
        # padded so that every 8-byte load of a field (≤ MAX_FAST_FIELD_BYTES) stays inside
        self.raw = raw + b"\0" * (MAX_FAST_FIELD_BYTES + 16)
        self.buf = np.frombuffer(self.raw, dtype=np.uint8)
        self.w8 = np.ndarray(shape=(len(self.raw) - 7,), dtype="<u8", buffer=self.raw,
                             strides=(1,))
        self.index = index
        self.ncol = ncol
        self.n = len(starts) // ncol
        self.lines = np.arange(first_line, first_line + self.n, dtype=np.int64)
        self.starts, self.ends = starts, ends
        self._cache = {}
        self.blanks = b" " in raw or b"\t" in raw or b"\r" in raw

    def has(self, name):
        return name in self.index

    def _span(self, name):
        """Start and end byte offsets of each field of ``name``, blanks trimmed."""
        key = ("span", name)
        if key not in self._cache:
            k = self.index[name]
            s = self.starts[k::self.ncol].copy()
            e = self.ends[k::self.ncol].copy()
            for _ in range(64 if self.blanks else 0):   # a few passes; blanks are rare
                lead = (s < e) & _SPACE[self.buf[s]]
                s = s + lead
                trail = (e > s) & _SPACE[self.buf[e - 1]]
                e = e - trail
                if not (lead.any() or trail.any()):
                    break
            self._cache[key] = (s, e)
        return self._cache[key]

    def words(self, name):
        """(n × k) uint64: each trimmed field's bytes, zero-padded to 8·k; and the lengths."""
        key = ("words", name)
        if key not in self._cache:
            s, e = self._span(name)
            length = e - s
            k = max(1, -(-int(length.max()) // 8))
            out = np.empty((self.n, k), dtype=np.uint64)
            for j in range(k):
                out[:, j] = self.w8[s + 8 * j]
                if (length < 8 * (j + 1)).any():
                    out[:, j] &= _MASKS[np.clip(length - 8 * j, 0, 8)]
            self._cache[key] = (out, length)
        return self._cache[key]

    def empty(self, name) -> np.ndarray:
        s, e = self._span(name)
        return s == e

    def text(self, name, i) -> str:
        s, e = self._span(name)
        return self.raw[s[i]:e[i]].decode("utf-8", "replace")

    def floats(self, name):
        w, _ = self.words(name)
        if (w.view(np.uint8) == ord("_")).any():
            return None
        try:
            return w.view(f"S{8 * w.shape[1]}").ravel().astype(np.float64)
        except ValueError:
            return None

    def codes(self, name, vocab: dict) -> np.ndarray:
        w, length = self.words(name)
        k = w.shape[1]
        keys = []
        for text, v in vocab.items():
            kb = text.encode()
            row = np.zeros(8 * max(k, -(-len(kb) // 8)), dtype=np.uint8)
            row[:len(kb)] = np.frombuffer(kb, dtype=np.uint8)
            kw = row.view("<u8")
            keys.append((int(kw[0]), len(kb), kw[1:], v))
        keys.sort(key=lambda t: t[0])
        first = np.array([t[0] for t in keys], dtype=np.uint64)
        out = np.full(self.n, -2, dtype=np.int16)
        if len(np.unique(first)) != len(first) or any(len(t[2]) > k - 1 for t in keys):
            for key0, n, rest, v in keys:        # rare: vocabulary sharing a first word
                hit = (length == n) & (w[:, 0] == key0)
                for j, x in enumerate(rest[:k - 1], start=1):
                    hit &= w[:, j] == x
                if len(rest) <= k - 1:
                    out[hit] = v
            return out
        idx = np.minimum(np.searchsorted(first, w[:, 0]), len(first) - 1)
        hit = (first[idx] == w[:, 0]) & (np.array([t[1] for t in keys])[idx] == length)
        for j in range(1, k):                    # later words: the vocabulary's, or zero
            later = np.array([t[2][j - 1] if j - 1 < len(t[2]) else 0 for t in keys],
                             dtype=np.uint64)
            hit &= later[idx] == w[:, j]
        out[hit] = np.array([t[3] for t in keys], dtype=np.int16)[idx[hit]]
        return out

    def factorize(self, name):
        w, length = self.words(name)
        h = length.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        for j in range(w.shape[1]):
            h = (h ^ w[:, j]) * np.uint64(0x100000001B3)
            h ^= h >> np.uint64(29)
        perm = np.argsort(h)
        hs = h[perm]
        new = np.empty(self.n, dtype=bool)
        new[0] = True
        np.not_equal(hs[1:], hs[:-1], out=new[1:])
        group = np.cumsum(new, dtype=np.int32) - 1
        codes = np.empty(self.n, dtype=np.int32)
        codes[perm] = group
        first = perm[new]                              # one row of each group
        rep = first[codes]
        if not ((length == length[rep]) & (w == w[rep]).all(axis=1)).all():
            # a 64-bit hash collision: exact but slower
            return _ListColumns({name: [self.text(name, i) for i in range(self.n)]},
                                self.lines).factorize(name)
        reps = np.ascontiguousarray(w[first]).view(f"S{8 * w.shape[1]}").ravel().tolist()
        names = b"\n".join(reps).decode("utf-8").split("\n")
        if "" in names:                                # empty = none: −1, and renumber
            gap = names.index("")
            names.pop(gap)
            codes = np.where(codes == gap, -1, codes - (codes > gap)).astype(np.int32)
        return codes, names


def _header_index(path: Path, header: list[str]) -> dict:
    index = {}
    for k, h in enumerate(header):
        name = h.strip().lower()
        if name in FIELDS:
            if name in index:
                _fail(path, 1, None, name, f"column '{name}' appears twice in the header")
            index[name] = k
    missing = [f for f in REQUIRED if f not in index]
    if missing:
        _fail(path, 1, None, missing[0],
              f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}: the header "
              f"must name {', '.join(REQUIRED)} (and optionally pair, round); found "
              f"{','.join(h.strip() for h in header) or 'nothing'}")
    return index


def _csv_fast(path: Path, raw: bytes):
    """Split a plain CSV (no quotes, one row a line, no blank lines) on its bytes; None if the
    file is not that plain."""
    if b'"' in raw:
        return None
    body_end = len(raw)
    while body_end and raw[body_end - 1] in b"\r\n\t ":
        body_end -= 1
    head_end = raw.find(b"\n")
    if head_end < 0 or head_end >= body_end:
        return None
    header = raw[:head_end].decode("utf-8").rstrip("\r").split(",")
    ncol = len(header)
    index = _header_index(path, header)
    start = head_end + 1
    buf = np.frombuffer(raw, dtype=np.uint8)[start:body_end]
    ends = np.flatnonzero((buf == 44) | (buf == 10))
    ends = np.append(ends, len(buf))                  # the body's end closes the last row
    ends += start
    if len(ends) % ncol:
        return None
    rows = len(ends) // ncol
    # the last separator of every row is a newline, and there are no other newlines
    if raw.count(b"\n", start, body_end) != rows - 1 or \
            (rows > 1 and not (buf[ends[ncol - 1:-1:ncol] - start] == 10).all()):
        return None                                    # ragged rows or blank lines
    starts = np.empty_like(ends)
    starts[0] = start
    np.add(ends[:-1], 1, out=starts[1:])
    if (ends - starts).max() > MAX_FAST_FIELD_BYTES:
        return None
    return _ByteColumns(raw, starts, ends, ncol, index, 2)


def _csv_slow(path: Path, raw: bytes):
    """Quoted fields, blank lines or ragged rows: the csv module, with exact line numbers."""
    reader = csv.reader(io.StringIO(raw.decode("utf-8"), newline=""))
    header = next(reader, [])
    index = _header_index(path, header)
    ncol = len(header)
    rows, lines = [], []
    for row in reader:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != ncol:
            _fail(path, reader.line_num, len(rows) + 1, None,
                  f"has {len(row)} fields, the header has {ncol} ({','.join(header)})")
        rows.append(row)
        lines.append(reader.line_num)
    cols = [list(c) for c in zip(*rows)] if rows else [[] for _ in range(ncol)]
    return _ListColumns({name: cols[k] for name, k in index.items()},
                        np.array(lines, dtype=np.int64))


def _json_value(path, line, row, name, v):
    if name == "time":
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            _fail(path, line, row, "time", f"time {v!r} is not a number of seconds")
        return v if isinstance(v, str) else repr(float(v))
    if v is None:
        return ""
    if name == "round" and isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if not isinstance(v, str):
        _fail(path, line, row, name, f"{name} {v!r} must be a string")
    return v


def _jsonl(path: Path, raw: bytes):
    rows, lines = [], []
    for lineno, text in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            _fail(path, lineno, len(rows) + 1, None, f"not valid JSON ({exc.msg} at column "
                  f"{exc.colno}); expected one object a line")
        if not isinstance(obj, dict):
            _fail(path, lineno, len(rows) + 1, None, "expected a JSON object a line")
        rows.append(obj)
        lines.append(lineno)
    names = list(REQUIRED) + [k for k in OPTIONAL if any(k in o for o in rows)]
    cols = {name: [] for name in names}
    for r, (obj, lineno) in enumerate(zip(rows, lines), start=1):
        for name in names:
            if name not in obj:
                if name in OPTIONAL:
                    cols[name].append("")
                    continue
                _fail(path, lineno, r, name, f"missing field '{name}': each line needs "
                      f"{', '.join(REQUIRED)} (and optionally pair, round)")
            cols[name].append(_json_value(path, lineno, r, name, obj[name]))
    return _ListColumns(cols, np.array(lines, dtype=np.int64))


# -- validation ---------------------------------------------------------------------------------

def _vocab(names, extra=None) -> dict:
    v = {n: k for k, n in enumerate(names)}
    v.update(extra or {})
    return v


_RANK_V = _vocab(RANKS)
_ROLE_V = _vocab(ROLES)
_TARGET_V = _vocab(TARGETS, {"": -1})
_RESULT_V = _vocab(RESULTS)
_ROUND_V = {"1": 1, "2": 2, "3": 3, "": 3}


def _build(path: Path, c) -> Shots:
    n = c.n
    if n == 0:
        raise UserError("no shots: the file has a header but no rows", file=str(path))

    def fail(i, column, message):
        _fail(path, int(c.lines[i]), i + 1, column, message)

    def category(name, vocab, allowed):
        codes = c.codes(name, vocab)
        bad = np.flatnonzero(codes == -2)
        if bad.size:
            i = int(bad[0])
            fail(i, name, f"unknown {name} {c.text(name, i)!r}; expected {allowed}")
        return codes.astype(np.int8)

    time = c.floats("time")
    if time is None:        # numpy refused a field: find it, or read what Python reads (e.g. ١٢)
        values = []
        for i in range(n):
            v = c.text("time", i).strip()
            try:
                if "_" in v:
                    raise ValueError(v)
                values.append(float(v))
            except ValueError:
                fail(i, "time", f"time {v!r} is not a number of seconds")
        time = np.array(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(time))
    if bad.size:
        i = int(bad[0])
        fail(i, "time", f"time {c.text('time', i).strip()!r} is not a finite number of seconds")
    rank = category("rank", _RANK_V, " | ".join(RANKS))
    role = category("role", _ROLE_V, " | ".join(ROLES))
    target = category("target", _TARGET_V, " | ".join(TARGETS) + " (empty for a miss)")
    result = category("result", _RESULT_V, " | ".join(RESULTS))
    if c.has("round"):
        rnd = category("round", _ROUND_V, "1 | 2 | 3 (empty = 3)")
    else:
        rnd = np.full(n, 3, dtype=np.int8)
    # A miss touched no 侯; any other result names the 侯 it touched.
    incoherent = np.flatnonzero((result == MISS) != (target < 0))
    if incoherent.size:
        i = int(incoherent[0])
        if result[i] == MISS:
            msg = f"result 不中 (a miss) but target {c.text('target', i).strip()!r}: leave it empty"
        else:
            msg = f"result {RESULTS[result[i]]} needs the 侯 it touched (大侯 | 参 | 干)"
        fail(i, "target", msg)
    empty = c.empty("archer")
    if empty.any():
        fail(int(np.flatnonzero(empty)[0]), "archer", "archer is empty")
    if c.has("pair"):
        pair, pair_names = c.factorize("pair")
    else:
        pair, pair_names = np.full(n, -1, dtype=np.int32), []
    return Shots(str(path), time, lambda: c.factorize("archer"), rank, role, target, result,
                 pair, pair_names, rnd, c.lines)


def _is_jsonl(path: Path, raw: bytes) -> bool:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return True
    if suffix in (".csv", ".txt"):
        return False
    return raw.lstrip().startswith(b"{")


def read_shots(path: str | Path) -> Shots:
    """Read and validate a shot log (UTF-8 CSV with a header row, or JSON lines)."""
    path = Path(path)
    raw = _read_bytes(path)
    if _is_jsonl(path, raw):
        return _build(path, _jsonl(path, raw))
    return _build(path, _csv_fast(path, raw) or _csv_slow(path, raw))

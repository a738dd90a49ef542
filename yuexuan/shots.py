"""Reading and validating shot logs (CSV or JSON lines) into numpy arrays.

A shot log has one row per arrow: ``time`` (seconds), ``archer``, ``rank`` (公 | 宾 | 卿 | 大夫 | 士),
``role`` (上射 | 下射), ``target`` (the 侯 hit: 大侯 | 参 | 干; empty for a miss), ``result``
(贯 | 离维纲 | 扬触 | 梱复 | 不中) and optionally ``pair`` and ``round`` (1 | 2 | 3; default 3).
Every mistake is a :class:`~yuexuan.errors.UserError` naming the file, the line, the row and the
column. Reading is vectorised: a plain CSV is split with ``str.split`` and the columns converted
by numpy; quoted CSV goes through :mod:`csv`.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from yuexuan.errors import UserError

RANKS = ("公", "宾", "卿", "大夫", "士")          # most senior first
ROLES = ("上射", "下射")
TARGETS = ("大侯", "参", "干")
RESULTS = ("贯", "离维纲", "扬触", "梱复", "不中")
ROUNDS = (1, 2, 3)
MISS = RESULTS.index("不中")

REQUIRED = ("time", "archer", "rank", "role", "target", "result")
OPTIONAL = ("pair", "round")
FIELDS = REQUIRED + OPTIONAL

MAX_FILE_BYTES = 2 * 1024 ** 3


@dataclass(frozen=True)
class Shots:
    """A validated shot log, one entry per input row, in input order.

    Category columns hold indices into :data:`RANKS`, :data:`ROLES`, :data:`TARGETS` (−1 = no
    target, a miss) and :data:`RESULTS`. ``pair`` holds a group index (−1 = no pair given);
    ``pair_names`` maps it back. ``lines`` gives each row's 1-based line in the file.
    """

    path: str
    time: np.ndarray          # float64, seconds, as read (before any clock offset)
    archer: list              # str
    rank: np.ndarray          # int8 index into RANKS
    role: np.ndarray          # int8 index into ROLES
    target: np.ndarray        # int8 index into TARGETS, -1 for none
    result: np.ndarray        # int8 index into RESULTS
    pair: np.ndarray          # int32 group index, -1 for none
    pair_names: list          # str, indexed by pair
    round: np.ndarray         # int8, 1..3
    has_pair: bool            # whether the file had a pair column
    has_round: bool           # whether the file had a round column
    first_line: int = 2       # line of row 1 when rows are one a line
    line_numbers: np.ndarray | None = None   # per-row lines when not one a line (quoted CSV)

    def __len__(self) -> int:
        return len(self.time)

    def line(self, i: int) -> int:
        """The 1-based file line of row index ``i`` (0-based)."""
        if self.line_numbers is not None:
            return int(self.line_numbers[i])
        return self.first_line + int(i)


def _fail(path, line, row, column, message):
    where = f"row {row}: " if row else ""
    raise UserError(f"{where}{message}", file=str(path), line=line, key=column)


def _read_text(path: Path) -> str:
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
    if not raw.strip():
        raise UserError("empty file: expected a header row (time,archer,rank,role,target,result)"
                        " or JSON lines", file=str(path))
    nul = raw.find(b"\0")
    if nul >= 0:
        raise UserError(f"binary file (NUL byte at offset {nul}): expected UTF-8 CSV or JSON lines",
                        file=str(path), line=raw.count(b"\n", 0, nul) + 1)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"not UTF-8 text (bad byte at offset {exc.start}): expected UTF-8 CSV "
                        "or JSON lines", file=str(path),
                        line=raw.count(b"\n", 0, exc.start) + 1) from None


def _sniff_jsonl(path: Path, text: str) -> bool:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return True
    if suffix in (".csv", ".tsv", ".txt"):
        return False
    return text.lstrip().startswith("{")


# -- CSV --------------------------------------------------------------------------------------

def _csv_columns(path: Path, text: str):
    """Return (header, columns: list[list[str]], line_numbers or None)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.rstrip("\n")
    head_end = text.find("\n")
    header_line = text if head_end < 0 else text[:head_end]
    body = "" if head_end < 0 else text[head_end + 1:]
    if '"' not in text:
        header = header_line.split(",")
        ncol = len(header)
        nrows = body.count("\n") + 1 if body else 0
        fields = body.replace("\n", ",").split(",") if body else []
        if len(fields) == ncol * nrows:
            return header, [fields[k::ncol] for k in range(ncol)], None
    # Quoted fields, blank lines or ragged rows: the csv module, with exact line numbers.
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
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
    return header, cols, np.array(lines, dtype=np.int64)


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
              f"{','.join(h.strip() for h in header)}")
    return index


# -- column conversion (vectorised) -----------------------------------------------------------

def _codes(path, shots_lines, column: str, values: list, table: dict, allowed: str) -> np.ndarray:
    codes = np.fromiter(map(table.get, values, itertools.repeat(-2)), dtype=np.int8,
                        count=len(values))
    bad = np.flatnonzero(codes == -2)
    if bad.size:
        i = int(bad[0])
        _fail(path, shots_lines(i), i + 1, column,
              f"unknown {column} {values[i]!r}; expected {allowed}")
    return codes


def _table(names, extra=None) -> dict:
    t = {}
    for k, n in enumerate(names):
        t[n] = k
        t[f" {n}"] = t[f"{n} "] = t[f" {n} "] = k
    t.update(extra or {})
    return t


_RANK_T = _table(RANKS)
_ROLE_T = _table(ROLES)
_TARGET_T = _table(TARGETS, {"": -1, " ": -1})
_RESULT_T = _table(RESULTS)
_ROUND_T = _table(("1", "2", "3"), {"": 2, " ": 2})   # index 2 = round 3


def _times(path, shots_lines, values: list) -> np.ndarray:
    try:
        t = np.array(values, dtype=np.float64)
    except ValueError:
        t = None
    if t is None:
        for i, v in enumerate(values):
            try:
                float(v)
            except ValueError:
                _fail(path, shots_lines(i), i + 1, "time",
                      f"time {v!r} is not a number of seconds")
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        i = int(bad[0])
        _fail(path, shots_lines(i), i + 1, "time",
              f"time {values[i]!r} is not a finite number of seconds")
    return t


def _factorize(values: list) -> tuple[np.ndarray, list]:
    """Group index per value, first-seen order; '' (no pair) becomes -1."""
    uniq = dict.fromkeys(values)
    uniq.pop("", None)
    names = [k for k in uniq if k.strip()]
    index = {k: i for i, k in enumerate(names)}
    codes = np.fromiter(map(index.get, values, itertools.repeat(-1)), dtype=np.int32,
                        count=len(values))
    return codes, names


def _build(path: Path, cols: dict, n: int, lines_of, first_line: int, line_numbers) -> Shots:
    if n == 0:
        raise UserError("no shots: the file has a header but no rows", file=str(path))
    time = _times(path, lines_of, cols["time"])
    rank = _codes(path, lines_of, "rank", cols["rank"], _RANK_T, " | ".join(RANKS))
    role = _codes(path, lines_of, "role", cols["role"], _ROLE_T, " | ".join(ROLES))
    target = _codes(path, lines_of, "target", cols["target"], _TARGET_T,
                    " | ".join(TARGETS) + " or empty for a miss")
    result = _codes(path, lines_of, "result", cols["result"], _RESULT_T, " | ".join(RESULTS))
    if "round" in cols:
        rnd = _codes(path, lines_of, "round", cols["round"], _ROUND_T, "1 | 2 | 3 (empty = 3)") + 1
    else:
        rnd = np.full(n, 3, dtype=np.int8)
    # A miss has no 侯; any other result names the 侯 it touched.
    incoherent = np.flatnonzero((result == MISS) != (target < 0))
    if incoherent.size:
        i = int(incoherent[0])
        if result[i] == MISS:
            msg = f"result 不中 (a miss) but target {cols['target'][i]!r}: leave target empty"
        else:
            msg = f"result {RESULTS[result[i]]} needs the 侯 it touched (大侯 | 参 | 干)"
        _fail(path, lines_of(i), i + 1, "target", msg)
    archers = cols["archer"]
    if any(not a.strip() for a in set(archers)):
        i = next(i for i, a in enumerate(archers) if not a.strip())
        _fail(path, lines_of(i), i + 1, "archer", "archer is empty")
    if "pair" in cols:
        pair, pair_names = _factorize(cols["pair"])
    else:
        pair, pair_names = np.full(n, -1, dtype=np.int32), []
    return Shots(str(path), time, archers, rank, role, target, result, pair, pair_names, rnd,
                 "pair" in cols, "round" in cols, first_line, line_numbers)


def _read_csv(path: Path, text: str) -> Shots:
    header, columns, line_numbers = _csv_columns(path, text)
    index = _header_index(path, header)
    cols = {name: columns[k] for name, k in index.items()}
    n = len(cols["time"])
    if line_numbers is None:
        def lines_of(i):
            return 2 + i
    else:
        def lines_of(i):
            return int(line_numbers[i])
    return _build(path, cols, n, lines_of, 2, line_numbers)


# -- JSON lines -------------------------------------------------------------------------------

def _json_value(path, line, row, name, v):
    if name == "time":
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            _fail(path, line, row, "time", f"time {v!r} is not a number of seconds")
        return str(v) if not isinstance(v, str) else v
    if v is None:
        return ""
    if name == "round" and isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if not isinstance(v, str):
        _fail(path, line, row, name, f"{name} {v!r} must be a string")
    return v


def _read_jsonl(path: Path, text: str) -> Shots:
    cols: dict = {}
    lines = []
    seen_round = seen_pair = False
    rows = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            _fail(path, lineno, len(rows) + 1, None, f"not valid JSON ({exc.msg} at column "
                  f"{exc.colno}); expected one object a line")
        if not isinstance(obj, dict):
            _fail(path, lineno, len(rows) + 1, None, "expected a JSON object a line")
        rows.append(obj)
        lines.append(lineno)
        seen_round = seen_round or "round" in obj
        seen_pair = seen_pair or "pair" in obj
    names = list(REQUIRED) + (["pair"] if seen_pair else []) + (["round"] if seen_round else [])
    for name in names:
        cols[name] = []
    for r, (obj, lineno) in enumerate(zip(rows, lines), start=1):
        for name in names:
            if name not in obj:
                if name in OPTIONAL:
                    cols[name].append("")
                    continue
                _fail(path, lineno, r, name, f"missing field '{name}': each line needs "
                      f"{', '.join(REQUIRED)} (and optionally pair, round)")
            cols[name].append(_json_value(path, lineno, r, name, obj[name]))
    line_numbers = np.array(lines, dtype=np.int64)
    return _build(path, cols, len(rows), lambda i: int(line_numbers[i]), lines[0] if lines else 1,
                  line_numbers)


def read_shots(path: str | Path) -> Shots:
    """Read and validate a shot log (UTF-8 CSV with a header row, or JSON lines)."""
    path = Path(path)
    text = _read_text(path)
    if _sniff_jsonl(path, text):
        return _read_jsonl(path, text)
    return _read_csv(path, text)


def shot_records(shots: Shots) -> list[dict]:
    """The input fields of each row as plain values (for JSON and CSV output)."""
    out = []
    pn = shots.pair_names
    targets = TARGETS
    for i in range(len(shots)):
        rec = {"time": float(shots.time[i]), "archer": shots.archer[i],
               "rank": RANKS[shots.rank[i]], "role": ROLES[shots.role[i]],
               "target": targets[shots.target[i]] if shots.target[i] >= 0 else None,
               "result": RESULTS[shots.result[i]],
               "pair": pn[shots.pair[i]] if shots.pair[i] >= 0 else None,
               "round": int(shots.round[i])}
        out.append(rec)
    return out


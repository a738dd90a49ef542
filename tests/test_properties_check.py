"""Property tests for ``yuexuan check``: any cue sheet and any shot log either succeed with a
complete, parseable verdict, or fail with exit status 2 and one line naming the file — never a
traceback, a hang, or a partial or temporary file beside ``-o``.

Commands run in :class:`cli_support.CliWorker`, a long-lived child process that runs ``cli.main`` once per
request (imports paid once, not per example); every request has a timeout, after which the
child is killed and the example fails as a hang. ``YX_EXAMPLES`` raises the example counts for a
deep local run (e.g. ``YX_EXAMPLES=400``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from property_support import (
    CUES,
    PREVIOUS,
    ROOT,
    assert_clean_failure,
    examples,
    mutated_sheet,
    mutated_timeline,
    small_timeline,
    worker,
)


def leftovers(folder: Path) -> list:
    """Temporary files (atomic writes use hidden names) left in ``folder``."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# -- shot logs ---------------------------------------------------------------------------------

RANKS = ("公", "宾", "卿", "大夫", "士")
ROLES = ("上射", "下射")
TARGETS = ("大侯", "参", "干")
RESULTS = ("贯", "离维纲", "扬触", "梱复", "不中")
FIELDS = ("time", "archer", "rank", "role", "target", "result", "pair", "round")
NAME = "上下耦射公宾卿大夫士甲乙丙 abcxyz0123456789-·"

plain_name = st.text(alphabet=NAME, min_size=1, max_size=8).filter(lambda s: s.strip())


@st.composite
def valid_row(draw) -> dict:
    result = draw(st.sampled_from(RESULTS))
    return {
        "time": draw(st.one_of(st.floats(0, 5000, allow_nan=False).map(lambda x: repr(round(x, 3))),
                               st.integers(0, 5000).map(str),
                               st.sampled_from(["1081.5", "1e3", "+12.25", ".5", "7.", " 1083.5 "]))),
        "archer": draw(plain_name),
        "rank": draw(st.sampled_from(RANKS)),
        "role": draw(st.sampled_from(ROLES)),
        "target": "" if result == "不中" else draw(st.sampled_from(TARGETS)),
        "result": result,
        "pair": draw(st.one_of(st.just(""), plain_name)),
        "round": draw(st.sampled_from(["1", "2", "3", ""])),
    }


bad_time = st.one_of(st.text(alphabet="0123456789.eE+-_ infatyINF１２٣,\u00a0", max_size=8), st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e999", "1e308",
                            "-1e308", "1_000", "0x10", "１２", "١", "", " ", "1e", "--1", "1,5",
                            "5 s", "∞", "1.0.0", "0" * 300, "9" * 400, "1e-400"]))
bad_text = st.one_of(
    st.text(max_size=12),                                   # anything, commas, quotes, newlines
    st.text(alphabet='",\r\n \t\ufeff\u00a0\u3000贯干王', max_size=6),
    st.sampled_from(["王", "左射", "鹄", "中", "4", "0", "-1", "3.0", " 士 ", "公 ", "大 侯", "x" * 300,
                     "不中 ", "贯\n", "\"", "''"]),
)
json_junk = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                      st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=2),
                      st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), bad_text)


@st.composite
def shot_log(draw):
    """``(bytes, suffix, rows, known_valid)``: a shot log as a file, the rows it was made from,
    and whether every row and the layout are valid by the rules in docs/check.md."""
    rows = draw(st.lists(valid_row(), min_size=0, max_size=12))
    columns = list(FIELDS)
    known_valid = bool(rows)
    # damage: garbage in any column, a dropped or extra column, a ragged row
    for _ in range(draw(st.integers(0, 2))):
        if not rows:
            break
        op = draw(st.sampled_from(["cell", "cell", "time", "digits", "drop column", "extra column",
                                   "ragged"]))
        i = draw(st.integers(0, len(rows) - 1))
        if op == "cell":
            col = draw(st.sampled_from(columns))
            rows[i][col] = draw(bad_text if col != "time" else bad_time)
            known_valid = None
        elif op == "time":
            rows[i]["time"] = draw(bad_time)
            known_valid = None
        elif op == "digits":           # numbers in other scripts' digits (１２, ١٢, ๑๒ …)
            digits = st.characters(categories=["Nd"])
            rows[i]["time"] = draw(st.text(alphabet=digits, min_size=1, max_size=4)) + \
                draw(st.sampled_from(["", ".5", "e1"]))
            known_valid = None
        elif op == "drop column":
            col = draw(st.sampled_from(columns))
            columns.remove(col)
            if col in FIELDS[:6]:                  # a required column (not pair, round, note)
                known_valid = False
        elif op == "extra column":
            columns.insert(draw(st.integers(0, len(columns))), "note")
            for r in rows:
                r["note"] = draw(st.text(alphabet=NAME, max_size=4))
        else:
            rows[i]["__ragged__"] = True
            known_valid = None
    layout = draw(st.sampled_from(["plain", "quoted", "jsonl"]))
    if layout == "plain" and any(any(c in str(r.get(k, "")) for c in ',"\n\r') for r in rows
                                 for k in columns):
        layout = "quoted"
    if layout == "jsonl" and draw(st.booleans()) and rows:
        # JSON lines: any field may also be a number, null, a list …
        r = draw(st.sampled_from(rows))
        r[draw(st.sampled_from(columns))] = draw(json_junk)
        known_valid = None
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    header = [draw(st.sampled_from([c, c.upper(), f" {c} "])) for c in columns]
    if layout == "jsonl":
        lines = []
        for r in rows:
            obj = {c: r.get(c, "") for c in columns if not (r.get("__ragged__") and c == columns[-1])}
            if isinstance(obj.get("time"), str) and draw(st.booleans()):
                try:
                    obj["time"] = float(obj["time"])           # times as JSON numbers too
                except ValueError:
                    pass
            if obj.get("round") in ("1", "2", "3") and draw(st.booleans()):
                obj["round"] = int(obj["round"])
            lines.append(json.dumps(obj, ensure_ascii=draw(st.booleans())))
        text = eol.join(lines) + (eol if draw(st.booleans()) else "")
        suffix = draw(st.sampled_from([".jsonl", ".ndjson", ""]))
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator=eol,
                       quoting=csv.QUOTE_ALL if layout == "quoted" else csv.QUOTE_MINIMAL)
        w.writerow(header)
        for r in rows:
            cells = [str(r.get(c, "")) for c in columns]
            w.writerow(cells[:-1] if r.get("__ragged__") else cells)
        text = buf.getvalue() + draw(st.sampled_from(["", eol, eol * 2]))
        suffix = draw(st.sampled_from([".csv", ".txt", ""]))
    data = text.encode("utf-8")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data                            # a BOM
    whole = draw(st.sampled_from(["as is"] * 6 + ["empty", "blank", "binary", "truncated", "gb18030"]))
    if whole == "empty":
        data, known_valid = b"", False
    elif whole == "blank":
        data, known_valid = b" \r\n\n\t", False
    elif whole == "binary":
        data, known_valid = draw(st.binary(min_size=1, max_size=64)), None
    elif whole == "truncated" and data:
        data, known_valid = data[:draw(st.integers(0, len(data) - 1))], None
    elif whole == "gb18030":
        data, known_valid = "time,archer,rank,role,target,result\n1,甲,士,上射,干,贯\n".encode("gb18030"), False
    return data, suffix, rows, known_valid


def _expected_time(r: dict) -> float:
    v = r["time"]
    return float(v.strip()) if isinstance(v, str) else float(v)


def check_output(fmt: str, text: str, rows: list, known: bool) -> None:
    """A successful check's output, parsed back: one verdict per input row, in order."""
    if fmt == "json":
        got = json.loads(text)
        shots = got["shots"]
        assert isinstance(got["tallies"], list) and "settings" in got
        assert all(s["released"] in (True, False) for s in shots)
        times = [s["time"] for s in shots]
    elif fmt == "csv":
        table = list(csv.reader(io.StringIO(text, newline="")))
        assert table[0] == ["time", "archer", "rank", "role", "target", "result", "pair", "round",
                            "nearest_beat", "offset", "on_beat", "released", "reason"]
        shots = table[1:]
        assert all(len(r) == 13 and r[11] in ("true", "false") for r in shots), shots
        times = [float(r[0]) for r in shots]
    else:
        lines = text.splitlines()
        assert lines[0].split()[:3] == ["row", "time", "s"]
        assert any(ln.startswith(("round ", "no scored round")) for ln in lines)
        if not known:                 # a name with a line break in it may split a row
            return
        shots = lines[1:1 + len(rows)]
        assert [int(ln.split()[0]) for ln in shots] == list(range(1, len(rows) + 1)), lines
        assert lines[1 + len(rows)] == ""
        times = [float(ln.split()[1]) for ln in shots]
    if known:
        assert len(shots) == len(rows)
        digits = 3 if fmt == "table" else 6
        want = [round(_expected_time(r), digits) for r in rows]
        assert all(math.isclose(a, b, rel_tol=1e-12, abs_tol=10 ** -digits) for a, b in zip(times, want)), \
            (times, want)


seconds_option = st.one_of(st.none(), st.floats(-1.0, 1.0), st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=examples(100), deadline=None, suppress_health_check=list(HealthCheck))
@given(log=shot_log(), cues=st.sampled_from(["toml", "toml", "json"]),
       fmt=st.sampled_from(["table", "json", "csv"]), to_file=st.booleans(),
       tolerance=seconds_option, offset=seconds_option)
def test_check_any_shot_log(tmp_path_factory, saved_timeline, log, cues, fmt, to_file, tolerance,
                            offset):
    """A generated shot log against the default ceremony (cue sheet or saved timeline)."""
    data, suffix, rows, known_valid = log
    d = tmp_path_factory.mktemp("shots")
    shots = d / f"shots{suffix}"
    shots.write_bytes(data)
    out = d / "out" / f"verdict.{fmt}"
    out.parent.mkdir()
    out.write_bytes(PREVIOUS)
    cue_path = CUES if cues == "toml" else saved_timeline
    argv = ["check", cue_path, shots, "--format", fmt] + (["-o", out] if to_file else [])
    named = [shots]
    for option, value in (("--tolerance", tolerance), ("--offset", offset)):
        if value is not None:
            argv.append(f"{option}={value!r}")
            if not math.isfinite(value) or (option == "--tolerance" and value < 0):
                named.append(option)                  # the option may be the fault named
                known_valid = known_valid and None
    code, stdout, err = worker().run(argv, timeout=60)
    assert_clean_failure("check", code, err, named)
    event(f"exit {code}")
    if known_valid:
        assert code == 0, err
    if known_valid is False:
        assert code == 2
    if code == 0:
        text = out.read_text(encoding="utf-8") if to_file else stdout
        if to_file:
            assert stdout == ""
        check_output(fmt, text, rows, bool(known_valid))
    else:
        assert stdout == ""
        assert out.read_bytes() == PREVIOUS
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(valid_row(), min_size=1, max_size=10), eol=st.sampled_from(["\n", "\r\n"]))
def test_plain_quoted_and_json_lines_give_one_verdict(tmp_path_factory, rows, eol):
    """Plain CSV, quoted CSV and JSON lines of the same rows give the same verdict."""
    d = tmp_path_factory.mktemp("same")
    texts = {}
    for name, quoting in (("plain.csv", csv.QUOTE_MINIMAL), ("quoted.csv", csv.QUOTE_ALL)):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator=eol, quoting=quoting)
        w.writerow(FIELDS)
        w.writerows([r[c] for c in FIELDS] for r in rows)
        texts[name] = buf.getvalue()
    texts["lines.jsonl"] = "".join(json.dumps(r, ensure_ascii=False) + eol for r in rows)
    verdicts = []
    for name, text in texts.items():
        (d / name).write_text(text, encoding="utf-8", newline="")
        code, stdout, err = worker().run(["check", CUES, d / name, "--format", "json"], timeout=60)
        assert code == 0, err
        got = json.loads(stdout)
        del got["settings"]["shots"]
        got["warnings"] = [re.sub(r"^.*?:\d+: |, line \d+", "", w) for w in got["warnings"]]
        verdicts.append(got)
    assert verdicts[0] == verdicts[1] == verdicts[2]
    assert len(verdicts[0]["shots"]) == len(rows)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(sheet=mutated_sheet(), fmt=st.sampled_from(["json", "csv"]))
def test_check_any_cue_sheet(tmp_path_factory, sheet, fmt):
    """A mutated cue sheet with a good shot log: the verdict, or one line naming the sheet."""
    d = tmp_path_factory.mktemp("sheet")
    src = d / "s.toml"
    src.write_text(sheet, encoding="utf-8")
    out = d / "out" / f"verdict.{fmt}"
    out.parent.mkdir()
    out.write_bytes(PREVIOUS)
    shots = ROOT / "tests" / "data" / "shots_example.csv"
    code, stdout, err = worker().run(["check", src, shots, "--format", fmt, "-o", out], timeout=60)
    assert_clean_failure("check", code, err, [src])
    event(f"exit {code}")
    if code == 0:
        rows = list(csv.DictReader(io.StringIO(shots.read_text(encoding="utf-8"))))
        check_output(fmt, out.read_text(encoding="utf-8"), rows, True)
    else:
        assert out.read_bytes() == PREVIOUS
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_check_any_saved_timeline(tmp_path_factory, data):
    text = data.draw(mutated_timeline(small_timeline()))
    d = tmp_path_factory.mktemp("tl")
    src = d / "t.json"
    src.write_text(text, encoding="utf-8")
    out = d / "out" / "verdict.json"
    out.parent.mkdir()
    shots = ROOT / "tests" / "data" / "shots_example.jsonl"
    code, stdout, err = worker().run(["check", src, shots, "--format", "json", "-o", out], timeout=60)
    assert_clean_failure("check", code, err, [src])
    event(f"exit {code}")
    if code == 0:
        json.loads(out.read_text(encoding="utf-8"))
    assert [p.name for p in out.parent.iterdir()] == ([out.name] if code == 0 else [])


# -- fixtures ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def saved_timeline(tmp_path_factory):
    from yuexuan.compiler import compile_file
    from yuexuan.timeline import save_json
    p = tmp_path_factory.mktemp("saved") / "dashe.json"
    save_json(compile_file(CUES), p)
    return p


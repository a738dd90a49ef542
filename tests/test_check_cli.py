"""``yuexuan check`` end to end on the default ceremony, and every bad-input case.

The outputs are read back with the json and csv modules; the beats are checked against the
compiled timeline's own 射节 beats.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from yuexuan.cli import main
from yuexuan.compiler import compile_file
from yuexuan.scoring.shots import read_shots

import rite_support

ROOT = Path(__file__).resolve().parent.parent
CUES = str(ROOT / "cues" / "dashe.toml")
EXAMPLE = ROOT / "tests" / "data" / "shots_example.csv"
EXAMPLE_JSONL = ROOT / "tests" / "data" / "shots_example.jsonl"
HEADER = "time,archer,rank,role,target,result,pair,round\n"

EXPECTED_REASONS = ["释", "非其侯", "唯公所中", "不贯不释", "释", "释", "释", "不鼓不释", "不以乐志",
                    "释", "唯公所中", "不贯不释", "非其侯", "释", "不中"]


@pytest.fixture(scope="module")
def lishou_beats():
    tl = compile_file(CUES)
    return np.array([b.time for b in tl.beats if b.cue == "lishou"])


def run_check(capsys, *args):
    code = main(["check", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_on_the_default_ceremony(capsys, lishou_beats):
    code, out, err = run_check(capsys, CUES, EXAMPLE, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    shots = doc["shots"]
    assert len(shots) == 15
    assert [s["reason"] for s in shots] == EXPECTED_REASONS
    assert [s["released"] for s in shots] == [r in ("释", "唯公所中", "不以乐志") for r in
                                              EXPECTED_REASONS]
    # input fields come back in input order
    with open(EXAMPLE, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for s, r in zip(shots, rows):
        assert s["time"] == float(r["time"]) and s["archer"] == r["archer"]
        assert s["rank"] == r["rank"] and s["role"] == r["role"] and s["pair"] == r["pair"]
        assert s["target"] == (r["target"] or None) and s["result"] == r["result"]
        assert s["round"] == int(r["round"])
    # round 3: the nearest beat is one of the compiled 射节 strokes, and offset = time − beat
    for s in shots:
        if s["round"] == 3:
            k = np.argmin(np.abs(lishou_beats - s["time"]))
            assert s["nearest_beat"] == pytest.approx(lishou_beats[k], abs=1e-6)
            assert s["offset"] == pytest.approx(s["time"] - lishou_beats[k], abs=1e-6)
            assert s["on_beat"] == (abs(s["offset"]) <= 0.070)
        else:
            assert s["nearest_beat"] is None and s["offset"] is None and s["on_beat"] is None
    assert doc["tallies"] == [
        {"round": 2, "右": 2, "左": 2, "winner": None, "chun": 0, "qi": 0, "announcement": "左右钧",
         "announcement_en": "a tie: left and right are even"},
        {"round": 3, "右": 3, "左": 2, "winner": "右", "chun": 0, "qi": 1,
         "announcement": "右贤于左一奇", "announcement_en": "right wins by one single arrow"}]
    assert doc["settings"]["beats"] == len(lishou_beats) and doc["settings"]["tolerance_s"] == 0.07


def test_jsonl_input_gives_the_same_verdicts(capsys):
    _, a, _ = run_check(capsys, CUES, EXAMPLE, "--format", "json")
    _, b, _ = run_check(capsys, CUES, EXAMPLE_JSONL, "--format", "json")
    da, db = json.loads(a), json.loads(b)
    assert da["shots"] == db["shots"] and da["tallies"] == db["tallies"]


def test_csv_output_and_atomic_file(capsys, tmp_path):
    target = tmp_path / "out" / "verdicts.csv"
    code, out, err = run_check(capsys, CUES, EXAMPLE, "--format", "csv", "-o", target)
    assert code == 0 and out == ""
    assert "右贤于左一奇" in err and "左右钧" in err          # the announcements on stderr
    with open(target, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["reason"] for r in rows] == EXPECTED_REASONS
    assert rows[6]["on_beat"] == "true" and rows[7]["on_beat"] == "false"
    assert rows[0]["on_beat"] == "" and rows[0]["nearest_beat"] == ""
    assert float(rows[7]["offset"]) == pytest.approx(0.11)
    assert [p.name for p in target.parent.iterdir()] == ["verdicts.csv"]    # no temp left


def test_table_for_people(capsys):
    code, out, _ = run_check(capsys, CUES, EXAMPLE)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["row", "time", "s"]
    assert "不以乐志" in lines[9] and "+400" in lines[9]
    assert lines[-2] == "round 2: 右 2 算, 左 2 算 — 左右钧 (a tie: left and right are even)"
    assert lines[-1] == "round 3: 右 3 算, 左 2 算 — 右贤于左一奇 (right wins by one single arrow)"


def test_offset_and_tolerance_options(capsys, tmp_path, lishou_beats):
    # A stopwatch started 1.5 s before the first 射节 shooting stroke (上耦上射's first arrow; the
    # 下射's stroke follows 2 s later): 1.52 s on it is 20 ms after that stroke.
    first = next(b.time for b in compile_file(CUES).beats if b.archer == "上耦上射" and b.arrow == 1)
    start = f"{first - 1.5:.3f}"
    log = tmp_path / "watch.csv"
    log.write_text(HEADER + "1.52,上耦上射,士,上射,干,贯,上耦,3\n3.61,上耦下射,士,下射,干,贯,上耦,3\n",
                   encoding="utf-8")
    _, out, _ = run_check(capsys, CUES, log, "--format", "json", "--offset", start)
    doc = json.loads(out)
    assert [s["reason"] for s in doc["shots"]] == ["释", "不鼓不释"]
    assert doc["shots"][0]["nearest_beat"] == pytest.approx(first)
    _, out, _ = run_check(capsys, CUES, log, "--format", "json", "--offset", start,
                          "--tolerance", "0.11")
    assert [s["reason"] for s in json.loads(out)["shots"]] == ["释", "释"]
    _, out, _ = run_check(capsys, CUES, EXAMPLE, "--format", "json", "--strict-gong")
    assert json.loads(out)["shots"][8]["reason"] == "不鼓不释"


def test_a_saved_timeline_works_like_the_cue_sheet(capsys, tmp_path):
    saved = tmp_path / "timeline.json"
    from yuexuan.timeline import to_dict

    saved.write_text(json.dumps(to_dict(compile_file(CUES)), ensure_ascii=False), encoding="utf-8")
    _, a, _ = run_check(capsys, CUES, EXAMPLE, "--format", "json")
    _, b, _ = run_check(capsys, saved, EXAMPLE, "--format", "json")
    ja, jb = json.loads(a), json.loads(b)
    assert ja["shots"] == jb["shots"] and ja["tallies"] == jb["tallies"]


def test_quoted_csv_reads_like_plain_csv(tmp_path):
    # A plain CSV and the same log with every field quoted read the same, field for field.
    plain = EXAMPLE.read_text(encoding="utf-8")
    quoted = tmp_path / "quoted.csv"
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    for row in csv.reader(io.StringIO(plain)):
        w.writerow(row)
    quoted.write_text(buf.getvalue(), encoding="utf-8")
    a, b = read_shots(EXAMPLE), read_shots(quoted)
    for name in ("time", "rank", "role", "target", "result", "round", "lines"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    def per_row(s):       # names per row (the group numbering may differ)
        return s.archers, [s.pair_names[k] for k in s.pair]

    assert per_row(a) == per_row(b)


def test_blanks_crlf_and_bom_are_tolerated(tmp_path):
    p = tmp_path / "messy.csv"
    p.write_bytes("\ufeffTime , archer,rank,role,target,result\r\n 1081.5 , 甲 , 士 ,上射, 干 ,贯\r\n"
                  "1083.5,乙,士,下射,,不中\r\n\r\n".encode("utf-8"))
    s = rite_support.read(p)
    assert s.time.tolist() == [1081.5, 1083.5]
    assert s.archers == ["甲", "乙"]
    assert s.round.tolist() == [3, 3] and s.target.tolist() == [2, -1]


def test_line_breaks_in_names_survive_the_csv_output(capsys, tmp_path, lishou_beats):
    # Quoted input names holding CR, LF and quotes come back whole from the CSV output.
    p = tmp_path / "names.csv"
    names = ['甲\r乙', '丙\n丁', '戊 "己", 庚']
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(HEADER.strip().split(","))
    w.writerows([[f"{lishou_beats[2 * k]}", n, "士", "上射", "干", "贯", n, "3"] for k, n in enumerate(names)])
    p.write_text(buf.getvalue(), encoding="utf-8", newline="")
    code, out, err = run_check(capsys, CUES, p, "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    assert [r["archer"] for r in rows] == names and [r["pair"] for r in rows] == names
    assert [r["reason"] for r in rows] == ["释"] * 3


# -- bad input: one line naming the row and the column, exit 2, no traceback -------------------

BAD_CSV = [
    ("missing column", "time,archer,rank,role,target\n1,甲,士,上射,干\n", ":1: result: ", "missing column result"),
    ("unknown rank", HEADER + "1,甲,士,上射,干,贯,,2\n2,乙,王,下射,干,贯,,2\n", ":3: rank: row 2: ", "'王'"),
    ("unknown role", HEADER + "1,甲,士,左射,干,贯,,2\n", ":2: role: row 1: ", "'左射'"),
    ("unknown target", HEADER + "1,甲,士,上射,鹄,贯,,2\n", ":2: target: row 1: ", "'鹄'"),
    ("unknown result", HEADER + "1,甲,士,上射,干,中,,2\n", ":2: result: row 1: ", "'中'"),
    ("unknown round", HEADER + "1,甲,士,上射,干,贯,,4\n", ":2: round: row 1: ", "'4'"),
    ("non-numeric time", HEADER + "1,甲,士,上射,干,贯,,2\nabc,乙,士,下射,干,贯,,2\n",
     ":3: time: row 2: ", "'abc'"),
    ("NaN time", HEADER + "nan,甲,士,上射,干,贯,,2\n", ":2: time: row 1: ", "not a finite number"),
    ("infinite time", HEADER + "1,甲,士,上射,干,贯,,2\n-inf,甲,士,上射,干,贯,,2\n", ":3: time: row 2: ",
     "not a finite number"),
    ("empty time", HEADER + ",甲,士,上射,干,贯,,2\n", ":2: time: row 1: ", "not a number"),
    ("miss with a target", HEADER + "1,甲,士,上射,干,不中,,2\n", ":2: target: row 1: ", "不中"),
    ("hit without a target", HEADER + "1,甲,士,上射,,贯,,2\n", ":2: target: row 1: ", "needs the 侯"),
    ("empty archer", HEADER + "1,,士,上射,干,贯,,2\n", ":2: archer: row 1: ", "archer is empty"),
    ("ragged row", HEADER + "1,甲,士,上射,干,贯,,2\n2,乙,士,下射,干\n", ":3: row 2: ", "has 5 fields"),
    ("ragged row after blank lines", HEADER + "\n1,甲,士,上射,干,贯,,2\n \n2,乙,士,下射,干\n",
     ":5: row 2: ", "has 5 fields"),
    ("quoted, bad rank after a multi-line field",
     HEADER + '1,"甲\n(the elder)",士,上射,干,贯,,2\n2,乙,侯,下射,干,贯,,2\n', ":4: rank: row 2: ", "'侯'"),
    ("header only", HEADER, "", "no shots"),
]


@pytest.mark.parametrize("case,text,where,what", BAD_CSV, ids=[c[0] for c in BAD_CSV])
def test_bad_csv(capsys, tmp_path, case, text, where, what):
    p = tmp_path / "shots.csv"
    p.write_text(text, encoding="utf-8")
    code, out, err = run_check(capsys, CUES, p)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"yuexuan check: {p}")
    assert where in err and what in err, err


BAD_JSONL = [
    ("invalid JSON", '{"time": 1, "archer": "甲"\n', ":1: row 1: ", "not valid JSON"),
    ("not an object", "[1, 2]\n", ":1: row 1: ", "JSON object"),
    ("missing field", '{"time": 1, "archer": "甲", "rank": "士", "role": "上射", "target": "干"}\n',
     ":1: result: row 1: ", "missing field 'result'"),
    ("NaN time", '{"time": NaN, "archer": "甲", "rank": "士", "role": "上射", "target": "干", '
     '"result": "贯"}\n', ":1: time: row 1: ", "finite"),
    ("boolean time", '{"time": true, "archer": "甲", "rank": "士", "role": "上射", "target": "干", '
     '"result": "贯"}\n', ":1: time: row 1: ", "not a number"),
    ("numeric rank", '{"time": 1, "archer": "甲", "rank": 3, "role": "上射", "target": "干", '
     '"result": "贯"}\n', ":1: rank: row 1: ", "must be a string"),
    ("integer time beyond any float", '{"time": 1' + "0" * 400 + ', "archer": "甲", "rank": "士", '
     '"role": "上射", "target": "干", "result": "贯"}\n', ":1: time: row 1: ", "finite"),
    ("integer of too many digits", '{"time": ' + "9" * 5000 + ', "archer": "甲"}\n', ":1: row 1: ",
     "not valid JSON"),
    ("unknown result, line 3", '{"time": 1, "archer": "甲", "rank": "士", "role": "上射", "target": '
     '"干", "result": "贯"}\n\n{"time": 2, "archer": "乙", "rank": "士", "role": "下射", "target": '
     '"干", "result": "穿"}\n', ":3: result: row 2: ", "'穿'"),
]


@pytest.mark.parametrize("case,text,where,what", BAD_JSONL, ids=[c[0] for c in BAD_JSONL])
def test_bad_jsonl(capsys, tmp_path, case, text, where, what):
    p = tmp_path / "shots.jsonl"
    p.write_text(text, encoding="utf-8")
    code, out, err = run_check(capsys, CUES, p)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert where in err and what in err, err


@pytest.mark.parametrize("case,data,what", [
    ("empty", b"", "empty file"),
    ("blank", b" \n\n", "empty file"),
    ("binary", bytes(range(256)) * 4, "binary file"),
    ("GB18030", HEADER.encode() + "1,甲,士,上射,干,贯,,2\n".encode("gb18030"),
     "looks like GBK/GB18030 text: save it as UTF-8 (or pass --encoding gb18030)"),
    ("not UTF-8", HEADER.encode() + b"1,\xff\xfe\xfa,x,y,z,,,2\n", "not UTF-8"),
])
def test_bad_files(capsys, tmp_path, case, data, what):
    p = tmp_path / "shots.csv"
    p.write_bytes(data)
    code, out, err = run_check(capsys, CUES, p)
    assert code == 2 and out == "" and err.count("\n") == 1 and what in err, err


def test_bad_paths_and_options(capsys, tmp_path):
    assert run_check(capsys, CUES, tmp_path / "none.csv")[2].strip().endswith("no such file")
    assert "is a directory" in run_check(capsys, CUES, tmp_path)[2]
    for opt, val in (("--tolerance", "-0.01"), ("--tolerance", "nan"), ("--offset", "inf")):
        code, _, err = run_check(capsys, CUES, EXAMPLE, opt, val)
        assert code == 2 and opt in err, err
    code, _, err = run_check(capsys, CUES, EXAMPLE, "--cue", "nosuch")
    assert code == 2 and err.count("\n") == 1 and "--cue: unknown cue 'nosuch'" in err
    assert "lishou" in err                                            # the cues it has
    code, _, err = run_check(capsys, CUES, EXAMPLE, "--cue", "gai")    # a cue without beats
    assert code == 2 and "need 射节 beats" in err
    junk = tmp_path / "drum.wav"
    junk.write_bytes(b"RIFF not really a wave file")
    code, _, err = run_check(capsys, CUES, EXAMPLE, "--beats-from", junk)
    assert code == 2 and "cannot read audio" in err and err.count("\n") == 1


def test_no_traceback_from_the_real_command(tmp_path):
    p = tmp_path / "shots.csv"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    r = subprocess.run([sys.executable, "-m", "yuexuan", "check", CUES, str(p)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    assert "binary file" in r.stderr


def test_gong_exempt_variant_from_the_cue_sheet(tmp_path):
    """The cue sheet's [variants] gong_exempt = "strict" holds the 公 to the drum (O20)."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    text = (root / "cues" / "dashe.toml").read_text(encoding="utf-8")
    strict = tmp_path / "strict.toml"
    strict.write_text(text.replace('gong_exempt = "郑玄"', 'gong_exempt = "strict"'), encoding="utf-8")
    shots = root / "tests" / "data" / "shots_example.csv"
    out = {}
    for name, sheet in (("default", root / "cues" / "dashe.toml"), ("strict", strict)):
        r = subprocess.run([sys.executable, "-m", "yuexuan", "check", str(sheet), str(shots), "--format", "json"],
                           capture_output=True, text=True, cwd=root, timeout=120)
        assert r.returncode == 0, r.stderr
        out[name] = json.loads(r.stdout)
    gong_off = [s for s in out["default"]["shots"] if s["archer"] == "公" and s["round"] == 3 and not s["on_beat"]]
    assert gong_off and all(s["released"] for s in gong_off)
    strict_off = [s for s in out["strict"]["shots"] if s["archer"] == "公" and s["round"] == 3 and not s["on_beat"]]
    assert strict_off and not any(s["released"] for s in strict_off)

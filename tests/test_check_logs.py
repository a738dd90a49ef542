"""Logs as judges write them (issue 31 item 3): what spreadsheet programs save, read as such; each
common mistake answered with one line saying what the file looks like and what to do; the roster's
and duplicates' warnings counted, and errors under ``--strict``.

Each file is written here with Python's codecs as the program would save it (Excel's "CSV UTF-8"
with a BOM and CRLF, "Unicode text" = UTF-16 LE with a BOM and tabs, a semicolon CSV with decimal
commas as in locales that write 1144,32), and judged through the command a judge runs.
"""

from __future__ import annotations

import json

import pytest
from cli_support import DEFAULT_CUES

from yuexuan.cli import main

HEADER = ["time", "archer", "rank", "role", "target", "result", "pair", "round"]
ROWS = [["1215.32", "上耦上射", "士", "上射", "干", "贯", "上耦", "3"],       # on the drum
        ["1217.41", "上耦下射", "士", "下射", "干", "贯", "上耦", "3"],       # 110 ms off it
        ["983.6", "上耦上射", "士", "上射", "干", "贯", "上耦", "2"]]
REASONS = ["释", "不鼓不释", "释"]


def run(capsys, path, *opts):
    code = main(["check", str(DEFAULT_CUES), str(path), "--format", "json", *opts])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def text(sep: str, eol: str, decimal: str = ".", rows=ROWS) -> str:
    return eol.join(sep.join(c.replace(".", decimal) if k == 0 else c for k, c in enumerate(r))
                    for r in [HEADER, *rows]) + eol


@pytest.mark.parametrize("name,content,encoding", [
    ("excel-utf8.csv", text(",", "\r\n"), "utf-8-sig"),                 # "CSV UTF-8"
    ("unicode-text.txt", text("\t", "\r\n"), "utf-16"),                  # "Unicode text": BOM, tabs
    ("utf16-no-bom.csv", text(",", "\n"), "utf-16-le"),
    ("utf16-be.csv", text(";", "\r\n", ","), "utf-16-be"),
    ("semicolon.csv", text(";", "\r\n", ","), "utf-8"),                  # Excel where 1144,32
    ("semicolon-points.csv", text(";", "\n"), "utf-8"),
    ("tabs.tsv", text("\t", "\n", ","), "utf-8-sig"),
])
def test_what_spreadsheets_write_is_read(capsys, tmp_path, name, content, encoding):
    p = tmp_path / name
    p.write_bytes(content.encode(encoding))
    code, doc, err = run(capsys, p)
    assert code == 0, err
    assert [s["reason"] for s in doc["shots"]] == REASONS
    assert [s["time"] for s in doc["shots"]] == [1215.32, 1217.41, 983.6]
    assert doc["warnings"] == [] and err == ""


def test_delimiter_can_be_forced(capsys, tmp_path):
    p = tmp_path / "pipes.csv"
    p.write_text(text("|", "\n"), encoding="utf-8")
    code, doc, err = run(capsys, p, "--delimiter", "|")
    assert code == 0 and [s["reason"] for s in doc["shots"]] == REASONS, err
    code, _, err = run(capsys, tmp_path / "pipes.csv", "--delimiter", ":")
    assert code == 2 and err == "yuexuan check: --delimiter ':': expected one of , ; tab |\n"


@pytest.mark.parametrize("name,write,line", [
    ("gbk.csv", lambda p: p.write_text(text(",", "\n"), encoding="gbk"),
     "{p}: looks like GBK/GB18030 text: save it as UTF-8 (or pass --encoding gb18030)"),
    ("gb18030.csv", lambda p: p.write_text(text(",", "\r\n"), encoding="gb18030"),
     "{p}: looks like GBK/GB18030 text: save it as UTF-8 (or pass --encoding gb18030)"),
    ("shots.json", lambda p: p.write_text(json.dumps([dict(zip(HEADER, r)) for r in ROWS],
                                                     ensure_ascii=False), encoding="utf-8"),
     "{p}:1: this is JSON, not CSV: a JSON array; write one JSON object a line (JSON lines) or a "
     "CSV with a header row"),
    ("comma.csv", lambda p: p.write_text(text(",", "\n", ","), encoding="utf-8"),
     '{p}:2: time: row 1: "1215,32" — a decimal comma? quote it or use a point'),
])
def test_each_mistake_has_its_line(capsys, tmp_path, name, write, line):
    p = tmp_path / name
    write(p)
    code, doc, err = run(capsys, p)
    assert code == 2 and doc is None
    assert err == f"yuexuan check: {line.format(p=p)}\n"


def test_gbk_is_read_when_said(capsys, tmp_path):
    p = tmp_path / "gbk.csv"
    p.write_text(text(",", "\r\n"), encoding="gb18030")
    code, doc, err = run(capsys, p, "--encoding", "gb18030")
    assert code == 0 and [s["reason"] for s in doc["shots"]] == REASONS, err


def test_roster_and_duplicates_warn_and_strict_refuses(capsys, tmp_path):
    rows = [*ROWS,
            ROWS[0],                                                   # line 5: row 1 again
            ["1219.30", "上耦上射", "大夫", "上射", "干", "贯", "上耦", "3"],   # rank against it
            ["1221.30", "上耦上射", "士", "下射", "干", "贯", "上耦", "3"],     # role against it
            ["1223.30", "上偶上射", "士", "上射", "干", "贯", "上耦", "3"],     # not in the roster
            ["1225.30", "士甲", "士", "下射", "干", "贯", "众耦一", "3"]]       # 侯 against it
    p = tmp_path / "shots.csv"
    p.write_text(text(",", "\n", rows=rows), encoding="utf-8")
    code, doc, err = run(capsys, p)
    expected = [f"{p}:5: row 4: the same shot as row 1, line 2 (a row given twice?)",
                f"{p}:6: row 5: 上耦上射 is logged as rank 大夫, the roster has 士",
                f"{p}:7: row 6: 上耦上射 is logged as role 下射, the roster has 上射",
                f"{p}:8: row 7: archer '上偶上射' is not in the timeline's roster",
                f"{p}:9: row 8: the log makes 士甲 shoot 干 (by its pair 众耦一), the roster 参 "
                f"(pair 大夫二耦)"]
    assert code == 0
    assert doc["warnings"] == expected
    assert err.splitlines() == [f"yuexuan check: warning: {w}" for w in expected]
    assert len(doc["shots"]) == 8                          # still judged, row by row
    # judged as written: the 大夫 of row 5 makes 上耦 shoot 参 (「卑者与尊者为耦，不异侯」)
    assert [s["reason"] for s in doc["shots"]][:3] == ["非其侯", "不鼓不释", "非其侯"]
    code, doc, err = run(capsys, p, "--strict")
    assert code == 2 and doc is None
    assert err == f"yuexuan check: {expected[0]} (--strict: 5 warnings are an error)\n"


def test_misspelt_name_with_own_jie_is_not_judged(capsys, tmp_path):
    """--own-jie binds each arrow to its archer's own stroke: a name the roster lacks has none, so
    the shot is left unjudged (exit 3), not refused as 不鼓不释 with an empty beat."""
    rows = [ROWS[0], ["1217.41", "上偶下射", "士", "下射", "干", "贯", "上耦", "3"]]
    p = tmp_path / "shots.csv"
    p.write_text(text(",", "\n", rows=rows), encoding="utf-8")
    code, doc, err = run(capsys, p, "--own-jie")
    assert code == 3, err
    assert [s["reason"] for s in doc["shots"]] == ["释", "not in the roster"]
    assert doc["shots"][1]["released"] is None
    assert doc["tallies"][0]["not_judged"] == 1 and doc["tallies"][0]["右"] == 1
    assert err.splitlines() == [f"yuexuan check: warning: {p}:3: row 2: archer '上偶下射' is not "
                                f"in the timeline's roster"]


def test_audio_start_outside_the_ceremony_is_its_own_line(capsys, tmp_path):
    p = tmp_path / "shots.csv"
    p.write_text(text(",", "\n"), encoding="utf-8")
    code = main(["check", str(DEFAULT_CUES), str(p), "--beats-from", str(tmp_path / "x.wav"),
                 "--audio-start", "99999"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err == (f"yuexuan check: --audio-start 99999 is outside the ceremony (0 to 1625.7 s of "
                   f"{DEFAULT_CUES}): give the ceremony time of the recording's first sample\n")

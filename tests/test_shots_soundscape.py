"""``--shots LOG``: the calls of a real shooting, read back from the timeline JSON.

The expected calls are derived here from the CSV rows by the rite's rules, written out below
independently of yuexuan.scoring.tally:

- the 获者 calls 获 (a 宫 note, then a 商 note 9/8 above it) after an arrow that touched a 侯 when
  the archer is the 公 (「唯公所中，中三侯皆获」; his 着侯 only under O21 优君, the default), or
  when the arrow pierced (贯) the 侯 of the pair's senior archer (公 and 宾 大侯, 卿 and 大夫 参,
  士 干: 「射者非其侯，中之不获」; 「卑者与尊者为耦，不异侯」);
- the 大射正 calls 留 / 扬 / 方 (spoken: no pitch) after a miss of the 公 marked so;
- a round the log has rows for makes no calls from the cue sheet's ``hits`` strings; other rounds
  keep them.
"""

from __future__ import annotations

import csv
import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from cli_support import run_cli

from yuexuan.cli import main

ROOT = Path(__file__).resolve().parent.parent
CUES = ROOT / "cues" / "dashe.toml"
EXAMPLE = ROOT / "tests" / "data" / "shots_example.csv"
HEADER = ["time", "archer", "rank", "role", "target", "result", "pair", "round"]
SENIORITY = ("公", "宾", "卿", "大夫", "士")
HOU = {"公": "大侯", "宾": "大侯", "卿": "参", "大夫": "参", "士": "干"}
HOU_NAMES = ("大侯", "参", "干")
MISSES = {"不中", "留", "扬", "方"}


def expected_huo(rows: list, outside_counted: bool = True) -> list:
    """The rows the 获者 calls, by the rules of the module docstring."""
    senior = {}
    for r in rows:
        if r["pair"]:
            best = senior.get(r["pair"], r["rank"])
            senior[r["pair"]] = min(best, r["rank"], key=SENIORITY.index)
    out = []
    for r in rows:
        if r["result"] in MISSES:
            continue
        if r["rank"] == "公":
            if r["result"] != "着侯" or outside_counted:
                out.append(r)
        elif r["result"] == "贯" and r["target"] == HOU[senior.get(r["pair"], r["rank"])]:
            out.append(r)
    return out


def shooting_rounds(sheet: Path) -> dict:
    """cue id → round, for the shooting cues of a cue sheet (shoot: 1, shejie: 3 unless given)."""
    data = tomllib.loads(sheet.read_text(encoding="utf-8"))
    return {c["id"]: c.get("round", 1 if c["kind"] == "shoot" else 3) for c in data["cue"]
            if c["kind"] in ("shoot", "shejie")}


def compiled(capsys, tmp_path, sheet: Path, *extra) -> tuple:
    out = tmp_path / f"t{len(list(tmp_path.iterdir()))}.json"
    code = main(["compile", str(sheet), "-o", str(out.with_suffix(".mid")), "--timeline", str(out),
                 *map(str, extra)])
    err = capsys.readouterr().err
    assert code == 0, err
    return json.loads(out.read_text(encoding="utf-8")), err


def read_rows(path: Path) -> list:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: list) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=HEADER)
        w.writeheader()
        w.writerows(rows)
    return path


def calls(doc: dict, who: str, cue_ids) -> list:
    """The notes of ``who`` in the cues ``cue_ids``, by time; "获者": those of the three 获者."""
    mine = (lambda name: name.startswith("获者·")) if who == "获者" else (lambda name: name == who)
    return sorted((n for n in doc["notes"] if mine(n["instrument"]) and n["cue"] in cue_ids),
                  key=lambda n: n["time"])


def huo_pairs(notes: list) -> list:
    """The 获者's notes as (宫, 商) calls, each 获者's own; each 宫 is followed by its 商, 9/8 above."""
    pairs = []
    for who in sorted({n["instrument"] for n in notes}):
        own = [n for n in notes if n["lyric"] == "获" and n["instrument"] == who]
        assert len(own) % 2 == 0
        pairs += zip(own[0::2], own[1::2])
    for gong, shang in pairs:
        assert gong["time"] < shang["time"]
        assert shang["hz"] / gong["hz"] == pytest.approx(9 / 8, rel=1e-9)
    return sorted(pairs, key=lambda p: p[0]["time"])


def assert_callers(doc: dict, cue_ids, rows: list):
    """Each row's call comes from the 获者 of the 侯 it hit (one 获者 at each 乏)."""
    for hou in HOU_NAMES:
        own = huo_pairs(calls(doc, f"获者·{hou}", cue_ids))
        assert_follow([g["time"] for g, _ in own], [float(r["time"]) for r in rows if r["target"] == hou])


def assert_follow(call_times: list, arrow_times: list):
    """One call after each arrow, each the same short time after its arrow."""
    assert len(call_times) == len(arrow_times)
    if arrow_times:
        lag = np.array(sorted(call_times)) - np.array(sorted(arrow_times))
        assert np.all(lag > 0) and np.all(lag < 4.0)
        assert np.ptp(lag) < 1e-6


def test_example_log_makes_one_huo_call_per_called_hit(capsys, tmp_path):
    rows = read_rows(EXAMPLE)
    rounds = shooting_rounds(CUES)
    plain, _ = compiled(capsys, tmp_path, CUES)
    doc, err = compiled(capsys, tmp_path, CUES, "--shots", EXAMPLE)
    assert "warning" not in err
    spans = {c["id"]: (c["start"], c["end"]) for c in doc["cues"]}
    covered = {int(r["round"]) for r in rows}
    # every row falls in a shooting cue of its round: the log is timed on this timeline
    for r in rows:
        t = float(r["time"])
        assert any(rounds[c] == int(r["round"]) and spans[c][0] <= t <= spans[c][1] for c in rounds), r
    logged_cues = {c for c in rounds if rounds[c] in covered}
    want = expected_huo(rows)
    assert 0 < len(want) < len([r for r in rows if r["result"] not in MISSES])   # some hits not called
    got = huo_pairs(calls(doc, "获者", logged_cues))
    assert_follow([g["time"] for g, _ in got], [float(r["time"]) for r in want])
    assert len({r["target"] for r in want}) == 3            # hits on all three 侯
    assert_callers(doc, logged_cues, want)
    # without the log those cues sound the hits strings: a different set of calls
    assert len(huo_pairs(calls(plain, "获者", logged_cues))) != len(got)
    # a round the log does not cover keeps its strings
    other = set(rounds) - logged_cues
    assert other and calls(doc, "获者", other) == calls(plain, "获者", other)
    assert calls(doc, "获者", other)


def directions_log(doc: dict, rounds: dict) -> list:
    """Shots of the 公 and the 宾 in round 2 (the 公耦's cue) and round 3 (at the 公's strokes)."""
    r2 = next(c for c in doc["cues"] if rounds.get(c["id"]) == 2 and c["id"] != "round2_sanou")
    t2 = r2["start"]
    gong_beats = sorted(b["time"] for b in doc["beats"] if b["archer"] == "公")
    row = dict(zip(HEADER, ["", "", "", "", "", "", "公耦", ""]))
    g = {**row, "archer": "公", "rank": "公", "role": "下射"}
    b = {**row, "archer": "宾", "rank": "宾", "role": "上射"}
    return [
        {**g, "time": t2 + 10, "result": "留", "round": "2"},
        {**b, "time": t2 + 12, "result": "贯", "target": "大侯", "round": "2"},
        {**g, "time": t2 + 14, "result": "扬", "round": "2"},
        {**b, "time": t2 + 16, "result": "方", "round": "2"},        # the 宾's: no call
        {**g, "time": t2 + 18, "result": "方", "round": "2"},
        {**g, "time": t2 + 22, "result": "着侯", "target": "大侯", "round": "2"},   # O21
        {**g, "time": gong_beats[0], "result": "留", "round": "3"},
        {**g, "time": gong_beats[1], "result": "贯", "target": "参", "round": "3"},
        {**g, "time": gong_beats[2], "result": "不中", "round": "3"},   # no direction: no call
    ]


def test_direction_marks_give_the_da_she_zheng_calls(capsys, tmp_path):
    rounds = shooting_rounds(CUES)
    plain, _ = compiled(capsys, tmp_path, CUES)
    rows = directions_log(plain, rounds)
    log = write_rows(tmp_path / "dirs.csv", rows)
    doc, err = compiled(capsys, tmp_path, CUES, "--shots", log)
    assert "warning" not in err
    covered = {c for c in rounds if rounds[c] in (2, 3)}
    zheng = [n for n in calls(doc, "大射正", covered)]
    want = [r for r in rows if r["rank"] == "公" and r["result"] in ("留", "扬", "方")]
    assert [n["lyric"] for n in zheng] == [r["result"] for r in want]
    assert all(n["hz"] is None for n in zheng)                       # spoken
    assert_follow([n["time"] for n in zheng], [r["time"] for r in want])
    # the cue sheet's own marks for the 公's misses are not sounded in those rounds
    from_strings = calls(plain, "大射正", covered)
    assert from_strings and not {n["time"] for n in from_strings} & {n["time"] for n in zheng}
    huo = huo_pairs(calls(doc, "获者", covered))
    assert_follow([g["time"] for g, _ in huo], [r["time"] for r in expected_huo(rows)])
    assert_callers(doc, covered, expected_huo(rows))       # the 公's 贯 on the 参: the 参's 获者


def with_variant(tmp_path, line: str) -> Path:
    text = CUES.read_text(encoding="utf-8")
    assert "[variants]\n" in text
    sheet = tmp_path / "dashe.toml"
    sheet.write_text(text.replace("[variants]\n", f"[variants]\n{line}\n", 1), encoding="utf-8")
    return sheet


def test_o21_changes_the_call_and_the_verdict(capsys, tmp_path):
    rounds = shooting_rounds(CUES)
    plain, _ = compiled(capsys, tmp_path, CUES)
    rows = directions_log(plain, rounds)
    log = write_rows(tmp_path / "dirs.csv", rows)
    strict = with_variant(tmp_path, 'gong_outside_hu = "不中鹄"')
    covered = {c for c in rounds if rounds[c] in (2, 3)}
    counts, verdicts = {}, {}
    for name, sheet, counted in (("优君", CUES, True), ("不中鹄", strict, False)):
        doc, _ = compiled(capsys, tmp_path, sheet, "--shots", log)
        huo = huo_pairs(calls(doc, "获者", covered))
        want = expected_huo(rows, outside_counted=counted)
        assert_follow([g["time"] for g, _ in huo], [r["time"] for r in want])
        counts[name] = len(huo)
        code = main(["check", str(sheet), str(log), "--format", "json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        verdicts[name] = json.loads(out)["shots"][5]                  # the 公's 着侯
    assert counts["优君"] == counts["不中鹄"] + 1
    assert verdicts["优君"]["result"] == "着侯" and verdicts["优君"]["released"] is True
    assert verdicts["不中鹄"]["released"] is False and verdicts["不中鹄"]["reason"] == "不贯不释"


def test_own_jie_option_binds_each_arrow_to_its_stroke(capsys, tmp_path):
    plain, _ = compiled(capsys, tmp_path, CUES)
    rows = read_rows(EXAMPLE)
    bound = {(b["archer"], b["arrow"]): b["time"] for b in plain["beats"] if b["shoot"]}
    results = {}
    for opts in ((), ("--own-jie",)):
        code = main(["check", str(CUES), str(EXAMPLE), "--format", "json", *opts])
        out, err = capsys.readouterr()
        assert code == 0, err
        results[opts] = json.loads(out)
    own = results[("--own-jie",)]
    assert own["settings"]["strokes"] == "own 节"
    seen = {}
    for r, s in zip(rows, own["shots"]):
        if r["round"] != "3":
            continue
        n = seen[r["archer"]] = seen.get(r["archer"], 0) + 1      # rows are in time order
        t = bound.get((r["archer"], n))
        assert s["nearest_beat"] == pytest.approx(t, abs=1e-6)
        assert s["on_beat"] == (abs(float(r["time"]) - t) <= 0.070)
    changed = [k for k, (a, b) in enumerate(zip(results[()]["shots"], own["shots"]))
               if a["released"] != b["released"]]
    assert changed                                                  # the reading decides a shot
    for k in changed:
        assert own["shots"][k]["reason"] == "不鼓不释" and results[()]["shots"][k]["reason"] == "释"


def test_more_than_four_arrows_warns(capsys, tmp_path):
    rows = [dict(zip(HEADER, [str(900 + 2 * k), "士乙", "士", "上射", "", "不中", "众耦一", "2"]))
            for k in range(5)]
    five = write_rows(tmp_path / "five.csv", rows)
    four = write_rows(tmp_path / "four.csv", rows[:4])
    code = main(["check", str(CUES), str(five), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0
    warned = [line for line in err.splitlines() if "warning" in line]
    assert len(warned) == 1 and "士乙" in warned[0] and "5" in warned[0] and "round 2" in warned[0]
    assert json.loads(out)["warnings"] == [warned[0].split("warning: ", 1)[1]]
    main(["check", str(CUES), str(five)])
    out, _ = capsys.readouterr()
    assert "warning: 士乙" in out
    main(["check", str(CUES), str(four), "--format", "json"])
    out, err = capsys.readouterr()
    assert "warning" not in err and json.loads(out)["warnings"] == []


def test_shots_option_on_every_command_and_its_mistakes(capsys, tmp_path):
    for command in ("compile", "render", "build", "guide"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--shots LOG" in capsys.readouterr().out
    saved = tmp_path / "t.json"
    compiled(capsys, tmp_path, CUES)
    saved = next(tmp_path.glob("*.json"))
    code = main(["compile", str(saved), "-o", str(tmp_path / "x.mid"), "--shots", str(EXAMPLE)])
    err = capsys.readouterr().err
    assert code == 2 and "--shots needs a cue sheet" in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("time,archer,rank,role,target,result\n1,a,王,上射,,不中\n", encoding="utf-8")
    code = main(["compile", str(CUES), "-o", str(tmp_path / "x.mid"), "--shots", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "unknown rank" in err and "bad.csv:2" in err


def test_render_follows_the_log(tmp_path):
    """render --shots: each hit is called by the 获者 of the 侯 it struck, from that 侯's 乏: in his
    stem the call starts exactly when the sound from his 乏 reaches the 宾's seat, the timeline's
    note time plus distance / 343 m/s (within 2 ms; measured with soundfile on the stems), and not
    before. The 公's 贯 on any 侯 is called (「唯公所中，中三侯皆获」). The log holds the whole
    ceremony's seconds (hits 10, 24 and 38 s into round2_rest); the stems, of ``--cues
    round2_rest``, the selection's (time 0 at the cue's start). The places are read from
    ceremony/courtyard.toml (the 乏, fa_m; the seat), the mouth's height from the instrument file."""
    import soundfile as sf

    from yuexuan.audio.voice import takes
    from yuexuan.compiler import compile_file, compile_path
    from yuexuan.scoring.shots import read_shots

    start_s = compile_file(CUES).cue("round2_rest").start
    hits = {"干": 10.0, "参": 24.0, "大侯": 38.0}
    log = write_rows(tmp_path / "three.csv", [
        dict(zip(HEADER, [f"{start_s + dt:.6f}", "公", "公", "下射", hou, "贯", "公耦", "2"]))
        for hou, dt in hits.items()])
    tl, _ = compile_path(CUES, ["round2_rest"], shots=read_shots(log))
    yard = tomllib.loads((ROOT / "ceremony" / "courtyard.toml").read_text(encoding="utf-8"))
    seat = next(s["position_m"] for s in yard["listener"] if s["name"] == "宾")     # render's default
    onsets = {}
    for name, extra in (("log", ("--shots", log)), ("strings", ())):
        stems = tmp_path / f"stems_{name}"
        # in a process of its own, as a user runs it
        r = run_cli("render", CUES, "--cues", "round2_rest", "-o", tmp_path / f"{name}.wav",
                    "--stems", stems, "--sample-rate", "8000", *extra)
        assert r.returncode == 0, r.stderr
        for hou in hits:
            audio, sr = sf.read(stems / f"获者·{hou}.wav")
            level = np.abs(audio).max(axis=1) if audio.ndim > 1 else np.abs(audio)
            loud = np.flatnonzero(level > 1e-3 * level.max())
            onsets[name, hou] = (loud[0] / sr, loud[-1] / sr)
    for hou, dt in hits.items():
        (gong, shang) = [n for n in tl.notes if n.instrument == f"获者·{hou}"]     # one call each
        assert gong.time == pytest.approx(dt + 1.5) and shang.time > gong.time
        fa = next(h.fa_m for h in tl.rite.hou if h.name == hou)             # the compiled 侯's 乏
        mouth_m = tomllib.loads((ROOT / "instruments" / "获者.toml").read_text(      # every 侯's 获者
            encoding="utf-8"))["position_m"][2]
        delay_s = math.dist(seat, (fa[0], fa[1], mouth_m)) / 343.0
        # the call's consonant (获: h) goes before the note's time, its vowel on it
        delay_s -= takes.lead_samples(takes.reading_of(gong.lyric), 8000) / 8000
        start, end = onsets["log", hou]
        print(f"获者·{hou}: onset {start:.4f} s, note {gong.time:.4f} s + {delay_s * 1e3:.1f} ms "
              f"from its 乏: error {(start - gong.time - delay_s) * 1e3:+.2f} ms")
        assert abs(start - (gong.time + delay_s)) < 0.002, (hou, start, gong.time, delay_s)
        assert end < dt + 12.0                       # the 宫, its 商 and their decay: one call
    assert onsets["strings", "干"] != onsets["log", "干"]


def test_a_hit_before_the_shejie_is_called(capsys, tmp_path):
    """A round-3 hit logged before the 射节 cue starts is called by the 获者 of its 侯 (he calls
    whatever the drum; the 释获者 holds back the 算, 不鼓不释): 3 s before it (the calls fall in the
    gap after the cue before it, round3_mingyue (the officers' orders), which then ends at the 商's onset) and 1 s before it (the calls fall
    inside the 射节 cue). No warning; the saved timeline loads back (its notes inside their cues)."""
    from yuexuan.timeline import from_dict

    plain, _ = compiled(capsys, tmp_path, CUES)
    start = next(c["start"] for c in plain["cues"] if c["id"] == "lishou")
    rows = [dict(zip(HEADER, [f"{start + dt:.6f}", "上耦上射", "士", "上射", "干", "贯", "上耦", "3"]))
            for dt in (-3.0, -1.0)]
    doc, err = compiled(capsys, tmp_path, CUES, "--shots", write_rows(tmp_path / "early.csv", rows))
    assert "warning" not in err, err
    from_dict(doc, "early.json")                 # the loader's cross-checks pass
    cues = {c["id"]: c for c in doc["cues"]}
    huo = huo_pairs(calls(doc, "获者·干", set(cues)))
    got = [(g["time"], g["cue"], s["cue"]) for g, s in huo if start - 3.0 < g["time"] < start + 3.0]
    assert [t for t, _, _ in got] == pytest.approx([start - 1.5, start + 0.5])
    assert [(a, b) for _, a, b in got] == [("round3_mingyue", "round3_mingyue"), ("lishou", "lishou")]
    assert cues["round3_mingyue"]["end"] == pytest.approx(start - 3.0 + 2.6)   # up to the 商's onset
    assert cues["lishou"]["start"] == start and "获者·干" in cues["round3_mingyue"]["instruments"]

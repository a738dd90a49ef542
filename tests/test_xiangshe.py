"""The 乡射礼 from the same engine (issue 33): cues/xiangshe.toml with its rite (ceremony/xiangshe.toml)
and its courtyard compiled, its 合乐 sung on the 诗谱's notes, its one 侯, its 驺虞 of five 节, a 乡射
log checked in its words, a short cue rendered, and its drawing.

The notes are judged against ../shared/scores.md parsed apart (tests/shipu_support.py, as
tests/test_shipu.py reads it), the ratios against scores.md's list; the rest from the timeline as
every output reads it.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from shipu_support import HELE, scores_text
from test_shipu import expected_xiong

from yuexuan.compiler import compile_path

ROOT = Path(__file__).resolve().parent.parent
SHEET = ROOT / "cues" / "xiangshe.toml"


@pytest.fixture(scope="module")
def xs(tmp_path_factory):
    return compile_path(SHEET)


def test_the_rite_is_the_xiangshe_s(xs):
    tl, warnings = xs
    assert not warnings, warnings
    rite = tl.rite
    assert (tl.ceremony.name, rite.name, rite.rank, rite.host.rank) == ("乡射礼", "乡射礼", "州长", "主人")
    # one 侯 at fifty 弓 (记 「侯道五十弓」), its 乏 a third of the 侯道 north and 5 步 west
    (hou,) = rite.hou
    assert hou.distance_bu == 50 and hou.distance_m == pytest.approx(69.3)
    assert hou.fa_m[0] == pytest.approx(-5 * 1.386, abs=1e-3)
    assert hou.position_m[1] + 50 / 3 * 1.386 == pytest.approx(hou.fa_m[1], abs=1e-2)
    assert set(hou.shot_by) == set(rite.ranks) and hou.huozhe in tl.instruments
    assert rite.courtyard == "xiangshe_courtyard.toml"
    # no bell, no 鼙: the 乡射's 县 is the 磬 alone (注 「此县谓磬也」), with its drum
    hung = {n for n, f in tl.instruments.items() if f["xian"] in ("东", "西", "北", "南")}
    assert hung == {"磬·乡射", "鼓·乡射"}
    # the three rounds; the third to 驺虞, five 节 a pair, one heard and four shot
    rounds = {c.round: c for c in tl.cues if c.round}
    assert set(rounds) == {1, 2, 3} and rounds[3].piece == "驺虞"
    beats = [b for b in tl.beats if b.cue == rounds[3].id]
    for pair in {b.pair for b in beats}:
        mine = [b for b in beats if b.pair == pair]
        assert sorted({b.jie for b in mine}) == [1, 2, 3, 4, 5] and sum(b.shoot for b in mine) == 8
    said = "".join(n.lyric for n in tl.notes if n.cue == "round3_mingyue" and n.instrument == "乐正")
    assert said == "奏驺虞间若一"
    # a hit is called by the one 获者 (「获者坐而获，举旌以宫，偃旌以商」)
    assert any(n.instrument == hou.huozhe and n.lyric == "获" for n in tl.notes if n.cue == rounds[3].id)
    # the 陔 on the drum alone (注 「大夫士鼓而已」)
    assert {n.instrument for n in tl.notes if n.cue == "gai"} == {"鼓·乡射"}


def test_the_heyue_sings_the_six_odes_on_the_shipu_notes(xs, root):
    """Each syllable of the 合乐 sung once, in order, on 熊朋来's note at its exact 三分损益 ratio (an
    octave below 黄钟, the 歌's), with the 瑟 and the 笙 and 和 sounding with it."""
    tl, _ = xs
    scores = scores_text(root)
    lines = scores.splitlines()
    k = next(i for i, ln in enumerate(lines) if "ratios:" in ln and "黄 1" in ln)
    ratio = {lv: Fraction(v) for lv, v in re.findall(r"([黄大太夹姑仲蕤林夷南无应]) (\d+(?:/\d+)?)",
                                                       " ".join(lines[k:k + 3]))}
    want = [n for title in HELE for st in expected_xiong(scores, title) for n in st]
    sung = sorted((n for n in tl.notes if n.cue == "heyue" and n.instrument == "歌"), key=lambda n: n.time)
    assert len(sung) == len(want) == 366
    for k, (n, (word, lv, octave)) in enumerate(zip(sung, want)):
        assert n.lyric == word, (k, n.lyric, word)
        assert n.hz / tl.ceremony.huangzhong_hz == pytest.approx(float(ratio[lv] * 2 ** (octave - 1)), rel=1e-9)
    cue = tl.cue("heyue")
    assert {"歌", "瑟", "笙", "和"} <= set(cue.instruments)
    assert cue.places["笙"]["where"].startswith("县中")                # 「笙入，立于县中」
    onsets = {n.time for n in sung}
    assert all(n.time in onsets for n in tl.notes if n.cue == "heyue" and n.instrument == "笙")


def test_a_xiangshe_log_is_checked_in_its_words(xs, cli, tmp_path):
    tl, _ = xs
    strokes = [b for b in tl.beats if b.shoot]
    host = next(b for b in strokes if b.rank == "主人")
    guest = next(b for b in strokes if b.rank == "宾")
    log = tmp_path / "xs.csv"
    log.write_text("time,archer,rank,role,target,result,pair,round\n"
                   f"{guest.time:.3f},宾,宾,上射,乡侯,贯,宾主耦,3\n"
                   f"{host.time + 0.3:.3f},主人,主人,下射,乡侯,贯,宾主耦,3\n"      # off the drum
                   f"{host.time:.3f},主人,主人,下射,乡侯,离维纲,宾主耦,3\n", encoding="utf-8")
    r = cli("check", SHEET, log, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # no host's privilege at the 乡射: the 主人 off the drum and his 离维纲 do not count
    assert [s["reason"] for s in doc["shots"]] == ["释", "不鼓不释", "不贯不释"]
    (t3,) = doc["tallies"]
    assert (t3["右"], t3["左"]) == (1, 0) and t3["announcement"] == "右贤于左一奇"
    bad = tmp_path / "bad.csv"
    bad.write_text(log.read_text(encoding="utf-8").replace("乡侯,贯,宾主耦", "干,贯,宾主耦", 1), encoding="utf-8")
    r = cli("check", SHEET, bad)
    assert r.returncode == 2 and "'干'" in r.stderr and "乡侯" in r.stderr, r.stderr


def test_a_short_cue_renders_in_the_xiangshe_court_and_is_drawn(cli, tmp_path):
    out = tmp_path / "bei.wav"
    r = cli("render", SHEET, "--cues", "zhengge_bei", "--sample-rate", "16000", "--listener", "zhuren",
            "-o", out)
    assert r.returncode == 0, r.stderr
    audio, sr = sf.read(out)
    level = np.abs(audio).max(axis=1)
    assert sr == 16000 and level.max() > 0.1 and len(audio) / sr > 1.0
    svg = tmp_path / "court.svg"
    r = cli("layout", SHEET, "-o", svg)
    assert r.returncode == 0, r.stderr
    drawing = svg.read_text(encoding="utf-8")
    assert "乡侯" in drawing and "磬·乡射" in drawing and "大侯" not in drawing and "笙钟" not in drawing


def test_play_auto_runs_the_xiangshe_over_jack(jack, xs, tmp_path):
    """``play cues/xiangshe.toml --auto --from zouyu+16 --until zouyu+20`` over JACK: the 驺虞's
    notes of those 4 s (the drum's, the 歌's, the 瑟's) arrive, each of them, on time."""
    import subprocess
    import sys

    import mido
    from cli_support import default_sigint
    from jack_support import Recorder, diagnosis, log_mark

    tl, _ = xs
    start = tl.cue("zouyu").start
    notes = sorted((n for n in tl.notes if start + 16 <= n.time < start + 20), key=lambda n: n.time)
    assert len(notes) > 8 and any(n.instrument == "鼓·乡射" for n in notes)
    mark = log_mark(jack)
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    try:
        play = subprocess.Popen([sys.executable, "-m", "yuexuan", "play", str(SHEET), "--api", "jack",
                                 "--port", "rec", "--auto", "--from", "zouyu+16", "--until", "zouyu+20",
                                 "--report", str(tmp_path / "r.json")], env=jack, cwd=ROOT,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=default_sigint)
        _, err = play.communicate(timeout=120)
    finally:
        msgs = [(t, mido.Message.from_bytes(d)) for t, d in rec.stop()]
    assert play.returncode == 0, err
    (anchor,) = (a["anchor_monotonic"] for a in json.loads((tmp_path / "r.json").read_text())["anchors"])
    ons = [(t, m) for t, m in msgs if m.type == "note_on" and m.velocity > 0]
    assert sorted((m.note, m.velocity) for _, m in ons) == sorted((n.midi, n.velocity) for n in notes), \
        diagnosis(jack, mark)
    assert abs(ons[0][0] - (anchor + notes[0].time)) < 0.02, diagnosis(jack, mark)

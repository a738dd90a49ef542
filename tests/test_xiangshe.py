"""The 乡射礼 from the same engine (issue 33): cues/xiangshe.toml with its rite (ceremony/xiangshe.toml)
and its courtyard built whole once (``xiangshe_build``, tests/conftest.py) and read back: the MIDI
(mido), the audio (soundfile, librosa's onsets), the score (MusicXML read as XML), the drawing and the
guide; its 合乐 sung on the 诗谱's notes, its one 侯, its 驺虞 of five 节 a pair, a 乡射 log checked in
its words, and ``play --auto`` over JACK.

The notes are judged against ../shared/scores.md parsed apart (tests/shipu_support.py, as
tests/test_shipu.py reads it), the ratios against scores.md's list; exact pitches from the sheet
compiled in this process (the saved JSON rounds Hz to 4 decimals).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path

import librosa
import mido
import numpy as np
import pytest
import soundfile as sf
from scipy.optimize import linear_sum_assignment
from shipu_support import HELE, scores_text
from test_shipu import expected_xiong

from yuexuan.compiler import compile_path
from yuexuan.timeline import from_dict

ROOT = Path(__file__).resolve().parent.parent
SHEET = ROOT / "cues" / "xiangshe.toml"
SPEED_OF_SOUND_M_S = 343.0


@pytest.fixture(scope="module")
def xs():
    """The sheet compiled in this process (exact floats), with its warnings."""
    return compile_path(SHEET)


@pytest.fixture(scope="module")
def saved(xiangshe_build):
    """The timeline the build saved, as every output reads it."""
    return from_dict(json.loads((xiangshe_build / "xiangshe.json").read_text(encoding="utf-8")))


def test_the_build_writes_every_output(xiangshe_build, saved):
    """MIDI, timeline, audio with chapters, guide, score and drawing, each read back."""
    printed = (xiangshe_build.parent / "stdout.txt").read_text(encoding="utf-8").split()
    names = {Path(p).relative_to(Path(printed[0]).parent).as_posix() for p in printed}
    assert {"xiangshe.mid", "xiangshe.json", "xiangshe.flac", "xiangshe.vtt", "xiangshe.cue",
            "guide/index.html", "guide/layout.svg", "xiangshe.musicxml", "xiangshe.svg"} <= names
    assert all((xiangshe_build / n).is_file() for n in names)
    tl = saved
    end_s = max(c.end for c in tl.cues)
    # the MIDI: a note-on per note, a marker per cue, a track for the 笙 and the 和
    mid = mido.MidiFile(xiangshe_build / "xiangshe.mid", charset="utf-8")
    ons = sum(m.type == "note_on" and m.velocity > 0 for t in mid.tracks for m in t)
    markers = [m.text.split(":")[0] for t in mid.tracks for m in t if m.type == "marker"]
    assert ons == len(tl.notes) and markers == [c.id for c in tl.cues]
    assert {"笙", "和", "歌", "瑟", "鼓·乡射", "获者·乡侯", "释获者"} <= {t.name for t in mid.tracks}
    # the audio: the whole rite, a chapter per cue
    info = sf.info(str(xiangshe_build / "xiangshe.flac"))
    assert end_s <= info.frames / info.samplerate <= end_s + 10
    assert (xiangshe_build / "xiangshe.vtt").read_text(encoding="utf-8").count(" --> ") == len(tl.cues)
    # the score: the 合乐's words under the 歌's notes
    xml = ET.parse(xiangshe_build / "xiangshe.musicxml").getroot()
    words = "".join(ly.findtext("text") or "" for ly in xml.iter("lyric") if ly.get("number") == "1")
    assert "关关雎鸠" in words and "于以采蘋" in words
    # the drawing (and the guide's): the 乡射's court, not the 大射仪's
    for svg in ("xiangshe.svg", "guide/layout.svg"):
        drawing = (xiangshe_build / svg).read_text(encoding="utf-8")
        assert "乡侯" in drawing and "磬·乡射" in drawing and "笙" in drawing, svg
        assert "大侯" not in drawing and "笙钟" not in drawing, svg
    page = (xiangshe_build / "guide" / "index.html").read_text(encoding="utf-8")
    assert "The District Archery Rite" in page and "Great Archery" not in page
    guide = json.loads((xiangshe_build / "guide" / "timeline.json").read_text(encoding="utf-8"))
    assert [c["id"] for c in guide["cues"]] == [c.id for c in tl.cues]


def test_the_rite_is_the_xiangshe_s(saved):
    tl = saved
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
    # every cue quotes the sentence behind it
    unquoted = [c.id for c in tl.cues if not re.search(r"「[^」]+」", c.source)]
    assert not unquoted, unquoted
    rounds = {c.round: c for c in tl.cues if c.kind == "shoot" or c.kind == "shejie"}
    assert sorted(rounds) == [1, 2, 3] and rounds[3].piece == "驺虞"
    # a hit is called by the one 获者 (「获者坐而获，举旌以宫，偃旌以商」), counted by the 释获者
    assert any(n.instrument == hou.huozhe and n.lyric == "获" for n in tl.notes if n.cue == rounds[3].id)
    counted = {c.id: "".join(n.lyric or "" for n in tl.notes if n.cue == c.id and n.instrument == "释获者")
               for c in tl.cues if c.piece.startswith("数获")}
    assert set(counted) == {"round2_shuhuo", "round3_shuhuo"}
    assert all("贤于" in t or "钧" in t for t in counted.values()), counted
    said = "".join(n.lyric for n in tl.notes if n.cue == "round3_mingyue" and n.instrument == "乐正")
    assert said == "奏驺虞间若一"
    assert "".join(n.lyric for n in tl.notes if n.cue == "round3_mingyue" and n.instrument == "大师") \
        == "诺"
    # 无算乐 (「合乡乐无次数」) sings the odes again; the 陔 on the drum alone (注 「大夫士鼓而已」)
    assert {"歌", "笙"} <= {n.instrument for n in tl.notes if n.cue == "xiangyue"}
    assert {n.instrument for n in tl.notes if n.cue == "gai"} == {"鼓·乡射"}
    assert [c.id for c in tl.cues][-2:] == ["xiangyue", "gai"]
    # the 工 moved below the hall for the shooting (「迁乐于下…阼阶下之东南，堂前三笴」), back for 无算乐
    assert rounds[3].places["歌"]["where"].startswith("阼阶下之东南")
    assert tl.cue("xiangyue").places["歌"]["where"].startswith("堂上")


def test_zouyu_five_jie_a_pair_one_heard_four_shot(saved):
    """注 「乡射之鼓五节，歌五终，所以将八矢。一节之间当拾发，四节四拾，其一节先以听也」: each pair's
    five 节, the first heard, in each of the other four the 上射 and then the 下射 on a stroke."""
    tl = saved
    cue = next(c for c in tl.cues if c.kind == "shejie")
    beats = [b for b in tl.beats if b.cue == cue.id]
    pairs = list(dict.fromkeys(b.pair for b in beats))
    assert pairs == [p.id for p in tl.rite.pairs if p.group in ("三耦", "宾主", "大夫", "众宾")]
    strokes = sorted(n.time for n in tl.notes if n.cue == cue.id and n.instrument == "鼓·乡射")
    jie_s = (cue.end - cue.start) / (5 * len(pairs))
    for k, pair in enumerate(pairs):
        mine = [b for b in beats if b.pair == pair]
        assert sorted({b.jie for b in mine}) == [1, 2, 3, 4, 5]
        assert not any(b.shoot for b in mine if b.jie == 1)                 # 一节先以听
        for j in range(2, 6):                                                # 四节四拾
            shots = [b for b in mine if b.jie == j and b.shoot]
            assert [b.role for b in shots] == ["上射", "下射"], (pair, j, shots)
            assert all(cue.start + (5 * k + j - 1) * jie_s <= b.time < cue.start + (5 * k + j) * jie_s
                       for b in shots)
        # every shot is on a stroke of the drum (不鼓不释)
        assert all(min(abs(s - b.time) for s in strokes) < 1e-6 for b in mine if b.shoot)


def test_the_heyue_sings_the_six_odes_on_the_shipu_notes(xs, root):
    """Each syllable of the 合乐 sung once, in order, on 熊朋来's note at its exact 三分损益 ratio (an
    octave below 黄钟, the 歌's), with the 瑟 and the 笙 and 和 sounding with it."""
    tl, warnings = xs
    assert not warnings, warnings
    scores = scores_text(root)
    lines = scores.splitlines()
    k = next(i for i, ln in enumerate(lines) if "ratios:" in ln and "黄 1" in ln)
    ratio = {lv: Fraction(v) for lv, v in re.findall(r"([黄大太夹姑仲蕤林夷南无应]) (\d+(?:/\d+)?)",
                                                       " ".join(lines[k:k + 3]))}
    want = [n for title in HELE for st in expected_xiong(scores, title) for n in st]
    sung = sorted((n for n in tl.notes if n.cue == "heyue" and n.instrument == "歌"), key=lambda n: n.time)
    assert len(sung) == len(want) == 366
    for k, (n, (word, lv, octave)) in enumerate(zip(sung, want, strict=True)):
        assert n.lyric == word, (k, n.lyric, word)
        exact = float(ratio[lv] * 2 ** (octave - 1))
        assert n.hz / tl.ceremony.huangzhong_hz == pytest.approx(exact, rel=1e-9), (k, word, lv)
    cue = tl.cue("heyue")
    assert {"歌", "瑟", "笙", "和"} <= set(cue.instruments)
    assert cue.places["笙"]["where"].startswith("县中")                # 「笙入，立于县中」
    onsets = {n.time for n in sung}
    sheng = [n for n in tl.notes if n.cue == "heyue" and n.instrument == "笙"]
    assert sheng and all(n.time in onsets for n in sheng)


def matched(onsets: np.ndarray, strokes: np.ndarray, window_s: float = 0.05) -> int:
    """Size of the largest one-to-one matching of onsets to strokes within ``window_s``."""
    gap = np.abs(onsets[:, None] - strokes[None, :])
    rows, cols = linear_sum_assignment(np.where(gap <= window_s, gap, 1e6))
    return int(np.sum(gap[rows, cols] <= window_s))


def test_the_gai_is_heard_as_a_drum_on_its_strokes(xiangshe_build, saved):
    """In the build's audio (heard from the first seat of the 乡射's court, the render's default),
    the 陔's onsets (librosa) are its drum's strokes, delayed by the distance from the seat."""
    tl = saved
    gai = tl.cue("gai")
    strokes = np.array(sorted(n.time for n in tl.notes if n.cue == "gai")) - gai.start
    court = tomllib.loads((ROOT / "ceremony" / "xiangshe_courtyard.toml").read_text(encoding="utf-8"))
    delay_s = math.dist(court["listener"][0]["position_m"],
                        tl.instruments["鼓·乡射"]["position_m"]) / SPEED_OF_SOUND_M_S
    path = xiangshe_build / "xiangshe.flac"
    sr = sf.info(str(path)).samplerate
    y, _ = sf.read(str(path), start=int(gai.start * sr), stop=int(gai.end * sr), dtype="float32")
    onsets = librosa.onset.onset_detect(y=y.mean(axis=1), sr=sr, units="time") - delay_s
    hits = matched(onsets, strokes)
    assert len(strokes) >= 10 and hits >= 0.95 * len(strokes), (len(onsets), len(strokes), hits)
    # the other onsets are each stroke's echo from the court's south wall (its 门, 68 m south of the
    # drum): the image source's path less the direct one
    (gate,) = (w for w in court["wall"] if w["name"] == "门")
    drum = tl.instruments["鼓·乡射"]["position_m"]
    image = (drum[0], 2 * gate["from_m"][1] - drum[1], drum[2])
    echo_s = math.dist(court["listener"][0]["position_m"], image) / SPEED_OF_SOUND_M_S - delay_s
    heard = matched(onsets, np.concatenate([strokes, strokes + echo_s]))
    assert heard >= 0.9 * len(onsets), (onsets.round(3), echo_s)


def test_a_xiangshe_log_is_checked_in_its_words(saved, cli, tmp_path):
    tl = saved
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
    assert doc["settings"]["host"] == "主人" and not doc["settings"]["gong_exempt_in_round_3"]
    bad = tmp_path / "bad.csv"
    bad.write_text(log.read_text(encoding="utf-8").replace("乡侯,贯,宾主耦", "干,贯,宾主耦", 1),
                   encoding="utf-8")
    r = cli("check", SHEET, bad)
    assert r.returncode == 2 and "'干'" in r.stderr and "乡侯" in r.stderr, r.stderr


def test_an_arrow_not_found_brings_the_sima_s_qushi_busuo(saved, tmp_path):
    """「若矢不备，则司马又袒执弓，如初升，命曰：取矢不索」 [乡射]: a log whose round-2 arrow was not
    found adds 取矢不索, said by the 司马, after round 2's 取矢; the sheet alone has none."""
    from yuexuan.scoring.shots import read_shots

    assert not [c for c in saved.cues if c.piece == "取矢不索"]
    t = saved.cue("round2").start + 4.0           # the 上耦下射's first arrow of round 2
    log = tmp_path / "lost.csv"
    log.write_text("time,archer,rank,role,target,result,pair,round\n"
                   f"{t:.3f},上耦下射,弟子,下射,,失,上耦,2\n", encoding="utf-8")
    tl, _ = compile_path(SHEET, shots=read_shots(log))
    order = [c.id for c in tl.cues]
    assert [c.id for c in tl.cues if c.piece == "取矢不索"] == ["round2_busuo"]
    assert order.index("round2_busuo") == order.index("round2_qushi") + 1
    said = "".join(n.lyric for n in tl.notes if n.cue == "round2_busuo" and n.instrument == "司马")
    assert said == "取矢不索"


def test_play_auto_runs_the_xiangshe_over_jack(jack, xs, tmp_path):
    """``play cues/xiangshe.toml --auto --from zouyu+16 --until zouyu+20`` over JACK: the 驺虞's
    notes of those 4 s (the drum's, the 歌's, the 瑟's) arrive, each of them, on time."""
    import subprocess
    import sys

    from cli_support import default_sigint
    from jack_support import Recorder, diagnosis, log_mark, worst_late_s

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
    # on time within 20 ms and as much more as the server's latest cycle began late (its log)
    assert abs(ons[0][0] - (anchor + notes[0].time)) < 0.02 + worst_late_s(jack, mark), diagnosis(jack, mark)


def test_the_ji_s_caipin_is_a_setting(tmp_path):
    """O41: 记 「歌驺虞若采蘋，皆五终，射无算」 — under ``xiangshe_shejie = "采蘋"`` the third round
    shoots to 采蘋, still five 节 a pair, and the 乐正 commands it."""
    sheet = tmp_path / "xs.toml"
    sheet.write_text(SHEET.read_text(encoding="utf-8") + '\n[variants]\nxiangshe_shejie = "采蘋"\n',
                     encoding="utf-8")
    tl, warnings = compile_path(sheet)
    assert not warnings, warnings
    (cue,) = (c for c in tl.cues if c.kind == "shejie")
    assert (cue.id, cue.piece) == ("caipin", "采蘋") and "歌驺虞若采蘋" in cue.source
    assert {b.jie for b in tl.beats if b.cue == cue.id} == {1, 2, 3, 4, 5}
    sung = "".join(n.lyric or "" for n in tl.notes if n.cue == cue.id and n.instrument == "歌")
    assert sung.startswith("于以采蘋")
    said = "".join(n.lyric for n in tl.notes if n.cue == "round3_mingyue" and n.instrument == "乐正")
    assert said == "奏采蘋间若一"

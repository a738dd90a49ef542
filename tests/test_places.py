"""Places per cue: the 工 and 瑟 on the 堂 for 鹿鸣, at 东坫之东南 after 卒管; the 管新宫 pipers
where O6/O7/O9 put them; the render hears a note from its cue's place (delay and direction measured
from the audio) and the drawing marks the places."""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import soundfile as sf
from cli_support import DEFAULT_CUES, ROOT

from yuexuan.audio.engine import render
from yuexuan.audio.engine.plan import Options
from yuexuan.audio.voice import takes
from yuexuan.audio.voice.line_readings import readings
from yuexuan.compiler import compile_path
from yuexuan.errors import UserError
from yuexuan.publish import drawing
from yuexuan.rite import courtyard, variants
from yuexuan.timeline import Timeline, from_dict, select, to_dict

SPEED_M_S = 343.0          # the speed of sound the render states (docs/render.md)


@pytest.fixture(scope="module")
def default():
    return compile_path(DEFAULT_CUES)[0]


def _place(tl: Timeline, cue: str, inst: str) -> dict:
    return tl.cue(cue).places[inst]


def test_default_timeline_moves_the_gong_and_se(default):
    facts = default.instruments
    for inst in ("歌", "瑟"):
        on_hall = _place(default, "luming", inst)
        assert on_hall["where"] == "西阶上少东"
        assert on_hall["position_m"] == facts[inst]["position_m"]        # their home, on the 堂
        assert on_hall["position_m"][1] > 0 and "西阶上少东" in on_hall["source"]
        after = _place(default, "lishou", inst)
        assert after["where"] == "东坫之东南"
        assert "皆东坫之东南，西面北上坐" in after["source"]
        # 敖: 东县东北方 — east of, and north of the south end of, every instrument of the east 县
        east = [f["position_m"] for f in facts.values() if f["xian"] == "东"]
        assert after["position_m"][0] > max(p[0] for p in east)
        assert after["position_m"][1] > min(p[1] for p in east)
    # the 乐正 stands south of the 工 (「乐正在工南北面」)
    gong = _place(default, "lishou", "歌")
    assert gong["attendants"]["乐正"][1] < gong["position_m"][1]
    assert gong["attendants"]["乐正"][0] == gong["position_m"][0]
    # before the 工 come in nothing moves them; the 肆夏 cues name no places
    assert default.cue("sixia_bin").places == {}


def test_xingong_pipes_north_of_the_north_drum_by_default(default):
    jiangu = default.instruments["建鼓·北"]["position_m"]
    for inst in ("簜", "歌"):
        p = _place(default, "xingong", inst)
        assert p["where"] == "鼓北 = 建鼓·北之北"
        assert p["position_m"][0] == jiangu[0] and p["position_m"][1] > jiangu[1]


def test_places_survive_the_json_round_trip_and_select(default):
    back = from_dict(to_dict(default))
    assert [c.places for c in back.cues] == [c.places for c in default.cues]
    cut = select(default, ["luming", "lishou"])
    assert cut.cue("lishou").places == default.cue("lishou").places
    bad = to_dict(default)
    bad["cues"][2]["places"]["歌"] = {"where": "x", "position_m": [1, 2]}
    with pytest.raises(ValueError, match=r"cues\[2\]\.places\['歌'\]\.position_m"):
        from_dict(bad)


def _sheet_with(tmp_path, **chosen) -> str:
    """A copy of cues/dashe.toml with only the ``[variants]`` settings of ``chosen`` changed."""
    text = DEFAULT_CUES.read_text(encoding="utf-8")
    for key, option in chosen.items():
        line = re.compile(rf'^{re.escape(key)} = "[^"]*"', re.M)
        assert line.search(text), f"cues/dashe.toml's [variants] has no {key}"
        text = line.sub(f'{key} = "{option}"', text, count=1)
    path = tmp_path / "sheet.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _xingong(tmp_path, **chosen) -> Timeline:
    return compile_path(_sheet_with(tmp_path, **chosen), cues=["xingong"])[0]


def test_o6_o7_o9_each_move_the_pipers(tmp_path, default):
    facts = default.instruments
    base = _place(default, "xingong", "簜")
    # O7 郑玄: 「立于东县之中」 — by the east 县, between its north and south ends
    o7 = _place(_xingong(tmp_path, guan_place="郑玄"), "xingong", "簜")
    east = [f["position_m"] for f in facts.values() if f["xian"] == "东"]
    assert o7["where"] == "东县之中" and o7["position_m"] != base["position_m"]
    assert abs(o7["position_m"][0] - max(p[0] for p in east)) < 2.0
    assert min(p[1] for p in east) < o7["position_m"][1] < max(p[1] for p in east)
    # O6 郑玄: pipers who are not the 工 play the 簜 where it stands (「簜在建鼓之间」)
    o6 = _xingong(tmp_path, guan_pipers="郑玄")
    assert _place(o6, "xingong", "簜")["position_m"] == facts["簜"]["position_m"] != base["position_m"]
    assert _place(o6, "xingong", "歌")["where"] == "鼓北 = 建鼓·北之北"    # the 工 stand apart
    # O9: where 鼓北 is moves the 工, and the 簜 they pipe
    zheng = _xingong(tmp_path, gubei="郑玄")
    west = [f["position_m"] for f in facts.values() if f["xian"] == "西"]
    for inst in ("簜", "歌"):
        p = _place(zheng, "xingong", inst)
        assert p["where"] == "鼓北 = 西县之北"
        assert p["position_m"][1] > max(q[1] for q in west)                 # north of the west 县
        assert abs(p["position_m"][0] - facts["颂磬"]["position_m"][0]) < 1.0
    ao = _place(_xingong(tmp_path, gubei="敖继公"), "xingong", "簜")
    assert ao["where"] == "鼓北 = 磬南"
    assert facts["建鼓·西"]["position_m"][1] < ao["position_m"][1] < facts["颂磬"]["position_m"][1]
    # and each is a listed setting naming its O-number
    defs = variants.load()
    for key, o in (("guan_pipers", "O6"), ("guan_place", "O7"), ("gubei", "O9")):
        assert defs[key]["question"].startswith(o + ":")


def test_a_place_row_naming_an_unknown_setting_is_refused(tmp_path):
    for folder in ("instruments",):
        (tmp_path / folder).mkdir()
    text = (ROOT / "instruments" / "簜.toml").read_text(encoding="utf-8")
    (tmp_path / "instruments" / "簜.toml").write_text(
        text.replace('when = { guan_place = "郑玄" }', 'when = { guan_place = "无人" }'), encoding="utf-8")
    from yuexuan.data import DataSource
    with pytest.raises(UserError, match="unknown variant setting guan_place"):
        compile_path(DEFAULT_CUES, cues=["xingong"], source=DataSource(tmp_path))


def _first_song_note(tl: Timeline, cue: str):
    return min((n for n in tl.notes if n.cue == cue and n.instrument == "歌"), key=lambda n: n.time)


def _abridged(tl: Timeline, seconds: float = 3.0, gap: float = 3.0) -> Timeline:
    """The two cues of ``tl``, each cut to its first ``seconds``, the first starting at 1 s and
    the second moved to follow."""
    cues, notes, t0 = [], [], 1.0
    for c in tl.cues:
        shift = t0 - c.start
        cues.append(dataclasses.replace(c, start=t0, end=t0 + seconds, phrases=()))
        notes += [dataclasses.replace(n, time=n.time + shift) for n in tl.notes
                  if n.cue == c.id and n.time < c.start + seconds]
        t0 += seconds + gap
    return dataclasses.replace(tl, cues=tuple(cues), notes=tuple(sorted(notes, key=lambda n: n.time)),
                               beats=())


def test_render_hears_the_singers_from_each_cues_place(tmp_path):
    tl = _abridged(compile_path(DEFAULT_CUES, cues=["luming", "lishou"])[0])
    sr = 16000
    render.render(tl, tmp_path / "two.wav", Options(sample_rate=sr), stems_dir=tmp_path / "stems")
    stem, got_sr = sf.read(tmp_path / "stems" / "歌.wav", always_2d=True)
    assert got_sr == sr
    seat = next(x for x in tomllib.loads((ROOT / "ceremony" / "courtyard.toml").read_text(encoding="utf-8"))
                ["listener"] if x["name"] == "宾")
    measured = {}
    for cue in ("luming", "lishou"):
        note = _first_song_note(tl, cue)
        pos = tl.cue(cue).places["歌"]["position_m"]
        delay = math.dist(pos, seat["position_m"]) / SPEED_M_S
        # the syllable starts with its consonant, before the note's time (the vowel is on it); the
        # six singers' onsets spread over 20 ms, their seats over 4.5 m of the row
        said = readings(tl.notes, {"歌": "voice"})[tl.notes.index(note)]     # read in its line
        lead = takes.lead_samples(said, sr) / sr
        lo = int((note.time - lead - 0.05) * sr)
        win = np.abs(stem[lo:int((note.time + 0.3) * sr)]).max(axis=1)
        assert win[:int(0.03 * sr)].max() == 0.0                     # silent before the note
        onset = (lo + int(np.argmax(win > 1e-4 * win.max()))) / sr
        assert onset - (note.time - lead) == pytest.approx(delay, abs=0.02), cue
        body = stem[int(onset * sr):int((onset + 0.5) * sr)]
        left, right = np.sqrt(np.mean(body ** 2, axis=0))
        measured[cue] = (onset - (note.time - lead), 20 * math.log10(left / right))
    # the 宾 faces south: the 堂 seat is almost straight ahead, 东坫之东南 far to his left (east)
    assert abs(measured["luming"][1]) < 3.0
    assert measured["lishou"][1] > 6.0
    assert measured["lishou"][0] - measured["luming"][0] > 0.02         # further away: later


def test_drawing_marks_the_places(default):
    svg = drawing.layout_svg(default.instruments, courtyard.load())
    root = ET.fromstring(svg)
    ns = {"s": drawing.SVG_NS}
    places = root.findall(".//s:g[@class='yx-place']", ns)
    got = {(g.get("data-performer"), g.get("data-where")): g.get("data-cues").split() for g in places}
    assert "lishou" in got[("歌", "东坫之东南")] and "lishou" in got[("瑟", "东坫之东南")]
    assert got[("簜", "鼓北 = 建鼓·北之北")] == ["xingong"]
    # the mark stands where the place is: the 歌's 东坫 mark is east of its home mark
    home = root.find(".//s:g[@id='inst-歌']/s:path", ns).get("d")
    there = next(g for g in places if g.get("data-where") == "东坫之东南"
                 and g.get("data-performer") == "歌").find("s:path[@class='yx-mark']", ns).get("d")
    x_of = lambda d: float(d[1:].split(",")[0])                      # noqa: E731  (M x,y …)
    assert x_of(there) > x_of(home)
    attendants = {g.get("data-attendant") for g in root.findall(".//s:g[@class='yx-attendant']", ns)}
    assert {"乐正", "小乐正"} <= attendants


def test_the_guide_marks_where_they_are_during_a_cue(browser, tmp_path, default):
    from yuexuan import cli

    assert cli.main(["guide", str(DEFAULT_CUES), "-o", str(tmp_path / "site"), "--no-audio"]) == 0
    browser.get((tmp_path / "site" / "index.html").as_uri())
    here = ("return Array.from(document.querySelectorAll('.yx-place.here, .yx-attendant.here'))"
            ".map(g => (g.dataset.performer || g.dataset.attendant) + '@' + (g.dataset.where || ''))"
            ".sort()")
    for cue, want in (("lishou", ["乐正@", "歌@东坫之东南", "瑟@东坫之东南"]),
                      ("xingong", ["歌@鼓北 = 建鼓·北之北", "簜@鼓北 = 建鼓·北之北"]),
                      ("luming", ["小乐正@"])):
        browser.execute_script("window.yuexuanSeek(arguments[0])", default.cue(cue).start + 1.0)
        assert browser.execute_script(here) == sorted(want), cue

"""The commentators' variants (ceremony/variants.toml): each setting, changed alone in a copy of
cues/dashe.toml, changes what it documents in the compiled timeline (cue times, instruments,
pitches, positions, beats) — and `yuexuan variants` lists at least 20 open questions of §6."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from yuexuan.compiler import compile_path
from yuexuan.rite import courtyard, variants
from yuexuan.rite import pieces as pieces_mod
from yuexuan.rite.tuning import parse_pitch

ROOT = Path(__file__).resolve().parents[1]
SHEET = ROOT / "cues" / "dashe.toml"
VDEFS = variants.load()


def sheet_with(tmp_path: Path, key: str, option: str) -> Path:
    """A copy of cues/dashe.toml with only ``[variants] key`` set to ``option``."""
    text = SHEET.read_text(encoding="utf-8")
    line = re.compile(rf'^{re.escape(key)} = "[^"]*"', re.M)
    assert line.search(text), f"cues/dashe.toml's [variants] has no {key}"
    out = tmp_path / f"{key}.toml"
    out.write_text(line.sub(f'{key} = "{option}"', text, count=1), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def default():
    return compile_path(SHEET)[0]


def cue(tl, cid):
    return next(c for c in tl.cues if c.id == cid)


def notes(tl, cid, instrument=None):
    return [n for n in tl.notes if n.cue == cid and (instrument is None or n.instrument == instrument)]


def kinds(tl, cid):
    return {tl.instruments[n.instrument]["kind"] for n in notes(tl, cid)}


def lyrics(title):
    return [w for _, w in pieces_mod.load_all()[title].notes() if w]


def lvs(tl, instrument):
    return {n.lv for n in tl.notes if n.instrument == instrument}


def first_beat(tl, pair_id):
    return min(b.time - cue(tl, b.cue).start for b in tl.beats if b.pair == pair_id)


def default_pos(key, name):
    return VDEFS[key]["options"][VDEFS[key]["default"]]["facts"][name]["position_m"]


# (key, option, what the default shows, what the option shows): each a function of a timeline
CHANGES = [
    ("sixia_xian", "盛世佐", lambda tl: "笙钟" in cue(tl, "sixia_bin").instruments),
    ("luming_sanzhong", "敖继公",
     lambda tl: lyrics("四牡")[0] in {n.lyric for n in notes(tl, "luming", "歌")}),
    ("xingong_sanzhong", "敖继公",
     lambda tl: len(notes(tl, "xingong", "簜")) == sum(len(pieces_mod.load_all()[t].notes())
                                                       for t in ("新宫", "新宫·次一", "新宫·次二"))),
    ("guan_accompaniment", "郑玄", lambda tl: kinds(tl, "xingong") == {"簜"}),
    ("guan_accompaniment", "盛世佐", lambda tl: "笙钟" in cue(tl, "xingong").instruments),
    ("jiangu_bei", "敖继公", lambda tl: not any(n.instrument == "建鼓·北" for n in tl.notes)),
    ("jie_marker", "击鑮", lambda tl: "建鼓" not in kinds(tl, "gai")),
    ("fuhou_round3", "如初",        # sung on 宫 then 商 = 宫 × 9/8 (疏 「宫数八十一，商数七十二」), not spoken
     lambda tl: [n.hz is not None for n in notes(tl, "round3_quhou", "负侯者·干")] == [True, True]
     and notes(tl, "round3_quhou", "负侯者·干")[1].hz / notes(tl, "round3_quhou", "负侯者·干")[0].hz
     == pytest.approx(9 / 8)),
    ("sixia_manner", "盛世佐",
     lambda tl: kinds(tl, "sixia_bin") & {"钟", "鑮", "建鼓"} == {"建鼓"} and "磬" in kinds(tl, "sixia_bin")),
    ("sixia_end", "郊特牲",
     lambda tl: cue(tl, "sixia_bin").end - cue(tl, "sixia_bin").start >= 60.0
     and "卒爵" in cue(tl, "sixia_bin").ends_when),
    ("bian_te", "陈旸",
     lambda tl: (tl.instruments["笙磬"]["count"], tl.instruments["笙磬"]["suspension"], lvs(tl, "笙磬"))
     == (1, "特悬", {"黄"})),
    ("lu_per_side", "郑玄",
     lambda tl: lvs(tl, "笙钟") | lvs(tl, "笙磬") <= {"太", "姑"} and lvs(tl, "颂钟") | lvs(tl, "颂磬") <= {"夷", "无"}
     and lvs(tl, "颂钟")),
    ("tao_place", "敖继公", lambda tl: tl.instruments["鼗"]["position_m"][0] < default_pos("tao_place", "鼗")[0]),
    ("tao_place", "郝敬", lambda tl: tl.instruments["鼗"]["position_m"][0] > -9.0),   # east of the 颂磬 frame
    ("lishou_span", "公乐作",         # the 射节 begun again for the 公, in a cue of its own
     lambda tl: "lishou_gong" in [c.id for c in tl.cues] and notes(tl, "round3_gong_quhou")
     and "公" not in {b.archer for b in tl.beats if b.cue == "lishou"}),
    ("sanou_rank", "郑玄", lambda tl: {b.rank for b in tl.beats if b.shoot and b.pair in ("上耦", "次耦", "下耦")} == {"大夫"}),
    ("houdao", "敖继公", lambda tl: tl.instruments["获者·参"]["position_m"][1] == pytest.approx(-83.16 + 4.0)
     and tl.instruments["负侯者·干"]["position_m"][1] == pytest.approx(-69.3 + 4.0)),
    ("wusuan_piece", "四牡",
     lambda tl: cue(tl, "wusuan").piece == "四牡" and notes(tl, "wusuan", "歌")[0].lyric == lyrics("四牡")[0]),
    ("ao_luqin", "秦蕙田", lambda tl: "ao_luqin" in [c.id for c in tl.cues] and notes(tl, "ao_luqin")),
]


@pytest.mark.parametrize("key, option, shows", CHANGES, ids=[f"{k}={o}" for k, o, _ in CHANGES])
def test_setting_changes_the_timeline(tmp_path, default, key, option, shows):
    assert option != VDEFS[key]["default"] and option in VDEFS[key]["options"]
    assert not shows(default), f"the default timeline already shows what {key} = {option} documents"
    changed, _ = compile_path(sheet_with(tmp_path, key, option))
    assert shows(changed)
    assert changed.ceremony.variants[key] == option


def test_lishou_restart_moves_the_gong_pair_by_the_reposting(tmp_path, default):
    """公乐作: the 公's pair starts after the 三耦's 射节 cue, a gap, the calls cue of the re-posting
    and a gap; the 三耦 shoot as before."""
    changed, _ = compile_path(sheet_with(tmp_path, "lishou_span", "公乐作"))
    gap_s = changed.ceremony.gap_s
    calls = cue(changed, "round3_gong_quhou")
    def at(tl):                   # the 公's pair's first stroke, s of the ceremony
        return min(b.time for b in tl.beats if b.pair == "公耦")
    # before: the 公's pair's turn began as the 下耦's ended; now the 三耦's cue ends there
    assert at(changed) - at(default) == pytest.approx(2 * gap_s + calls.end - calls.start)
    assert calls.start == pytest.approx(cue(changed, "lishou").end + gap_s)
    assert first_beat(changed, "上耦") == first_beat(default, "上耦")


def test_lu_per_side_sounds_the_nearest_of_its_set(tmp_path, default):
    """Under 郑's reading a side's bells sound, for each note, the nearer of their two 律 in pitch
    class; they play as often as before, and the 歌 keeps the tune."""
    changed, _ = compile_path(sheet_with(tmp_path, "lu_per_side", "郑玄"))
    for name, pair in (("颂钟", ("夷", "无")), ("笙钟", ("太", "姑"))):
        before, after = notes(default, "lishou", name), notes(changed, "lishou", name)
        assert [n.time for n in after] == [n.time for n in before]
        lv = [parse_pitch(p).lv for p in pair]
        for b, a in zip(before, after):
            d = [min((x - parse_pitch(b.lv).lv) % 12, (parse_pitch(b.lv).lv - x) % 12) for x in lv]
            assert parse_pitch(a.lv).lv == lv[d.index(min(d))]
    assert [n.lv for n in notes(changed, "lishou", "歌")] == [n.lv for n in notes(default, "lishou", "歌")]
    assert [c.end for c in changed.cues] == [c.end for c in default.cues]


def test_defaults_match_the_data_files(default):
    """The default options restate the files: the 鼗's place, the 侯 of ceremony/courtyard.toml."""
    assert tuple(default.instruments["鼗"]["position_m"]) == tuple(default_pos("tao_place", "鼗"))
    assert "ao_luqin" not in [c.id for c in default.cues]
    court = courtyard.load()
    assert court.houdao.name == VDEFS["houdao"]["default"]
    for name, opt in VDEFS["houdao"]["options"].items():
        moved = courtyard.load(houdao=name)
        shift = moved.houdao.origin_y_m - court.houdao.origin_y_m
        assert shift == (4.0 if name == "敖继公" else 0.0)
        assert [t.position_m[1] - shift for t in moved.targets] == pytest.approx([t.position_m[1] for t in court.targets])
        assert [t.fa_m[1] - shift for t in moved.targets] == pytest.approx([t.fa_m[1] for t in court.targets])
    wu = next(p for p in court.landmarks if p.name == "物")
    assert courtyard.load(houdao="敖继公").houdao.origin_y_m == wu.position_m[1]


def test_every_option_quotes_a_source():
    for key, v in VDEFS.items():
        assert re.match(r"O\d+", v["question"]), key
        assert v["default"] in v["options"], key
        for name, opt in v["options"].items():
            assert opt.get("source", "").strip(), f"{key}.{name} has no source"


def test_listing_names_at_least_20_open_questions():
    out = subprocess.run([sys.executable, "-m", "yuexuan", "variants"], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    headers = [line for line in out.splitlines() if line and not line[0].isspace() and "  — " in line]
    numbers = set()
    for line in headers:
        question = line.split("  — ", 1)[1]
        found = re.findall(r"O(\d+)", question.split(":", 1)[0])
        assert found, f"header without an O-number: {line}"
        numbers |= {int(n) for n in found}
    assert len(headers) == len(VDEFS)
    assert len(numbers) >= 20, sorted(numbers)
    for key in ("sixia_manner", "sixia_end", "lu_per_side", "tao_place", "lishou_span", "sanou_rank",
                "houdao", "wusuan_piece", "ao_luqin"):
        assert f"{key}  — " in out and VDEFS[key]["effect"] in out


def test_houdao_moves_the_drawn_targets(tmp_path, default):
    """`yuexuan layout` draws the 侯 and 乏 where the timeline's O24 setting puts them."""
    changed, _ = compile_path(sheet_with(tmp_path, "houdao", "敖继公"))
    before, after = courtyard.for_timeline(default), courtyard.for_timeline(changed)
    assert (before.houdao.measured_from, after.houdao.measured_from) == ("堂", "物")
    assert [t.position_m[1] + 4.0 for t in before.targets] == pytest.approx([t.position_m[1] for t in after.targets])
    sheet = sheet_with(tmp_path, "houdao", "敖继公")
    svgs = []
    for cues in (SHEET, sheet):
        out = tmp_path / f"{cues.stem}.svg"
        subprocess.run([sys.executable, "-m", "yuexuan", "layout", str(cues), "-o", str(out)], check=True,
                       capture_output=True, cwd=ROOT)
        svgs.append(re.findall(r'data-target="[^"]+"[^>]*>.*?</g>', out.read_text(encoding="utf-8"), re.S))
    assert svgs[0] and svgs[0] != svgs[1]


@pytest.mark.parametrize("edit, key", [
    (lambda t: t.replace('cue = { piece = "四牡" }', 'cue = { pieces = "四牡" }'), "cue.pieces"),
    (lambda t: t.replace('facts = { "鼗" = { position_m = [-10.6', 'facts = { "鼗" = { place_m = [-10.6'), "place_m"),
    (lambda t: t.replace('default = "连奏"', 'default = "断奏"'), "lishou_span.default"),
])
def test_a_broken_variants_file_is_one_clear_error(tmp_path, edit, key):
    from yuexuan.errors import UserError
    text = (ROOT / "ceremony" / "variants.toml").read_text(encoding="utf-8")
    bad = tmp_path / "variants.toml"
    bad.write_text(edit(text), encoding="utf-8")
    assert bad.read_text(encoding="utf-8") != text, "the edit must change the file"
    with pytest.raises(UserError) as err:
        variants.load(bad)
    assert str(bad) in str(err.value) and key in str(err.value)

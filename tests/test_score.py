"""The score: MusicXML written by ``yuexuan score``, read back with music21's own parser.

Evidence: 鹿鸣's words and 律 as shared/scores.md gives them (风雅十二诗谱), the exact 三分损益
arithmetic for the cents marks, and the timeline's onsets for the rhythm.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from yuexuan import cli
from yuexuan.compiler import compile_file

ROOT = Path(__file__).resolve().parent.parent
CUES = ROOT / "cues" / "dashe.toml"

# shared/scores.md, 《鹿鸣》 (the 31st note of stanza 1 read as 太, as scores.md says)
LUMING_WORDS = ("呦呦鹿鸣食野之苹我有嘉宾鼓瑟吹笙吹笙鼓簧承筐是将人之好我示我周行"
                "呦呦鹿鸣食野之蒿我有嘉宾德音孔昭视民不恌君子是则是傚我有旨酒嘉宾式燕以敖"
                "呦呦鹿鸣食野之芩我有嘉宾鼓瑟鼓琴鼓瑟鼓琴和乐且湛我有旨酒以燕乐嘉宾之心")
LUMING_LV = ("黄南蕤姑南姑太黄蕤林应南林南黄林蕤林南姑应黄姑南林南黄姑林南太黄"
             "黄姑蕤姑林南太黄林南应黄南蕤姑林姑南黄姑应黄姑蕤姑南林南黄姑林南应南太黄"
             "黄姑太黄太黄蕤姑蕤南应南林南黄林蕤林南姑应黄姑南林南黄姑林南黄应南太黄")
LUMING_GONGCHE = ("六工勾一工一四合勾尺凡工尺工六尺勾尺工一凡六一工尺工合一尺工五六"
                  "合一勾一尺工五六尺工凡六工勾一尺一工六一凡六一勾一工尺工合一尺工凡工五六"
                  "合一四合四合勾一勾工凡工尺工六尺勾尺工一凡六一工尺工合一尺工六凡工五六")
# 工尺 → semitones above 合 (熊朋来: 合 黄, 四 太, 一 姑, 勾 蕤, 尺 林, 工 南, 凡 应, 六 黄清, 五 太清)
GONGCHE_STEP = {"合": 0, "四": 2, "一": 4, "勾": 6, "尺": 7, "工": 9, "凡": 11, "六": 12, "五": 14}


@pytest.fixture(scope="module")
def timeline():
    return compile_file(CUES)


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    from music21 import converter

    out = tmp_path_factory.mktemp("score") / "dashe.musicxml"
    assert cli.main(["score", str(CUES), "-o", str(out), "--cues", "luming,lishou"]) == 0
    return converter.parse(str(out))


def _part(score, word: str):
    parts = [p for p in score.parts if word in (p.partName or "")]
    assert len(parts) == 1, [p.partName for p in score.parts]
    return parts[0]


def _sounding(part):
    """Notes and chords of a part in time order, with their absolute offsets (quarters)."""
    flat = part.flatten()
    return [(float(n.getOffsetInHierarchy(flat)), n) for n in flat.notes]


def _lyric(n, number: int) -> str:
    for ly in n.lyrics:
        if ly.number == number:
            return ly.text or ""
    return ""


def test_one_part_per_instrument_group(parsed):
    names = [p.partName for p in parsed.parts]
    for word in ("歌", "瑟", "钟", "磬", "鼓"):
        assert sum(word in n for n in names) == 1, names
    lengths = {len(p.getElementsByClass("Measure")) for p in parsed.parts}
    assert len(lengths) == 1          # every part runs the whole score


def test_luming_words_and_pitches(parsed, timeline):
    sung = [n for n in timeline.notes if n.cue == "luming" and n.instrument == "歌"]
    ge = [(o, n) for o, n in _sounding(_part(parsed, "歌"))]
    luming = ge[:len(sung)]
    words = "".join(_lyric(n, 1) for _, n in luming)
    assert words.startswith(LUMING_WORDS)                  # the three stanzas, as sung first
    assert words == "".join(n.lyric for n in sung)
    # pitches read back = the timeline's MIDI keys, in order
    assert [n.pitches[0].midi for _, n in luming] == [n.midi for n in sung]
    # the 律 written under the notes follow the 诗谱 (pitch class), and the octaves follow the 工尺
    lv = [_lyric(n, 2).rstrip("清浊") for _, n in luming[:len(LUMING_LV)]]
    assert "".join(lv) == LUMING_LV
    midi = [n.pitches[0].midi for _, n in luming[:len(LUMING_GONGCHE)]]
    base = midi[LUMING_GONGCHE.index("合")]
    assert [m - base for m in midi] == [GONGCHE_STEP[g] for g in LUMING_GONGCHE]


def test_cents_marks_are_the_sanfen_sunyi_deviation(parsed, timeline):
    hz = timeline.ceremony.huangzhong_hz
    first = _sounding(_part(parsed, "歌"))[0][1]
    exact = 69 + 12 * math.log2(hz / 440.0)               # 黄 at the ceremony's 黄钟
    expect = (exact - round(exact)) * 100
    txt = _lyric(first, 3).replace("−", "-").replace("±", "")
    assert _lyric(first, 2) == "黄"
    assert int(txt) == round(expect)
    assert first.pitches[0].midi == round(exact)
    # every pitched note of the 歌 carries a cents mark
    assert all(_lyric(n, 3) for _, n in _sounding(_part(parsed, "歌")))


def test_rhythm_follows_the_timeline(parsed, timeline):
    from music21 import tempo

    sung = [n for n in timeline.notes if n.cue == "luming" and n.instrument == "歌"]
    marks = list(_part(parsed, "歌").flatten().getElementsByClass(tempo.MetronomeMark))
    assert marks, "no tempo mark"
    quarter_s = 60.0 / marks[0].number
    t0 = timeline.cue("luming").start
    for (o, _), n in zip(_sounding(_part(parsed, "歌")), sung):
        assert o * quarter_s == pytest.approx(n.time - t0, abs=quarter_s / 8 + 1e-6)


def test_lishou_drum_strokes(parsed, timeline):
    lishou = timeline.cue("lishou")
    onsets = {round(n.time, 2) for n in timeline.notes
              if n.cue == "lishou" and timeline.instruments[n.instrument]["kind"] == "建鼓"}
    drums = [n for _, n in _sounding(_part(parsed, "鼓")) if "建鼓" in _lyric(n, 1)]
    assert len(drums) == len(onsets) > 0
    assert lishou.reconstruction


def test_pdf_through_lilypond(tmp_path):
    # 无算乐's 鹿鸣, sung once (the luming cue sings it three times: 3x the engraving, 20 s)
    out = tmp_path / "wusuan.musicxml"
    assert cli.main(["score", str(CUES), "-o", str(out), "--cues", "wusuan", "--pdf"]) == 0
    pdf = out.with_suffix(".pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"/Type /Page" in data.replace(b"/Type/Page", b"/Type /Page")


def test_unknown_cue_is_a_user_error(tmp_path, capsys):
    assert cli.main(["score", str(CUES), "-o", str(tmp_path / "x.musicxml"), "--cues", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown cue 'nosuch'; the cues are: sixia_bin, " in err
    assert not (tmp_path / "x.musicxml").exists()


def test_cues_of_a_saved_timeline(tmp_path, timeline, capsys):
    """--cues selects from a saved timeline too (it is not compiled again); an unknown id is one line."""
    from music21 import converter, expressions

    from yuexuan.timeline import save_json

    saved, out = tmp_path / "t.json", tmp_path / "wusuan.musicxml"
    save_json(timeline, saved)
    assert cli.main(["score", str(saved), "-o", str(out), "--cues", "wusuan"]) == 0
    flat = converter.parse(str(out)).parts[0].flatten()
    assert [r.content for r in flat.getElementsByClass(expressions.RehearsalMark)] == ["鹿鸣 · 歌 · 重构 reconstruction"]
    sung = [n for n in timeline.notes if n.cue == "wusuan" and n.instrument == "歌"]
    assert "".join(_lyric(n, 1) for _, n in _sounding(_part(converter.parse(str(out)), "歌"))) == \
        "".join(n.lyric for n in sung)
    assert cli.main(["score", str(saved), "-o", str(out), "--cues", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown cue 'nosuch'" in err

"""The 乡射礼's 合乐 — 关雎, 葛覃, 卷耳, 鹊巢, 采蘩, 采蘋 — note by note (syllable, 律, octave) against
../shared/scores.md, under both readings of the setting shipu_reading (O50).

The expected notes are parsed from scores.md (tests/shipu_support.py), never from pieces/*.toml:
熊朋来's lines (A), read as the "Summary of doubts" says (大 read 太, a slip of the 工尺 read as the
note after the stanza gives it); 朱熹's print from its copies' lines (B, C) by the rule the setting
states: where the copies that cover a note agree, their note; where they disagree, A's (one of
them has it); a note no copy covers (·, 如) is A's.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from shipu_support import HELE, LV, UPPER, a_lines, gongche_read_as, read_as_tai, scores_text, witnesses

from yuexuan.compiler import compile_path
from yuexuan.rite import pieces as pieces_mod
from yuexuan.rite import variants

Note = tuple[str, str, int]          # (syllable, 律, octave: 1 for 六 and 五, 清)


@pytest.fixture(scope="module")
def scores(root):
    return scores_text(root)


@pytest.fixture(scope="module")
def pieces():
    return pieces_mod.load_all()


def expected_xiong(scores: str, title: str) -> list[list[Note]]:
    """熊朋来's notes of ``title``, stanza by stanza, with the readings of scores.md's doubts."""
    tai, gongche = read_as_tai(scores), gongche_read_as(scores)
    out = []
    for j, (words, lvs, gcs) in enumerate(a_lines(scores, title), start=1):
        gcs = gongche.get((title, j), gcs)
        out.append([(w, "太" if (title, j, i) in tai else lv, 1 if g in UPPER else 0)
                    for i, (w, lv, g) in enumerate(zip(words, lvs, gcs), start=1)])
    return out


def expected_zhuxi(scores: str, title: str) -> list[list[Note]]:
    """朱熹's print as its copies give it (the module's rule), over 熊's notes."""
    copies = witnesses(scores)
    out = []
    for j, stanza in enumerate(expected_xiong(scores, title), start=1):
        lines = list(copies.get((title, j), {}).values())
        assert all(len(line) == len(stanza) for line in lines), (title, j)
        row = []
        for i, (w, lv, octave) in enumerate(stanza):
            seen = {line[i] for line in lines if line[i] is not None}
            if len(seen) == 1:
                (octave, lv), = seen
            row.append((w, lv, octave))
        out.append(row)
    return out


def as_notes(piece: pieces_mod.Piece) -> list[list[Note]]:
    return [[(w or "", LV[p.lv], p.octave) for p, w in st] for st in piece.stanzas]


def _differences(got: list[list[Note]], want: list[list[Note]]) -> list[str]:
    assert [len(s) for s in got] == [len(s) for s in want], "stanza lengths"
    return [f"stanza {j} #{i}: {g} where scores.md has {w}"
            for j, (gs, ws) in enumerate(zip(got, want), start=1)
            for i, (g, w) in enumerate(zip(gs, ws), start=1) if g != w]


@pytest.mark.parametrize("title", HELE)
def test_each_note_is_xiong_pengs_as_the_doubts_read_it(scores, pieces, title):
    """The default reading: every syllable, 律 and octave is 熊朋来's, his slips read as scores.md says."""
    want = expected_xiong(scores, title)
    piece = pieces[title]
    wrong = _differences(as_notes(piece), want)
    assert not wrong, "\n".join(wrong)
    assert as_notes(piece.read(variants.load()["shipu_reading"]["default"])) == want
    # the doubts of A are each in force: no 大 left, every note in 无射清商 (无 黄 太 姑 仲 林 南)
    assert {lv for st in as_notes(piece) for _, lv, _ in st} <= set("黄太姑仲林南无")


@pytest.mark.parametrize("title", HELE)
def test_each_note_of_zhu_xis_print_is_its_copies(scores, pieces, title):
    """shipu_reading = 朱熹: the notes where the copies of the print differ from 熊, and only those."""
    want, xiong = expected_zhuxi(scores, title), expected_xiong(scores, title)
    wrong = _differences(as_notes(pieces[title].read("朱熹")), want)
    assert not wrong, "\n".join(wrong)
    # every row says why, and changes a note (a row repeating 熊's note would be a mistake)
    for r in pieces[title].readings:
        assert r.by == "朱熹" and r.note.strip()
        assert xiong[r.stanza - 1][r.syllable - 1] != want[r.stanza - 1][r.syllable - 1], r


def test_the_readings_differ_where_scores_md_lists_the_doubts(scores, pieces):
    """Counts: every note of the six odes is checked, and the 朱熹 reading differs at the two 律
    variants and five octaves of the "Summary of doubts" (items 3 and 4)."""
    checked = sum(len(st) for t in HELE for st in as_notes(pieces[t]))
    assert checked == sum(len(w) for t in HELE for w, _, _ in a_lines(scores, t)) == 366
    differ = {(t, j, i, w[1] != x[1]) for t in HELE
              for j, (xs, ws) in enumerate(zip(expected_xiong(scores, t), expected_zhuxi(scores, t)), start=1)
              for i, (x, w) in enumerate(zip(xs, ws), start=1) if x != w}
    summary = scores[scores.index("## Summary of doubts"):]
    item3 = summary[summary.index("\n3. "):summary.index("\n4. ")]
    lv_variants = {(t, int(s), int(n)) for t, s, n in re.findall(r"(\S\S) (\d) #(\d+)", item3)}
    assert {(t, j, i) for t, j, i, is_lv in differ if is_lv} == lv_variants
    assert sum(not is_lv for *_, is_lv in differ) == 5


def test_zhu_xis_reading_is_sung_in_the_timeline(tmp_path, default_cues, scores):
    """A 士's rite under shipu_reading = 朱熹: the 歌 sings 采蘩 in the 射节 on the print's notes,
    each at its exact 三分损益 ratio (scores.md's list of ratios), an octave below 黄钟 (歌.toml)."""
    text = default_cues.read_text(encoding="utf-8")
    for line, to in ((r'^rank = "[^"]*"', 'rank = "士"'),
                     (r'^shipu_reading = "[^"]*"', 'shipu_reading = "朱熹"')):
        assert re.search(line, text, re.M), line
        text = re.sub(line, to, text, count=1, flags=re.M)
    sheet = tmp_path / "shi.toml"
    sheet.write_text(text, encoding="utf-8")
    tl, _ = compile_path(sheet)
    assert tl.ceremony.variants["shipu_reading"] == "朱熹"
    cue = next(c for c in tl.cues if c.kind == "shejie")
    assert cue.piece == "采蘩"
    lines = scores.splitlines()
    k = next(i for i, ln in enumerate(lines) if "ratios:" in ln and "黄 1" in ln)
    ratio = {lv: Fraction(v) for lv, v in re.findall(r"([黄大太夹姑仲蕤林夷南无应]) (\d+(?:/\d+)?)",
                                                       " ".join(lines[k:k + 3]))}
    want = [n for st in expected_zhuxi(scores, "采蘩") for n in st]
    sung = sorted((n for n in tl.notes if n.cue == cue.id and n.instrument == "歌"), key=lambda n: n.time)
    assert len(sung) >= len(want)
    for k, n in enumerate(sung):
        word, lv, octave = want[k % len(want)]
        assert n.lyric == word, (k, n.lyric, word)
        exact = float(ratio[lv] * 2 ** (octave - 1))
        assert n.hz / tl.ceremony.huangzhong_hz == pytest.approx(exact, rel=1e-9), (k, word, lv, octave)

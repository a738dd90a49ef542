"""Melodies from later sources (the Song 风雅十二诗谱, 熊朋来's Yuan 瑟谱) are marked as such: in the
pieces, in each cue of the timeline (``later_source``), in the captions and in the guide's cue list.

Which cue sounds which piece is judged from the timeline's sung syllables (the notes' lyrics), not
from the compiler's own bookkeeping.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from yuexuan import cli
from yuexuan.compiler import compile_file
from yuexuan.formats import captions as sidecars
from yuexuan.rite import pieces as pieces_mod
from yuexuan.timeline import from_dict, to_dict

REPO = Path(__file__).resolve().parent.parent
CUES = REPO / "cues" / "dashe.toml"


@pytest.fixture(scope="module")
def pieces():
    return pieces_mod.load_all()


def _sung(tl, cue_id: str) -> str:
    """The syllables sung in a cue, in time order (one voice: duplicates at one time dropped)."""
    seen, out = set(), []
    for n in tl.notes:
        if n.cue == cue_id and n.lyric and (n.time, n.lyric) not in seen:
            seen.add((n.time, n.lyric))
            out.append(n.lyric)
    return "".join(out)


def _pieces_heard(tl, cue_id: str, pieces: dict) -> set:
    """Titles of the pieces with words whose first stanza's opening phrase is sung in the cue."""
    sung = _sung(tl, cue_id)
    heard = set()
    for title, p in pieces.items():
        words = "".join(w for _, w in p.stanzas[0] if w)
        if words and words[:8] in sung:
            heard.add(title)
    return heard


def test_the_pieces_name_their_later_sources(pieces):
    song = {"鹿鸣", "四牡", "皇皇者华", "采蘋", "采蘩"}
    for title in song:
        assert "风雅十二诗谱" in pieces[title].later_source and "宋" in pieces[title].later_source
        assert not pieces[title].reconstruction
    assert "熊朋来" in pieces["驺虞"].later_source and "元" in pieces["驺虞"].later_source
    for title, p in pieces.items():           # a reconstruction is ours, not a later source
        if p.reconstruction:
            assert p.later_source == "", title
    # every tune that is neither a reconstruction nor from a later source would pass as Zhou: none
    assert all(p.reconstruction or p.later_source for p in pieces.values())


def test_the_default_timeline_marks_luming_with_the_song_source(default_timeline, pieces):
    tl = default_timeline
    luming = [c for c in tl.cues if "鹿鸣" in _pieces_heard(tl, c.id, pieces)]
    assert {c.id for c in luming} >= {"luming"}
    for c in luming:
        assert c.later_source == pieces["鹿鸣"].later_source
    for c in tl.cues:
        heard = _pieces_heard(tl, c.id, pieces)
        expected = {pieces[t].later_source for t in heard} - {""}
        if not expected:
            assert c.later_source == "", c.id          # 肆夏, 新宫, 貍首, calls: nothing later
        else:
            assert set(c.later_source.split("; ")) == expected, c.id


def test_at_tianzi_a_cue_singing_zouyu_names_xiong_penglai(tmp_path, pieces):
    sheet = tmp_path / "tianzi.toml"
    text = CUES.read_text(encoding="utf-8")
    sheet.write_text(re.sub(r'(?m)^rank = "[^"]*"', 'rank = "天子"', text, count=1), encoding="utf-8")
    tl = compile_file(sheet)
    assert tl.ceremony.rank == "天子"
    zouyu = [c for c in tl.cues if "驺虞" in _pieces_heard(tl, c.id, pieces)]
    if not zouyu:
        pytest.skip("no cue of the 天子 sheet sings 驺虞 yet (the rank does not yet choose the 射节 piece)")
    for c in zouyu:
        assert pieces["驺虞"].later_source in c.later_source.split("; ")


def test_later_source_survives_the_json_and_defaults_to_empty(default_timeline):
    d = to_dict(default_timeline)
    by_id = {c["id"]: c for c in d["cues"]}
    assert "风雅十二诗谱" in by_id["luming"]["later_source"]
    again = from_dict(json.loads(json.dumps(d)))
    assert [c.later_source for c in again.cues] == [c.later_source for c in default_timeline.cues]
    for c in d["cues"]:            # an older timeline without the field still loads, as ""
        del c["later_source"]
    assert all(c.later_source == "" for c in from_dict(d).cues)


def _vtt_blocks(text: str) -> dict:
    """{cue id: caption lines} of a WebVTT text (blocks: 'N id', timing, lines…)."""
    out = {}
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        if len(lines) >= 3 and "-->" in lines[1]:
            out[lines[0].split(" ", 1)[1]] = lines[2:]
    return out


class _CueButtons(HTMLParser):
    """The text of each cue button of the guide's cue list, by its data-cue."""

    def __init__(self):
        super().__init__()
        self.text, self._cue = {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "button" and "cue" in (a.get("class") or "").split():
            self._cue = a["data-cue"]
            self.text[self._cue] = ""

    def handle_endtag(self, tag):
        if tag == "button":
            self._cue = None

    def handle_data(self, data):
        if self._cue:
            self.text[self._cue] += data


def test_captions_and_guide_cue_list_show_the_later_source(tmp_path, default_timeline):
    out = tmp_path / "site"
    assert cli.main(["guide", str(CUES), "-o", str(out), "--no-audio"]) == 0
    song = default_timeline.cue("luming").later_source
    blocks = _vtt_blocks((out / "captions.vtt").read_text(encoding="utf-8"))
    assert any(song in line and "not a Zhou tune" in line for line in blocks["luming"])
    assert not any("not a Zhou tune" in line for line in blocks["xingong"])
    buttons = _CueButtons()
    buttons.feed((out / "index.html").read_text(encoding="utf-8"))
    assert "后世谱" in buttons.text["luming"] and song in buttons.text["luming"]
    assert "后世谱" not in buttons.text["lishou"] and "后世谱" not in buttons.text["xingong"]
    # the page's embedded timeline (what app.js reads) carries the field too
    page = (out / "index.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="timeline-data">(.*?)</script>', page, re.S).group(1))
    assert {c["id"]: c["later_source"] for c in data["cues"]}["luming"] == song


def test_the_cue_sheet_of_a_render_names_the_melody_source(default_timeline):
    rows = [(c.start, c.end, c) for c in default_timeline.cues]
    cue = sidecars.cue_text(rows, "dashe.flac", "大射仪")
    tracks = cue.split("  TRACK ")[1:]
    luming = next(t for t in tracks if 'REM CUE "luming"' in t)
    assert "REM MELODY" in luming and "风雅十二诗谱" in luming
    assert not any("REM MELODY" in t for t in tracks if 'REM CUE "xingong"' in t)

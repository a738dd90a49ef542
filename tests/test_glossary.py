"""docs/glossary.md: the rite's words in characters, pinyin and English (issue 35).

Evidence: the Markdown file as a reader sees it (its table rows, parsed here), the words the
package itself uses (its vocabulary, instrument kinds, the pieces the default ceremony sounds) and
the twelve 律's Western names worked out here from the 三分损益 ratios, not by the package.
"""

from __future__ import annotations

import math
import re
import unicodedata
from fractions import Fraction
from pathlib import Path

from yuexuan.publish import glossary as glossary_page
from yuexuan.rite import glossary, instruments, vocabulary

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "docs" / "glossary.md"
CJK = re.compile(r"[\u3400-\u9fff]")
#: the words issue 35 names, each of which the glossary must explain
NAMED = ["律", "黄钟", "耦", "侯", "乏", "节", "射节", "释获", "算", "纯", "奇", "县", "宫县", "轩县", "判县",
         "特县", "天子", "诸侯", "卿大夫", "士", "笙磬", "笙钟", "颂磬", "颂钟", "鑮", "建鼓", "应鼙", "朔鼙", "鼗",
         "瑟", "簜", "歌", "司射", "乐正", "大师", "获者", "负侯者", "释获者", "大射正"]


def _rows(text: str) -> list[list[str]]:
    """The cells of every table row of a Markdown text but the header and rule rows."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|") and not re.match(r"\|[-| ]+\|$", line.strip())]
    return [r for r in rows if r[1:2] != ["pinyin"]]


def _words(rows: list[list[str]]) -> set[str]:
    """Each word of the characters column (``天子 · 诸侯``, ``鑮 (镈)`` and ``县 (悬)`` give each)."""
    return {w for r in rows for part in r[0].split("·") for w in re.split(r"[\s()（）/]+", part) if w}


def test_the_markdown_is_written_from_the_data():
    """docs/glossary.md is what ``python -m yuexuan.publish.glossary`` writes from
    ceremony/glossary.toml (edit the TOML, then run it)."""
    assert GLOSSARY.read_text(encoding="utf-8") == glossary_page.markdown(glossary.load())


def test_at_least_thirty_terms_each_in_characters_pinyin_and_english():
    rows = [r for r in _rows(GLOSSARY.read_text(encoding="utf-8")) if len(r) == 4]
    assert len(rows) >= 30, len(rows)
    for zh, pinyin, en, where in rows:
        assert CJK.search(zh), zh
        plain = unicodedata.normalize("NFD", pinyin)
        assert not CJK.search(pinyin) and re.search(r"[a-zA-Z]", plain), pinyin
        assert re.search("[\u0300\u0301\u030c\u0304\u0308]", plain), f"{zh}: no tone mark in {pinyin!r}"
        assert len(re.findall(r"[A-Za-z]{3,}", en)) >= 2, f"{zh}: {en!r} is not an English gloss"
        assert where, zh


def test_the_words_users_meet_are_all_there(ceremony):
    words = _words(_rows(GLOSSARY.read_text(encoding="utf-8")))
    rite = ceremony.rite            # the 诸侯's ranks and 侯, as the default timeline has them
    used = set(NAMED) | {"天子", "诸侯", "卿大夫", "士"} | set(rite.ranks) | set(vocabulary.ROLES) | \
        set(rite.hou_names) | set(vocabulary.RESULTS) | set(instruments.KINDS) - {"呼"}
    used |= {c.piece for c in ceremony.cues if c.kind == "music" or c.kind == "shejie"}
    missing = sorted(w for w in used if w not in words)
    assert not missing, f"not in docs/glossary.md: {missing}"


def test_the_twelve_lv_and_their_western_names():
    """Each 律 at 黄钟 = 345 Hz with the nearest equal-tempered note (A4 = 440 Hz) and its cents."""
    ratios = {}
    r, step = Fraction(1), 0
    for i in range(12):                       # 三分损益: ×3/2 and ×3/4 in turn, folded into [1, 2)
        ratios[step % 12] = r
        r *= Fraction(3, 2) if i % 2 == 0 else Fraction(3, 4)
        r = r * 2 if r < 1 else r / 2 if r >= 2 else r
        step += 7
    names = "C C# D D# E F F# G G# A A# B".split()
    text = GLOSSARY.read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if re.match(r"\| [黄大太夹姑仲蕤林夷南无应] ", line)]
    assert len(table) == 12
    for k, line in enumerate(table):
        hz = 345.0 * float(ratios[k])
        midi = 69 + 12 * math.log2(hz / 440)
        key = round(midi)
        cents = (midi - key) * 100
        assert f"| {hz:.1f} |" in line and str(ratios[k]) in line, line
        assert f"{names[key % 12]}{key // 12 - 1} {'+' if cents > 0 else '−'}{abs(cents):.1f} cents" in line, line
    assert "| 黄 黄钟 |" in table[0] and "F4 −21.1 cents" in table[0]


def test_linked_from_the_readme_and_help(cli):
    assert "docs/glossary.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    r = cli("--help")
    assert "docs/glossary.md" in " ".join(r.stdout.split())

"""Every quote tagged with a seed text or a source text is verbatim from it.

The seeds are ``../shared/seeds/000_*.txt`` … ``004_*.txt`` beside the repository (CI has them beside
the checkout); without them the test fails and says where it looked. The texts beyond them are
``../shared/sources/`` (the 四库 《周礼注疏》 射人 and 司裘, 《仪礼注疏》 卷五 乡射礼 and the 单疏本's
卷十一–十三), tagged ``[射人]``, ``[司裘]``, ``[乡射]`` and ``[乡射疏]`` (:data:`SOURCES`): traditional
characters, unpunctuated, with page marks ``<pb:…>`` and two-column notes ``(col1/col2)``; they are
read without the marks and the note brackets, in simplified characters (opencc's t2s table) with
the variant forms of :data:`SOURCE_VARIANTS` read as one.

Where quotes are looked for: the packaged data (``instruments/``, ``pieces/``, ``ceremony/``, ``cues/``:
every ``*.toml``, comments included), the docs (``docs/*.md``, ``README.md``) and every other cue
sheet of the repository (``tests/data/*.toml``, ``bench/*.toml``).

Which seed a quote claims (the rule):

* A text is cut into *citations*: at ``;``, ``；`` and a sentence's ``. `` (a full stop and a space)
  outside quotes, and at line ends (in Markdown
  at paragraph ends instead: blank lines, headings, list items and table rows, whose ``|`` cells
  are citations of their own; a wrapped line goes on the same citation).
* A quote 「…」 in a citation takes one of that citation's markers, the tags ``[000]``…``[004]`` and
  the words ``OUTSIDE`` and ``INFERENCE`` (which claim no seed):
  (a) the tag right after it, with only spaces, punctuation and other quotes between
  (``「…」 [001]``, ``「…」, [004]``; ``「A」，「B」 [001]`` tags both); else
  (b) the last tag before it (``郑 [000] 「…」``, ``盛 [004]: 「…」: prose (「B」 [001])`` gives
  the first quote [004], 「B」 [001]); else
  (c) the first tag after it (``「A」 and 「B」 [001]``).
  A quote whose marker is OUTSIDE or INFERENCE, or whose citation has no marker, names no seed and
  is not checked (``礼记·射义 「…」 (OUTSIDE)``, untagged sayings).
* A quote that is only ``…`` (a placeholder) is skipped.

How a quote is found: quote and seed are compared without punctuation (Chinese and ASCII), spaces
and the seeds' footnote markers such as （53）, with the :data:`VARIANTS` characters read as one;
a quote cut by ``…`` (or ``...``) is found when its pieces occur in the seed in that order, each
beginning at most :data:`MAX_GAP` characters after the previous one ends.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO.parent / "shared" / "seeds"
SOURCES_DIR = REPO.parent / "shared" / "sources"
#: a source tag → its files in ../shared/sources/ (shared/sources/INDEX.md)
SOURCES = {"射人": ("sheren.txt",), "司裘": ("qiu.txt",), "乡射": ("xiangshe_juan05.txt",),
           "乡射疏": ("xiangshe_shu_juan11.txt", "xiangshe_shu_juan12.txt", "xiangshe_shu_juan13.txt")}
TAGS = ("000", "001", "002", "003", "004", *SOURCES)
#: variant forms of the sources, read as one with the data's (after t2s): 矦/侯, 閒 and its t2s 闲/间,
#: 蘩/繁 (the WYG 采繁), 賔/宾, 郷/乡, 筭/算, 𤣥/玄 (a taboo form), 於/于, 糜/麋, 竒/奇, 鼔/鼓
SOURCE_VARIANTS = {"矦": "侯", "閒": "间", "闲": "间", "蘩": "繁", "賔": "宾", "郷": "乡", "筭": "算",
                   "𤣥": "玄", "於": "于", "糜": "麋", "竒": "奇", "鼔": "鼓"}

#: Characters written two ways, read as one (left → right). Each pair is a variant form the seeds
#: and the data both use for one word: 貍/狸 (貍首, 貍步: the data's 貍, the translations' 狸);
#: 锺/钟 (the old form of 钟 in 锺磬); 鑮/镈 (the data's instrument 鑮, the 经's 镈); 逺/远, 歩/步,
#: 畧/略, 羣/群 (the 五礼通考 text's old forms, quoted in modern ones).
VARIANTS = {"狸": "貍", "锺": "钟", "镈": "鑮", "逺": "远", "歩": "步", "畧": "略", "羣": "群"}
#: Most characters of seed text (after normalising) between two pieces of a quote cut by ….
MAX_GAP = 400

_FOOTNOTE = re.compile(r"[（(]\d{1,3}[）)]")
_QUOTE = re.compile(r"「([^「」]*)」")
_TAG = re.compile(r"\[(00[0-4]|射人|司裘|乡射疏|乡射)\]|\b(OUTSIDE|INFERENCE)\b")
_CUT = re.compile(r"…+|\.{3,}")
_TABLE = str.maketrans(VARIANTS)


def normalise(text: str) -> str:
    """Text without footnote markers, punctuation (Unicode P*, S*) and spaces, variants unified."""
    text = _FOOTNOTE.sub("", text)
    return "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PSZC").translate(_TABLE)


def _split_outside_quotes(text: str, seps: str) -> list:
    """``text`` cut at the characters of ``seps`` outside 「…」; a "." in ``seps`` cuts only where a
    space or the end follows it (a sentence's end)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "「":
            depth += 1
        elif ch == "」":
            depth = max(0, depth - 1)
        elif ch in seps and depth == 0 and (ch != "." or text[i + 1:i + 2] in ("", " ", "\t")):
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def _markdown_units(text: str) -> list:
    """Paragraphs (wrapped lines joined), headings, list items, table cells and code lines of a
    Markdown text."""
    units, para, code = [], [], False

    def close():
        if para:
            units.append(" ".join(para))
        para.clear()

    for line in text.splitlines():
        s = line.strip()
        if s.startswith("```"):
            close()
            code = not code
        elif code or s.startswith("#"):
            close()
            units.append(s)
        elif s.startswith("|"):
            close()
            units.extend(_split_outside_quotes(s, "|"))
        elif not s:
            close()
        elif re.match(r"([-*+]|\d+\.)\s", s):
            close()
            para.append(s)
        else:
            para.append(s)
    close()
    return units


def citations(text: str, markdown: bool) -> list:
    """The citations of a text (see the module docstring)."""
    units = _markdown_units(text) if markdown else text.splitlines()
    return [c for u in units for c in _split_outside_quotes(u, ";；.")]


def tagged_quotes(citation: str) -> list:
    """(quote, tag) for each quote of ``citation`` that claims a seed."""
    tags = [(m.start(), m.group(1) or m.group(2)) for m in _TAG.finditer(citation)]
    out = []
    for m in _QUOTE.finditer(citation):
        after = [(pos, t) for pos, t in tags if pos >= m.end()]
        before = [t for pos, t in tags if pos < m.start()]
        right_after = after and not normalise(_QUOTE.sub("", citation[m.end():after[0][0]]))
        tag = after[0][1] if right_after else before[-1] if before else after[0][1] if after else None
        if tag in TAGS:
            out.append((m.group(1), tag))
    return out


def scanned_files() -> list:
    files = []
    for folder in ("instruments", "pieces", "ceremony", "cues", "tests/data", "bench"):
        files += sorted((REPO / folder).glob("*.toml"))
    files += sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
    return files


_PAGE = re.compile(r"<pb:[^>]*>")
_SOURCE_TABLE = str.maketrans(SOURCE_VARIANTS)


@lru_cache(maxsize=1)
def _t2s():
    """opencc's traditional → simplified converter (opencc-python-reimplemented, Apache-2.0)."""
    from opencc import OpenCC
    return OpenCC("t2s")


def source_normalise(text: str) -> str:
    """A source's text (or a quote of it) as the quotes are compared: without ``#`` header lines,
    page marks and the note brackets ``( / )``, in simplified characters, its variants unified."""
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    text = _PAGE.sub("", text).replace("(", "").replace(")", "").replace("/", "")
    return normalise(_t2s().convert(text.translate(_SOURCE_TABLE))).translate(_SOURCE_TABLE)


def _for_source(quote: str) -> str:
    """A quote of a source, each piece between its cuts (…) read as the source is."""
    return "…".join(source_normalise(piece) for piece in _CUT.split(quote))


@lru_cache(maxsize=None)
def seed_text(tag: str) -> str:
    if tag in SOURCES:
        paths = [SOURCES_DIR / name for name in SOURCES[tag]]
        missing = [p for p in paths if not p.is_file()]
        if missing:
            pytest.fail(f"source text [{tag}] not found: expected {missing[0]} (the sources live in "
                        f"../shared/sources/ beside the repository)")
        return source_normalise("\n".join(p.read_text(encoding="utf-8") for p in paths))
    found = sorted(SEEDS.glob(f"{tag}_*.txt"))
    if not found:
        pytest.fail(f"seed text [{tag}] not found: expected {SEEDS}/{tag}_*.txt (the seeds live in "
                    f"../shared/seeds/ beside the repository)")
    return normalise(found[0].read_text(encoding="utf-8"))


def found_in(quote: str, seed: str) -> bool:
    """Whether the pieces of ``quote`` (cut by …) occur in ``seed`` in order, within MAX_GAP."""
    pieces = [normalise(p) for p in _CUT.split(quote)]
    pieces = [p for p in pieces if p]

    def rest(k: int, after: int, limit: int | None) -> bool:
        if k == len(pieces):
            return True
        i = seed.find(pieces[k], after)
        while i >= 0 and (limit is None or i <= limit):
            if rest(k + 1, i + len(pieces[k]), i + len(pieces[k]) + MAX_GAP):
                return True
            i = seed.find(pieces[k], i + 1)
        return False

    return rest(0, 0, None)


def all_quotes() -> list:
    """(file relative to the repo, line, quote, tag) for every seed-tagged quote."""
    out = []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8")
        for cit in citations(text, path.suffix == ".md"):
            for quote, tag in tagged_quotes(cit):
                if not normalise(_CUT.sub("", quote)):
                    continue
                line = text[:text.find(quote)].count("\n") + 1 if quote in text else 0
                out.append((str(path.relative_to(REPO)), line, quote, tag))
    return out


def test_the_seeds_are_beside_the_repository():
    assert SEEDS.is_dir(), (f"the seed texts are not at {SEEDS} (../shared/seeds/ from the repository): "
                            "the quote test needs them")
    for tag in TAGS:
        assert seed_text(tag), f"seed [{tag}] is empty"


def test_every_tagged_quote_is_verbatim_from_its_seed():
    if not SEEDS.is_dir():
        pytest.fail(f"the seed texts are not at {SEEDS} (../shared/seeds/ from the repository)")
    quotes = all_quotes()
    assert len(quotes) > 100          # the data quote its sources: the scan must see them
    assert {tag for *_, tag in quotes} >= {"射人", "司裘"}      # the sources beyond the seeds too
    missing = [f"{f}:{line}: 「{q}」 not in [{tag}]" for f, line, q, tag in quotes
               if not found_in(_for_source(q) if tag in SOURCES else q, seed_text(tag))]
    assert not missing, "quotes not found verbatim in the seed they cite:\n" + "\n".join(missing)


def test_every_quote_closes_in_its_line_or_paragraph():
    """A quote left open at a line end (TOML) or paragraph end (Markdown), or one 「 inside another,
    would escape the scan above."""
    bad = []
    for path in scanned_files():
        text = path.read_text(encoding="utf-8")
        for unit in (_markdown_units(text) if path.suffix == ".md" else text.splitlines()):
            if unit.count("「") != unit.count("」") or re.search("「[^」]*「", unit):
                bad.append(f"{path.relative_to(REPO)}: {unit[:80]}")
    assert not bad, "quotes not closed where they open (keep each 「…」 on one line):\n" + "\n".join(bad)


# --- the rule itself, on known cases -------------------------------------------------------------

def test_the_tag_after_a_quote_else_the_one_before_within_a_citation():
    assert tagged_quotes("「甲」 [001]") == [("甲", "001")]
    assert tagged_quotes("郑 [000]「甲」") == [("甲", "000")]
    assert tagged_quotes("「甲」，「乙」 [004]") == [("甲", "004"), ("乙", "004")]
    assert tagged_quotes("郑 「甲」 (OUTSIDE)") == []
    assert tagged_quotes("盛 [004] 「甲」: prose (「乙」 [001])") == [("甲", "004"), ("乙", "001")]
    assert tagged_quotes("「甲」 and 「乙」 [001]") == [("甲", "001"), ("乙", "001")]
    assert tagged_quotes("乡射 [000] 「甲」, prose: 射义 「乙」 (OUTSIDE)") == [("甲", "000")]
    assert [q for c in citations("郑 [000] 「甲」. Then 「乙」 (INFERENCE)", markdown=False)
            for q in tagged_quotes(c)] == [("甲", "000")]
    assert citations("e.g.「甲」 [001]", markdown=False) == ["e.g.「甲」 [001]"]
    assert tagged_quotes("郑 [000] 「甲」 「乙」, [002]") == [("甲", "002"), ("乙", "002")]
    assert [q for c in citations("郑 [000] 「甲」; 「乙」, [002]", markdown=False)
            for q in tagged_quotes(c)] == [("甲", "000"), ("乙", "002")]
    cits = citations("「甲」 [001]; 郑 「乙」; 「丙」 [000]", markdown=False)
    assert [tagged_quotes(c) for c in cits] == [[("甲", "001")], [], [("丙", "000")]]
    # a ; inside a quote does not cut the citation
    assert citations("「甲；乙」 [001]", markdown=False) == ["「甲；乙」 [001]"]


def test_markdown_wrapped_lines_are_one_citation_and_table_cells_are_apart():
    text = "The text says\n「甲」 and goes on [001].\n\n| 「乙」 | [002] |\n"
    cits = citations(text, markdown=True)
    assert [q for c in cits for q in tagged_quotes(c)] == [("甲", "001")]


def test_matching_ignores_punctuation_footnotes_variants_and_follows_cuts():
    seed = normalise("公射大侯（53），大夫射参。狸首，逸诗；锺鼓在庭")
    assert found_in("公射大侯，大夫射参", seed)
    assert found_in("貍首，逸诗", seed) and found_in("钟鼓", seed)
    assert found_in("公射…逸诗", seed)
    assert not found_in("逸诗…公射", seed)                 # pieces out of order
    assert not found_in("公射小侯", seed)
    far = normalise("甲乙" + "丙" * (MAX_GAP + 1) + "丁戊")
    assert not found_in("甲乙…丁戊", far) and found_in("甲乙…丙丁戊", far)


def test_sources_are_read_without_marks_in_simplified_characters():
    """The sources' page marks and note brackets go, traditional characters and variants are read
    as the data writes them, and a sentence broken across lines is found whole."""
    text = source_normalise("# header\n士以三耦射豻侯一\n<pb:KR1d0003_WYG_030-25b>\n獲一容樂以采蘩(注/文)矦閒")
    assert found_in(source_normalise("士以三耦射豻侯，一获一容，乐以采蘩"), text)
    assert found_in("侯间", text) and found_in("注文", text) and not found_in("header", text)
    assert found_in(source_normalise("王以六耦射三侯，三获三容"), seed_text("射人"))
    assert not found_in(source_normalise("王以七耦射三侯"), seed_text("射人"))
    assert tagged_quotes("注 「士不大射」 [司裘]") == [("士不大射", "司裘")]

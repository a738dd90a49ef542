"""The 风雅十二诗谱 as ../shared/scores.md transcribes it, parsed for the tests: 熊朋来's lines
(witness A: words, 律, 工尺), the readings its "Summary of doubts" gives (大 read 太, the 工尺 read
otherwise), and the lines of the copies of 朱熹's print (witnesses B, C) with their 清 marks.

Nothing here reads pieces/*.toml: this is the independent side of tests/test_shipu.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SCORES = "shared/scores.md"
LV = "黄大太夹姑仲蕤林夷南无应"
#: 工尺 → octave (熊朋来 卷一 「雅律通俗谱例」, scores.md "Source and how to read it"): 六 and 五 the
#: upper octave, every other letter the lower
UPPER = "六五"
#: the odes of the 乡射礼's 合乐 (「乃合乐周南关雎葛覃卷耳召南鹊巢采蘩采蘋」), and 驺虞 aside
HELE = ("关雎", "葛覃", "卷耳", "鹊巢", "采蘩", "采蘋")

_STANZA = re.compile(r"^(\d) (\S+) \| (\S+) \| (\S+)$")
_TOKEN = re.compile(rf"(清?)([{LV}])|·|\*\*如\*\*|如")


def scores_text(root: Path) -> str:
    path = root.parent / SCORES
    if not path.exists():
        pytest.fail(f"{path} is absent: the tests need ../shared beside the checkout")
    return path.read_text(encoding="utf-8")


def _sections(scores: str) -> dict[str, str]:
    """{title: its ### section} of the 合乐 part of scores.md."""
    part = scores[scores.index("## 乡射礼 合乐"):]
    heads = list(re.finditer(r"^### 《(.+?)》", part, re.M))
    return {m.group(1): part[m.start():(heads[k + 1].start() if k + 1 < len(heads) else
                                        part.index("## ", m.end()))]
            for k, m in enumerate(heads)}


def a_lines(scores: str, title: str) -> list[tuple[str, str, str]]:
    """[(words, 律 line, 工尺 line)] of ``title`` as A writes them: the 合乐 section's stanza lines,
    or for 采蘩 and 采蘋 scores.md's lines ``采蘩 1 …`` (which its check calls identical to A)."""
    if title in ("采蘩", "采蘋"):
        rows = [ln[len(title) + 1:].strip() for ln in scores.splitlines() if re.match(rf"{title} \d ", ln)]
        rows = [f"{r[0]} {r[2:]}" for r in rows]
    else:
        rows = _sections(scores)[title].splitlines()
    out = []
    for ln in rows:
        m = _STANZA.match(ln.strip())
        if m:
            out.append((m.group(2), m.group(3), m.group(4)))
    assert out and all(len(w) == len(lv) == len(gc) for w, lv, gc in out), (title, out)
    return out


def read_as_tai(scores: str) -> set[tuple[str, int, int]]:
    """(title, stanza, syllable) of the notes written 大 and read 太: "Summary of doubts" item 1."""
    summary = scores[scores.index("## Summary of doubts"):]
    item = summary[summary.index("1. "):summary.index("\n2. ")]
    assert "Read 太" in item, item
    found = {(t, int(s), int(n)) for t, s, n in re.findall(r"(\S\S) (\d) #(\d+)", item)}
    assert len(found) >= 3, found           # the three of the 合乐, and 鹿鸣 1 #31 compared
    return found


def gongche_read_as(scores: str) -> dict[tuple[str, int], str]:
    """{(title, stanza): the 工尺 line read} where a note after a stanza says "Read the 工尺 as …"
    (the slips of A's 工尺: "Summary of doubts" item 2)."""
    out = {}
    for title, text in _sections(scores).items():
        stanza = None
        joined = re.sub(r"\n\s+", " ", text)          # a note's wrapped lines as one
        for ln in joined.splitlines():                  # a stanza's line with the note after it
            m = re.match(r"(\d) \S+ \| ", ln)
            if m:
                stanza = int(m.group(1))
            r = re.search(r"Read the 工尺 as\s+([合四一上勾尺工凡六五]+)", ln)
            if r:
                out[(title, stanza)] = r.group(1)
    return out


def _tokens(text: str) -> list[tuple[int, str] | None]:
    """A witness line's notes: (octave, 律) each (清 = 1), None for · (no note) or 如 (no 律)."""
    out: list[tuple[int, str] | None] = []
    for m in _TOKEN.finditer(text):
        out.append((1 if m.group(1) else 0, m.group(2)) if m.group(2) else None)
    return out


def witnesses(scores: str) -> dict[tuple[str, int], dict[str, list[tuple[int, str] | None]]]:
    """{(title, stanza): {witness letter: [note or None]}} of the copies of 朱熹's print, B and C,
    as scores.md lists them ("- B 1 […]: …", "- B 3 […] and C 3 […], identical: …", "C 2: = A
    exactly", "the same, but #16 逑 is 黄"; for 采蘩 "B 1: …", for 采蘋 B's first twelve notes)."""
    out: dict[tuple[str, int], dict[str, list[tuple[int, str] | None]]] = {}

    def a_notes(title, n):
        _, lv, gc = a_lines(scores, title)[n - 1]
        return [(1 if g in UPPER else 0, lu) for lu, g in zip(lv, gc)]

    for title, text in _sections(scores).items():
        text = re.sub(r"\n\s{2,}(?=[清黄大太夹姑仲蕤林夷南无应])", " ", text)   # "identical:\n  清黄 …"
        for ln in text.splitlines():
            m = re.match(r"- ([BC]) (\d) \[[^\]]*\](?: and ([BC]) \2 \[[^\]]*\])?(?:, identical)?: (.*)$", ln)
            if not m:
                continue
            letters = [m.group(1)] + ([m.group(3)] if m.group(3) else [])
            n, rest = int(m.group(2)), m.group(4)
            row = out.setdefault((title, n), {})
            if rest.startswith("= A exactly"):
                notes = a_notes(title, n)
            elif rest.startswith("the same, but"):
                other = next(iter(row.values()))
                k, _, lu = re.match(r"the same, but #(\d+) (\S) is (清?[黄太姑仲林南无])", rest).groups()
                notes = list(other)
                notes[int(k) - 1] = (1 if lu.startswith("清") else 0, lu[-1])
            else:
                notes = _tokens(rest.split(" (")[0])
            for letter in letters:
                row[letter] = notes
    check = scores[scores.index("## Check of 采蘩 and 采蘋"):scores.index("## Summary of doubts")]
    for n, rest in re.findall(r"^  B (\d): (.*)$", check, re.M):
        out[("采蘩", int(n))] = {"B": _tokens(rest.split(" (")[0].rstrip("."))}
    first = re.search(r"B \[086-17b\] has ((?:\S+ )+)for 采蘋 1 #1–12", check)
    out[("采蘋", 1)] = {"B": _tokens(first.group(1)) + [None] * 4}
    return out

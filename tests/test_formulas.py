"""The officers' spoken formulas (``speech`` cues): each said by its speaker, one spoken note per
syllable with its lyric, in a cue quoting its sentence; the 释获者's count at each 数获 is the one
the rite's rule gives (counted here from the cue sheet's ``hits`` by R9 of shared/ceremony.md,
independently of yuexuan.scoring), and with ``--shots LOG`` the one ``check`` announces."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from yuexuan.cli import main
from yuexuan.compiler import compile_path
from yuexuan.scoring.shots import read_shots

ROOT = Path(__file__).resolve().parent.parent
CUES = ROOT / "cues" / "dashe.toml"
LOG = ROOT / "tests" / "data" / "shots_example.csv"
DIGITS = "零一二三四五六七八九"

# (speaker, words, a quote the cue's source must hold)
FORMULAS = [
    ("司射", "毋射获，毋猎获", "命曰：毋射获，毋猎获"),
    ("司射", "命用乐", "东面命乐正曰：命用乐"),
    ("乐正", "诺", "乐正曰：诺"),
    ("司射", "不鼓不释", "命曰：不鼓不释"),
    ("乐正", "奏貍首，间若一", "乐正命大师曰：奏貍首，间若一"),
    ("大师", "诺", "大师不兴，许诺"),
    ("释获者", "左右卒射", "左右卒射"),
]


def said(tl, cue_id: str, who: str) -> str:
    return "".join(n.lyric for n in tl.notes if n.cue == cue_id and n.instrument == who)


def expected_count(round_: int) -> str:
    """R9 from the cue sheet's hits: 右 = the 上射's 算, 左 = the 下射's (the 公, a 下射, looses first)."""
    sheet = tomllib.loads(CUES.read_text(encoding="utf-8"))
    right = left = 0
    for p in sheet["pair"]:
        marks = p["hits"][round_ - 1] if len(p["hits"]) >= round_ else ""
        gong_first = p["lower"]["rank"] == "公"
        for k, m in enumerate(marks):
            if m == "x":
                upper = (k % 2 == 0) != gong_first
                right, left = right + upper, left + (not upper)
    d = abs(right - left)
    if d == 0:
        return "左右钧"
    chun, qi = divmod(d, 2)
    assert chun < 10
    winner = "右贤于左" if right > left else "左贤于右"
    return winner + (DIGITS[chun] + "纯" if chun else "") + ("一奇" if qi else "")


def test_formulas_are_spoken_one_note_a_syllable_with_their_source(ceremony):
    speech = [c for c in ceremony.cues if c.kind == "speech"]
    for who, words, quote in FORMULAS:
        plain = words.replace("，", "")
        cue = next((c for c in speech if quote in c.source and plain in said(ceremony, c.id, who)), None)
        assert cue is not None, (who, words)
        notes = [n for n in ceremony.notes if n.cue == cue.id and n.instrument == who]
        assert all(n.hz is None and len(n.lyric) == 1 for n in notes)          # spoken, one syllable each
        assert ceremony.instruments[who]["pitched"] is False and ceremony.instruments[who]["source"]
    order = [c.id for c in ceremony.cues]
    assert order.index("round1_ming") == order.index("round1") - 1            # 「毋射获」 then 「乃射」
    assert order.index("round3_mingyue") == order.index("lishou") - 1         # the orders, then 貍首
    for r in (2, 3):                                                          # 「左右卒射」 after the round
        last = max(i for i, c in enumerate(ceremony.cues) if c.round == r)
        assert said(ceremony, ceremony.cues[last + 1].id, "释获者") == "左右卒射"


@pytest.mark.parametrize("round_", [2, 3])
def test_count_from_the_hits(ceremony, round_):
    assert said(ceremony, f"round{round_}_shuhuo", "释获者") == expected_count(round_)
    assert ceremony.cue(f"round{round_}_shuhuo").piece == f"数获：{expected_count(round_)}"   # the captions


def test_count_from_a_shot_log_is_checks(tmp_path, capsys):
    tl, _ = compile_path(CUES, shots=read_shots(LOG))
    out = tmp_path / "check.json"
    assert main(["check", str(CUES), str(LOG), "--format", "json", "-o", str(out)]) == 0
    capsys.readouterr()
    tallies = {t["round"]: t["announcement"] for t in json.loads(out.read_text(encoding="utf-8"))["tallies"]}
    assert set(tallies) == {2, 3}
    for r, text in tallies.items():
        assert said(tl, f"round{r}_shuhuo", "释获者") == text
    assert tallies[3] != expected_count(3)          # the log's count, not the cue sheet's

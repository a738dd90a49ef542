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
    ("司射", "公射大侯，大夫射参，士射干。射者非其侯，中之不获。卑者与尊者为耦，不异侯",
     "司射西面誓之曰：公射大侯，大夫射参，士射干，射者非其侯，中之不获。卑者与尊者为耦，不异侯"),
    ("释获者", "诺", "太史许诺"),                                       # 「太史释获」
    ("司射", "三耦卒射", "北面告于公曰：三耦卒射"),
    ("司射", "中离维纲，扬触，梱复。公则释获，众则不与。唯公所中，中三侯皆获",
     "司射西面命曰：中离维纲，扬触，梱复。公则释获，众则不与。唯公所中，中三侯皆获"),
    ("司射", "不贯不释", "命曰：不贯不释"),
    ("司射", "胜者皆袒，决遂，执张弓；不胜者皆袭，说决拾，却左手，右加弛弓于其上，遂以执弣",
     "胜者皆袒，决遂，执张弓；不胜者皆袭，说决拾，却左手，右加驰弓于其上，遂以执弣"),
]


def said(tl, cue_id: str, who: str) -> str:
    return "".join(n.lyric for n in tl.notes if n.cue == cue_id and n.instrument == who)


def expected_count(round_: int) -> str:
    """R9 from the cue sheet's hits: 右 = the 上射's 算, 左 = the 下射's (the 公, a 下射, looses first)."""
    sheet = tomllib.loads(CUES.read_text(encoding="utf-8"))
    right = left = 0
    first_ou = [p["id"] for p in sheet["pair"] if p["group"] == "三耦"][:3]    # an 诸侯's 三耦
    for p in sheet["pair"]:
        if "诸侯" not in p.get("ranks", ["诸侯"]) or (p["group"] == "三耦" and p["id"] not in first_ou):
            continue
        marks = p["hits"][round_ - 1] if len(p["hits"]) >= round_ else ""
        gong_first = p["lower"].get("host", False)            # the 公 looses first
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
        plain = "".join(ch for ch in words if ch not in "，。；")
        cue = next((c for c in speech if quote in c.source and plain in said(ceremony, c.id, who)), None)
        assert cue is not None, (who, words)
        notes = [n for n in ceremony.notes if n.cue == cue.id and n.instrument == who]
        assert all(n.hz is None and len(n.lyric) == 1 for n in notes)          # spoken, one syllable each
        assert ceremony.instruments[who]["pitched"] is False and ceremony.instruments[who]["source"]
    order = [c.id for c in ceremony.cues]
    assert order.index("round1_ming") == order.index("round1") - 1            # 「毋射获」 then 「乃射」
    assert order.index("shi") < order.index("round1_quhou")                   # the 誓, then 比三耦
    assert order.index("round1_zushe") == order.index("round1") + 1           # 「三耦卒射」 to the 公
    assert order.index("round2_ming") == order.index("round2_sanou") - 1      # 「不贯不释」 then 「乃射」
    assert order.index("round2_yin") == order.index("round2_shuhuo") + 1      # then 饮不胜者
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


def test_qushi_busuo_only_when_an_arrow_is_not_recovered(tmp_path, ceremony):
    """「若矢不备，则司马正又袒执弓，升，命取矢如初，曰：取矢不索」 [001]: with a shot log whose
    round-2 arrow was not found (result 失), 取矢不索 follows round 2's 取矢; not without one."""
    assert not [c for c in ceremony.cues if "取矢不索" in c.piece]
    rows = LOG.read_text(encoding="utf-8").splitlines()
    lost = rows[:2] + [rows[2].replace(",参,贯,", ",,失,")] + rows[3:]     # round 2: 上耦下射's arrow
    log = tmp_path / "lost.csv"
    log.write_text("\n".join(lost) + "\n", encoding="utf-8")
    tl, _ = compile_path(CUES, shots=read_shots(log))
    busuo = [c for c in tl.cues if c.piece == "取矢不索"]
    assert [c.id for c in busuo] == ["round2_busuo"]
    order = [c.id for c in tl.cues]
    assert order.index("round2_busuo") == order.index("round2_qushi") + 1
    assert said(tl, "round2_busuo", "司马正") == "取矢不索" and "若矢不备" in busuo[0].source
    assert all(n.hz is None for n in tl.notes if n.cue == "round2_busuo")

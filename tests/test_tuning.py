"""三分损益 tuning against the ratios printed in scores.md, computed here independently."""

import math
from fractions import Fraction

import pytest

from yuexuan.rite import tuning

# scores.md: 黄 1, 大 2187/2048, 太 9/8, 夹 19683/16384, 姑 81/64, 仲 177147/131072, 蕤 729/512, 林 3/2,
# 夷 6561/4096, 南 27/16, 无 59049/32768, 应 243/128
SCORES_MD = ["1", "2187/2048", "9/8", "19683/16384", "81/64", "177147/131072", "729/512", "3/2",
             "6561/4096", "27/16", "59049/32768", "243/128"]


def test_ratios_match_scores_md():
    assert [str(r) for r in tuning.RATIOS] == SCORES_MD


def test_yize_is_815_6_cents_not_800():
    c = tuning.cents(tuning.parse_pitch("夷则").ratio())
    assert c == pytest.approx(1200 * math.log2(6561 / 4096))
    assert round(c, 1) == 815.6


def test_gong_shang_is_81_to_72():
    # 疏: 宫数八十一，商数七十二 — string lengths; the frequency ratio 商/宫 is 81/72 = 9/8
    ws = tuning.wusheng("黄")
    assert tuning.parse_pitch(ws["商"]).ratio() / tuning.parse_pitch(ws["宫"]).ratio() == Fraction(81, 72)


def test_wusheng_on_any_lv():
    assert tuning.wusheng("林") == {"宫": "林", "商": "南", "角": "应", "徵": "太", "羽": "姑"}
    assert tuning.wusheng("无射")["宫"] == "无"


def test_octave_marks_and_hz():
    p = tuning.parse_pitch("太清")
    assert (p.lv, p.octave) == (2, 1)
    assert p.hz(345.0) == pytest.approx(345.0 * 9 / 8 * 2)
    assert tuning.parse_pitch("黄浊").hz(345.0) == pytest.approx(172.5)


def test_midi_and_cents():
    key, off = tuning.hz_to_midi(440.0)
    assert (key, off) == (69, 0.0)
    key, off = tuning.hz_to_midi(345.0)
    assert key == 65 and off == pytest.approx(1200 * math.log2(345 / 349.2282314), abs=1e-4)


@pytest.mark.parametrize("bad", ["", "X", "黄x", "钟"])
def test_unknown_lv_is_a_user_error(bad):
    from yuexuan.errors import UserError
    with pytest.raises(UserError, match="unknown 律"):
        tuning.parse_pitch(bad)

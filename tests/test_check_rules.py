"""The 释获 rules, each from its sentence in the seeds, and the tally arithmetic.

Every case is a small shot log read through the real reader (``read_shots``), so the reader and
the rules are tested together; the expected verdicts are written out by hand from the text.
"""

from __future__ import annotations

import numpy as np
import pytest

from yuexuan.rite.vocabulary import RESULTS
from yuexuan.scoring import tally
from yuexuan.scoring.nearest import nearest
from rite_support import read as read_shots
from rite_support import settings as dashe_settings

BEATS = 100.0 + 2.0 * np.arange(20)          # 建鼓 strokes, timeline seconds
HEADER = "time,archer,rank,role,target,result,pair,round\n"


def judge(tmp_path, rows, beats=BEATS, offset=0.0, **settings):
    path = tmp_path / "shots.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in rows), encoding="utf-8")
    s = read_shots(path)
    v = tally.evaluate(s.round, s.rank, s.role, s.target, s.result, s.pair, s.time, beats,
                       offset, dashe_settings(**settings))
    return [(bool(r), tally.REASONS[k]) for r, k in zip(v.released, v.reason)], v


def test_round_1_nothing_is_released(tmp_path):
    # 「获者坐而获，举旌以宫，偃旌以商；获而未释获」: the hit is called, no 算 is laid down.
    got, v = judge(tmp_path, ["10,甲,士,上射,干,贯,一耦,1", "12,乙,士,下射,,不中,一耦,1",
                              "14,公,公,下射,大侯,贯,公耦,1"])
    assert got == [(False, "获而未释获"), (False, "不中"), (False, "获而未释获")]
    assert v.tallies == []       # round 1 is not announced


def test_own_hou_only(tmp_path):
    # 「公射大侯，大夫射参，士射干。射者非其侯，中之不获。」
    got, _ = judge(tmp_path, [
        "50,士甲,士,上射,干,贯,,2",        # 士 on 干: counts
        "51,士甲,士,上射,参,贯,,2",        # 士 on 参: 非其侯
        "52,大夫甲,大夫,上射,参,贯,,2",    # 大夫 on 参: counts
        "53,大夫甲,大夫,上射,干,贯,,2",    # 大夫 on 干: 非其侯
        "54,大夫甲,大夫,上射,大侯,贯,,2",  # 大夫 on 大侯: 非其侯
        "55,卿甲,卿,上射,参,贯,,2",        # 卿 shoots 参 (INFERENCE, O23)
        "56,卿甲,卿,上射,大侯,贯,,2",
    ])
    assert got == [(True, "释"), (False, "非其侯"), (True, "释"), (False, "非其侯"),
                   (False, "非其侯"), (True, "释"), (False, "非其侯")]


def test_lower_partner_shoots_the_higher_hou(tmp_path):
    # 「卑者与尊者为耦，不异侯」; 疏 「宾客与君主结为耦，同射大侯；士与大夫结为耦，同射参侯」.
    got, _ = judge(tmp_path, [
        "60,宾,宾,上射,大侯,贯,公耦,2",    # the 宾 beside the 公 shoots the 大侯
        "61,宾,宾,上射,参,贯,公耦,2",
        "62,公,公,下射,大侯,贯,公耦,2",
        "63,士乙,士,上射,参,贯,大夫耦,2",  # a 士 paired with a 大夫 shoots the 参
        "64,士乙,士,上射,干,贯,大夫耦,2",  # … and not his own 干
        "65,大夫乙,大夫,下射,参,贯,大夫耦,2",
        "66,士丙,士,上射,干,贯,士耦,2",    # two 士: their own 干
    ])
    assert got == [(True, "释"), (False, "非其侯"), (True, "释"), (True, "释"),
                   (False, "非其侯"), (True, "释"), (True, "释")]


def test_must_pierce_and_the_gong_is_favoured(tmp_path):
    # 「不贯不释」; 「中离维纲，扬触，梱复，公则释获，众则不与」.
    near = ["离维纲", "扬触", "梱复"]
    rows = [f"{70 + k},大夫甲,大夫,上射,参,{r},,2" for k, r in enumerate(near)]
    rows += [f"{80 + k},公,公,下射,大侯,{r},,2" for k, r in enumerate(near)]
    rows += [f"{90 + k},宾,宾,上射,大侯,{r},公耦,2" for k, r in enumerate(near)]
    got, _ = judge(tmp_path, rows)
    assert got == [(False, "不贯不释")] * 3 + [(True, "公则释获")] * 3 + [(False, "不贯不释")] * 3


def test_whatever_hou_the_gong_hits(tmp_path):
    # 「唯公所中，中三侯皆获」 (注 「值中一侯则释获」).
    got, _ = judge(tmp_path, ["70,公,公,下射,大侯,贯,公耦,2", "71,公,公,下射,参,贯,公耦,2",
                              "72,公,公,下射,干,贯,公耦,2", "73,公,公,下射,干,扬触,公耦,2",
                              "74,公,公,下射,,不中,公耦,2"])
    assert got == [(True, "释"), (True, "唯公所中"), (True, "唯公所中"), (True, "公则释获"),
                   (False, "不中")]


def test_round_3_not_on_the_drum_not_released(tmp_path):
    # 「不鼓不释」 (注 「不与鼓节相应，不释算也」).
    got, v = judge(tmp_path, ["100.02,甲,士,上射,干,贯,一耦,3", "103.0,乙,士,下射,干,贯,一耦,3",
                              "104.5,宾,宾,上射,大侯,贯,公耦,3"])
    assert got == [(True, "释"), (False, "不鼓不释"), (False, "不鼓不释")]   # no exemption for 宾
    assert v.nearest_beat[:2].tolist() == [100.0, 102.0]
    assert v.offset_s[0] == pytest.approx(0.02)
    assert v.offset_s[1] == pytest.approx(1.0)


def test_round_3_the_gong_is_exempt_unless_strict(tmp_path):
    # 「公乐作而后就物，稍属，不以乐志」 (注 「其发不必应乐」): O20, exempt by default.
    rows = ["103.0,公,公,下射,大侯,贯,公耦,3", "105.0,公,公,下射,参,梱复,公耦,3",
            "106.0,公,公,下射,干,贯,公耦,3"]
    got, _ = judge(tmp_path, rows)
    assert got == [(True, "不以乐志"), (True, "不以乐志"), (True, "唯公所中")]
    strict, _ = judge(tmp_path, rows, gong_exempt=False)
    assert strict == [(False, "不鼓不释"), (False, "不鼓不释"), (True, "唯公所中")]


@pytest.mark.parametrize("dt,counts", [(0.0, True), (0.069, True), (0.07, True), (-0.07, True),
                                       (0.0701, False), (-0.0701, False), (0.5, False)])
def test_tolerance_edges(tmp_path, dt, counts):
    # The window is inclusive: |shot − stroke| ≤ tolerance (70 ms by default).
    got, v = judge(tmp_path, [f"{104.0 + dt:.4f},甲,士,上射,干,贯,一耦,3"])
    assert got == [(True, "释")] if counts else [(False, "不鼓不释")]
    assert bool(v.on_beat[0]) is counts


def test_tolerance_is_a_setting(tmp_path):
    rows = ["104.09,甲,士,上射,干,贯,一耦,3"]
    assert judge(tmp_path, rows)[0] == [(False, "不鼓不释")]
    assert judge(tmp_path, rows, tolerance_s=0.1)[0] == [(True, "释")]
    assert judge(tmp_path, rows, tolerance_s=0.09)[0] == [(True, "释")]
    assert judge(tmp_path, rows, tolerance_s=0.089)[0] == [(False, "不鼓不释")]


def test_clock_offset_moves_the_log_onto_the_timeline(tmp_path):
    # A recording whose clock started 95 s after the timeline's: its 5.0 s is the timeline's 100.0.
    rows = ["5.0,甲,士,上射,干,贯,一耦,3", "7.03,乙,士,下射,干,贯,一耦,3",
            "9.2,甲,士,上射,干,贯,一耦,3"]
    got, v = judge(tmp_path, rows, offset=95.0)
    assert got == [(True, "释"), (True, "释"), (False, "不鼓不释")]
    assert v.nearest_beat.tolist() == [100.0, 102.0, 104.0]
    assert v.offset_s[1] == pytest.approx(0.03)
    got0, _ = judge(tmp_path, rows)            # without the offset all are far from the drum
    assert got0 == [(False, "不鼓不释")] * 3
    # a negative offset works the same way
    got_neg, _ = judge(tmp_path, ["1100.0,甲,士,上射,干,贯,一耦,3"], offset=-1000.0)
    assert got_neg == [(True, "释")]


def test_rules_apply_in_order(tmp_path):
    # A miss is 不中 before anything; in round 3 the drum decides before the 侯 and the 贯.
    got, _ = judge(tmp_path, ["103.0,甲,士,上射,,不中,一耦,3", "103.0,甲,士,上射,参,贯,一耦,3",
                              "104.0,甲,士,上射,参,扬触,一耦,3", "104.0,甲,士,上射,干,扬触,一耦,3"])
    assert got == [(False, "不中"), (False, "不鼓不释"), (False, "非其侯"), (False, "不贯不释")]


def test_right_and_left(tmp_path):
    # 「上射于右，下射于左」: the 公 is a 下射, so his 算 go to the 左.
    _, v = judge(tmp_path, ["50,公,公,下射,大侯,贯,公耦,2", "51,宾,宾,上射,大侯,贯,公耦,2",
                            "52,公,公,下射,参,贯,公耦,2"])
    assert v.tallies == [{"round": 2, "右": 1, "左": 2, "winner": "左", "chun": 0, "qi": 1,
                          "announcement": "左贤于右一奇"}]


@pytest.mark.parametrize("right,left,text,chun,qi", [
    (0, 0, "左右钧", 0, 0),
    (4, 4, "左右钧", 0, 0),
    (7, 0, "右贤于左三纯一奇", 3, 1),       # 「二算为纯，一算为奇」
    (2, 4, "左贤于右一纯", 1, 0),
    (5, 4, "右贤于左一奇", 0, 1),
    (20, 0, "右贤于左十纯", 10, 0),
    (0, 23, "左贤于右十一纯一奇", 11, 1),
    (43, 1, "右贤于左二十一纯", 21, 0),
])
def test_announcement(right, left, text, chun, qi):
    # 「若右胜，则曰：右贤于左…以纯数告。若有奇者，亦曰奇。若左右钧…曰：左右钧」
    winner, c, q, t = tally.announcement(right, left)
    assert (t, c, q) == (text, chun, qi)
    assert winner == (None if right == left else ("右" if right > left else "左"))


@pytest.mark.parametrize("right,left,english", [
    (3, 2, "right wins by one single arrow"),            # 右贤于左一奇
    (0, 4, "left wins by two pairs of arrows"),          # 左贤于右二纯
    (9, 2, "right wins by three pairs of arrows and one single arrow"),   # 三纯一奇
    (2, 4, "left wins by one pair of arrows"),           # 左贤于右一纯
    (5, 5, "a tie: left and right are even"),            # 左右钧
])
def test_announcement_in_english(right, left, english):
    """Issue 35: an English line beside each announcement; a 纯 is a pair of arrows (二算为纯),
    a 奇 a single one (一算为奇)."""
    from yuexuan.scoring.report import announcement_en
    winner, chun, qi, _ = tally.announcement(right, left)
    assert announcement_en(winner, chun, qi) == english


@pytest.mark.parametrize("n,text", [(1, "一"), (9, "九"), (10, "十"), (11, "十一"), (19, "十九"),
                                    (20, "二十"), (21, "二十一"), (99, "九十九"), (100, "一百"),
                                    (101, "一百零一"), (110, "一百一十"), (1000, "一千"),
                                    (1001, "一千零一"), (1010, "一千零一十"), (10000, "一万"),
                                    (10001, "一万零一"), (100000, "十万"), (123456, "十二万三千四百五十六"),
                                    (500000, "五十万"), (1000010, "一百万零一十")])
def test_chinese_numerals(n, text):
    assert tally.chinese_number(n) == text


def test_tally_counts_match_an_independent_count(tmp_path):
    # Many random shots: the tally equals a plain Python count of released 上射 / 下射 per round,
    # and each released shot satisfies the rules as restated here independently.
    rng = np.random.default_rng(7)
    ranks = ["公", "宾", "卿", "大夫", "士"]
    own = {"公": "大侯", "宾": "大侯", "卿": "参", "大夫": "参", "士": "干"}
    rows, facts = [], []
    for k in range(400):
        pair = f"耦{k // 8}"
        rank = ranks[rng.integers(0, 5)]
        role = "下射" if rank == "公" else ["上射", "下射"][rng.integers(0, 2)]
        result = ["贯", "离维纲", "扬触", "梱复", "不中"][rng.integers(0, 5)]
        target = "" if result == "不中" else ["大侯", "参", "干"][rng.integers(0, 3)]
        rnd = int(rng.integers(1, 4))
        t = float(BEATS[rng.integers(0, len(BEATS))] + rng.choice([0.0, 0.05, 0.3]))
        rows.append(f"{t},a{k},{rank},{role},{target},{result},{pair},{rnd}")
        facts.append((pair, rank, role, target, result, rnd, t))
    got, v = judge(tmp_path, rows)
    senior = {}
    for pair, rank, *_ in facts:
        if pair not in senior or ranks.index(rank) < ranks.index(senior[pair]):
            senior[pair] = rank
    expect = {2: [0, 0], 3: [0, 0]}
    for (pair, rank, role, target, result, rnd, t), (released, _) in zip(facts, got):
        on_beat = min(abs(t - b) for b in BEATS) <= 0.070 + 1e-9
        if result == "不中" or rnd == 1:
            ok = False
        elif rank == "公":
            ok = True
        else:
            ok = (rnd == 2 or on_beat) and target == own[senior[pair]] and result == "贯"
        assert released == ok, (pair, rank, role, target, result, rnd, t)
        if ok:
            expect[rnd][0 if role == "上射" else 1] += 1
    for tally in v.tallies:
        assert [tally["右"], tally["左"]] == expect[tally["round"]]
        d = abs(tally["右"] - tally["左"])
        assert 2 * tally["chun"] + tally["qi"] == d


def test_nearest_stroke_by_searchsorted():
    beats = np.array([1.0, 2.0, 4.0])
    times = np.array([-5, 1.4, 1.5, 1.6, 3.1, 2.9, 9.0])
    idx, off = nearest(times, beats)
    assert beats[idx].tolist() == [1.0, 1.0, 1.0, 2.0, 4.0, 2.0, 4.0]   # a tie goes to the earlier
    assert off == pytest.approx(times - beats[idx])
    idx, off = nearest(np.array([0.0, 7.0]), np.array([3.0]))
    assert idx.tolist() == [0, 0] and off.tolist() == [-3.0, 4.0]
    idx, off = nearest(np.array([np.nan, 2.0]), beats)
    assert np.isnan(off[0]) and idx[1] == 1 and off[1] == 0.0


def test_nearest_stroke_agrees_with_brute_force():
    """Against the O(n·m) search it replaces (argmin of |time − stroke|, the earlier on a tie)."""
    rng = np.random.default_rng(20)
    for m in (1, 2, 7, 300):
        strokes = np.sort(np.round(rng.uniform(0, 100, m), 1))      # rounding makes ties and repeats
        times = np.round(rng.uniform(-10, 110, 500), 1)
        idx, off = nearest(times, strokes)
        brute = np.abs(np.subtract.outer(times, strokes)).argmin(axis=1)
        assert (strokes[idx] == strokes[brute]).all() and (off == times - strokes[idx]).all()


@pytest.mark.parametrize("strokes, word", [([], "non-empty"), ([[1.0]], "1-D"),
                                           ([1.0, np.nan], "finite"), ([2.0, 1.0], "ascending")])
def test_nearest_stroke_refuses_bad_strokes(strokes, word):
    with pytest.raises(ValueError, match=word):
        nearest(np.array([1.0]), np.array(strokes, dtype=float))


def test_arrow_numbers_and_over_four():
    rnd = np.array([3, 3, 3, 2, 3, 3, 3], dtype=np.int8)
    names = ["甲", "乙", "甲", "甲", "甲", "甲", "甲"]
    t = np.array([5.0, 1.0, 2.0, 0.0, 9.0, 7.0, 8.0])
    # 甲's round-3 shots in time order: 2.0, 5.0, 7.0, 8.0, 9.0; 乙 one; 甲's round-2 one
    assert tally.arrow_numbers(rnd, names, t).tolist() == [2, 1, 1, 1, 5, 3, 4]
    assert tally.over_four(rnd, names) == [(3, "甲", 5)]
    assert tally.over_four(rnd[:4], names[:4]) == [] and tally.over_four(rnd[:0], []) == []


def test_own_strokes_and_their_live_strokes():
    from types import SimpleNamespace

    from yuexuan.scoring import arrow_stroke
    from yuexuan.timeline import Beat

    beats = [Beat(10.0, "c", "p", 1, False, None, None, None),
             Beat(11.0, "c", "p", 2, True, "上射", "甲", 1), Beat(13.0, "c", "p", 2, True, "下射", "乙", 1),
             Beat(15.0, "c", "p", 3, True, "上射", "甲", 2), Beat(17.0, "c", "p", 3, True, "下射", "乙", 2),
             Beat(99.0, "other", "p", 3, True, "上射", "甲", 1)]
    rnd = np.array([3, 3, 3, 3, 2])
    names = ["甲", "乙", "甲", "丙", "甲"]
    t = np.array([15.2, 13.0, 11.1, 12.0, 11.0])
    got = arrow_stroke.own_strokes(beats, ["c"], rnd, names, t)
    assert got[:3].tolist() == [15.0, 13.0, 11.0] and np.isnan(got[3]) and np.isnan(got[4])
    plan = np.array([10.0, 11.0, 13.0, 15.0, 17.0])
    align = SimpleNamespace(live_s=np.array([10.02, 11.03, 15.05]), plan_index=np.array([0, 1, 3]),
                            live_index=np.array([0, 1, 2]))
    live = arrow_stroke.live_strokes(got, plan, align)
    assert live[0] == pytest.approx(15.05) and np.isnan(live[1]) and live[2] == pytest.approx(11.03)
    assert np.isnan(live[3]) and np.isnan(live[4])


def test_o21_and_huo_called():
    GONG, SHI = 0, 4
    res = {r: k for k, r in enumerate(RESULTS)}
    rank = np.array([GONG, GONG, GONG, SHI, SHI, SHI, GONG])
    target = np.array([0, 2, -1, 2, 1, 2, 0])
    result = np.array([res["着侯"], res["梱复"], res["留"], res["贯"], res["贯"], res["着侯"], res["贯"]])
    pair = np.full(7, -1)
    on = tally.huo_called(rank, target, result, pair, dashe_settings())
    off = tally.huo_called(rank, target, result, pair, dashe_settings(gong_outside_hu=False))
    assert on.tolist() == [True, True, False, True, False, False, True]
    assert off.tolist() == [False, True, False, True, False, False, True]
    r2 = np.full(7, 2)
    rel, reason = tally.decide(r2, rank, target, result, tally.hou_of_pairs(rank, pair, dashe_settings().own_hou),
                               np.ones(7, bool), dashe_settings(gong_outside_hu=False))
    assert tally.REASONS[reason[0]] == "不贯不释" and tally.REASONS[reason[2]] == "不中"
    assert tally.REASONS[reason[5]] == "不贯不释" and rel.tolist() == off.tolist()

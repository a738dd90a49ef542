"""The 释获 rules and the tally, as pure vectorised functions: the same in every rite.

Each rule quotes the sentence of the text it applies (《仪礼·大射仪》 经 [001], with 郑注 [000]
[003]); docs/check.md says which readings are INFERENCE. What differs by rite — which 侯 each rank
shoots, who the host is and what he is granted — comes in :class:`Settings`, made from the
timeline's ``rite`` (:func:`yuexuan.scoring.rules.settings_for`). Inputs are the index arrays of
:class:`yuexuan.scoring.shots.Shots` (ranks and 侯 coded in the rite's order,
:func:`~yuexuan.scoring.shots.for_rite`); every function returns new arrays and keeps no state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.scoring.nearest import nearest
from yuexuan.scoring.shots import Codes, Mask, Seconds, Shots, is_miss

SHANG, XIA = range(2)                            # indices into ROLES: 上射, 下射
GUAN, LI_WEI_GANG, YANG_CHU, KUN_FU, BU_ZHONG, LIU, YANG, FANG, ZHUO_HOU, SHI_LOST = range(10)  # RESULTS
MAX_ARROWS = 4                                   # 乘矢: 「皆四节拾将乘矢」 (贾疏), four arrows a round

# The reason that decided each shot, in the order the rules are tried.
REASONS = (
    "释",            # released: a 算 is laid down
    "不中",          # missed every 侯: nothing to release
    "获而未释获",    # round 1: called 获, but no 算
    "不鼓不释",      # round 3, off the drum
    "非其侯",        # 射者非其侯，中之不获
    "不贯不释",      # did not pierce
    "不以乐志",      # released: the 公 in round 3, off the drum
    "公则释获",      # released: the 公's 离维纲 / 扬触 / 梱复
    "唯公所中",      # released: the 公 on a 侯 not his own
    "placement ambiguous",   # not judged: the recording's place in the ceremony is not sure
    "no audio",              # not judged: the shot falls outside the recording
    "not in the roster",     # not judged (--own-jie): no stroke of his own, the name unknown
)
(R_SHI, R_BUZHONG, R_WEISHI, R_BUGU, R_FEIQIHOU, R_BUGUAN,
 R_BUYILEZHI, R_GONGZE, R_WEIGONG, R_AMBIGUOUS, R_NO_AUDIO, R_NOT_IN_ROSTER) = range(len(REASONS))
NOT_JUDGED = (R_AMBIGUOUS, R_NO_AUDIO, R_NOT_IN_ROSTER)   # the reasons of a shot left out of the tally

# Quoted in docs/check.md and in the JSON "rules" list.
RULES = {
    "不中": "Missed every 侯: nothing to release.",
    "获而未释获": "「获者坐而获，举旌以宫，偃旌以商；获而未释获」 (round 1; 注 「但言获未释算」).",
    "非其侯": "「公射大侯，大夫射参，士射干。射者非其侯，中之不获。卑者与尊者为耦，不异侯。」",
    "不贯不释": "「不贯不释」 (注 「贯犹中也。射不中鹄不释算」); "
               "「中离维纲，扬触，梱复，公则释获，众则不与」.",
    "公则释获": "「中离维纲，扬触，梱复，公则释获，众则不与」 (注 「公则释获，优君也」); the 公's "
               "着侯 (in the 侯, outside the 鹄) by the gong_outside_hu variant (O21).",
    "唯公所中": "「唯公所中，中三侯皆获」 (注 「值中一侯则释获」).",
    "不鼓不释": "「不鼓不释」 (注 「不与鼓节相应，不释算也」), round 3.",
    "不以乐志": "「公乐作而后就物，稍属，不以乐志」 (注 「其发不必应乐」); that the 公's off-beat "
               "hits are still released is INFERENCE.",
    "释": "「若中，则释获者每一个释一算，上射于右，下射于左」.",
}

CHINESE_DIGITS = "零一二三四五六七八九"


@dataclass(frozen=True)
class Settings:
    """The rite's roster as the rules need it (ranks and 侯 as codes: indices into the timeline's
    ``rite.ranks`` and its 侯) and how the open readings are taken (O1–O40, docs/sources.md)."""

    tolerance_s: float = 0.070        # round 3: |shot − nearest 建鼓 stroke| ≤ this, seconds
    gong_exempt: bool = True          # O20: 「不以乐志」 — the host's off-beat hits still count
    gong_outside_hu: bool = True      # O21: the host's 着侯 (the 侯 outside the 鹄) counts
    own_hou: tuple[int, ...] = ()     # rank code → the code of its 侯 (「公射大侯，大夫射参，士射干」)
    host: int = -1                    # the host's rank code (公, 王, 主人); -1: no host
    host_any_hou: bool = False        # 「唯公所中，中三侯皆获」
    host_near_misses: bool = False    # 「中离维纲，扬触，梱复，公则释获，众则不与」


def hou_of_pairs(rank: Codes, pair: Codes, own_hou: tuple[int, ...]) -> Codes:
    """The 侯 each shot must hit (its code), ``own_hou`` giving each rank's.

    「卑者与尊者为耦，不异侯」: partners (same ``pair`` ≥ 0) shoot the 侯 of the more senior
    partner (the lower rank code); a shot with no pair (−1) shoots its own rank's 侯.
    """
    rank = np.asarray(rank)
    pair = np.asarray(pair)
    senior = rank.astype(np.int8).copy()
    grouped = pair >= 0
    if grouped.any():
        best = np.full(int(pair.max()) + 1, len(own_hou), dtype=np.int8)
        np.minimum.at(best, pair[grouped], rank[grouped].astype(np.int8))
        senior[grouped] = best[pair[grouped]]
    return np.asarray(own_hou, dtype=np.int8)[senior]


def on_beat(offset_s: Seconds, tolerance_s: float) -> Mask:
    """|offset| ≤ tolerance, inclusive, with 1 ns of slack for decimal seconds in binary floats."""
    return np.abs(offset_s) <= tolerance_s + 1e-9


def decide(round_: Codes, rank: Codes, target: Codes, result: Codes,
           must_hit: Codes, beat_ok: Mask,
           settings: Settings = Settings()) -> tuple[Mask, npt.NDArray[np.int8]]:
    """Apply the 释获 rules to every shot at once.

    ``must_hit`` is :func:`hou_of_pairs`; ``beat_ok`` is whether the shot met a 建鼓 stroke
    (only read for round 3). Returns ``(released: bool array, reason: int8 array)``, the reason
    an index into :data:`REASONS`. Rules tried in order (the first that decides wins):

    1. not a hit (result 不中, 失 …) → 不中.
    2. round 1 → 获而未释获: 「获而未释获」.
    3. the host (``settings.host``), as far as the rite grants it: his 着侯 not counted unless
       ``settings.gong_outside_hu`` (O21) → 不贯不释; in round 3 off the drum he is exempt,
       「不以乐志」, when ``settings.gong_exempt``; 「中离维纲，扬触，梱复，公则释获」
       (``host_near_misses``) and 「唯公所中，中三侯皆获」 (``host_any_hou``).
    4. round 3, off the drum → 不鼓不释: 「不鼓不释」.
    5. a 侯 not the archer's (or the senior partner's) → 非其侯: 「射者非其侯，中之不获」.
    6. not 贯 → 不贯不释: 「不贯不释」; 「众则不与」.
    7. otherwise released → 释.
    """
    round_ = np.asarray(round_)
    result = np.asarray(result)
    host = np.asarray(rank) == settings.host if settings.host >= 0 else np.zeros(len(result), dtype=bool)
    hit = ~is_miss(result)
    r3_off = (round_ == 3) & ~np.asarray(beat_ok, dtype=bool)

    target = np.asarray(target)
    not_guan = result != GUAN
    conditions = [
        ~hit,                                           # 1
        round_ == 1,                                    # 2
        host & (result == ZHUO_HOU) & (not settings.gong_outside_hu),   # 3: O21 not counted
        host & r3_off & settings.gong_exempt,           # 3: 不以乐志
        host & not_guan & settings.host_near_misses & ~r3_off,          # 3: 公则释获
        host & (target != must_hit) & settings.host_any_hou & ~r3_off,  # 3: 唯公所中
        r3_off,                                         # 4
        target != must_hit,                             # 5
        not_guan,                                       # 6
    ]
    choices = [R_BUZHONG, R_WEISHI, R_BUGUAN, R_BUYILEZHI, R_GONGZE, R_WEIGONG, R_BUGU,
               R_FEIQIHOU, R_BUGUAN]
    reason = np.select(conditions, choices, default=R_SHI).astype(np.int8)
    released = np.isin(reason, (R_SHI, R_BUYILEZHI, R_GONGZE, R_WEIGONG))
    return released, reason


def chinese_number(n: int) -> str:
    """A non-negative integer in Chinese numerals: 一, 十, 十一, 二十, 一百零五, 一万 …"""
    if n < 0:
        raise ValueError(n)
    if n == 0:
        return "零"

    def below_10000(m: int) -> str:
        out, zero = [], False
        for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
            d = m // value
            m %= value
            if d:
                if zero:
                    out.append("零")
                    zero = False
                out.append(CHINESE_DIGITS[d] + unit)
            elif out:
                zero = True
        return "".join(out)

    parts: list[str] = []
    unit_index = 0
    units = ("", "万", "亿", "兆")
    groups = []
    while n:
        groups.append(n % 10000)
        n //= 10000
    for unit_index in range(len(groups) - 1, -1, -1):
        g = groups[unit_index]
        if g:
            if parts and g < 1000:
                parts.append("零")
            parts.append(below_10000(g) + units[unit_index])
        elif parts and parts[-1] != "零":
            parts.append("零")
    text = "".join(parts).rstrip("零")
    if text.startswith("一十"):
        text = text[1:]            # 十一, not 一十一
    return text


def announcement(right: int, left: int) -> tuple[str | None, int, int, str]:
    """The 释获者's words for a round: (winner, 纯, 奇, text).

    「二算为纯…一算为奇」; 「若右胜，则曰：右贤于左。若左胜，则曰：左贤于右。以纯数告。
    若有奇者，亦曰奇。若左右钧，则左右各执一算以告，曰：左右钧。」 The 贤获 is the
    difference |右 − 左| in 算 (疏 「左右数齐，有馀则贤获」).
    """
    d = abs(int(right) - int(left))
    if d == 0:
        return None, 0, 0, "左右钧"
    winner, loser = ("右", "左") if right > left else ("左", "右")
    chun, qi = divmod(d, 2)
    text = f"{winner}贤于{loser}"
    if chun:
        text += f"{chinese_number(chun)}纯"
    if qi:
        text += "一奇"
    return winner, chun, qi, text


def tallies(round_: Codes, role: Codes, released: Mask,
            not_judged: Mask | None = None) -> list[dict[str, Any]]:
    """Per scored round present (2, 3): 算 on the 右 (上射) and the 左 (下射), and the announcement.

    「上射于右，下射于左」. Round 1 releases nothing (「获而未释获」) and is not announced.
    With ``not_judged`` (shots left out, :func:`withhold`) each round also counts them.
    """
    round_ = np.asarray(round_)
    role = np.asarray(role)
    released = np.asarray(released, dtype=bool)
    key = round_.astype(np.int64) * 2 + role
    counts = np.bincount(key[released], minlength=8).reshape(4, 2)
    present = np.unique(round_)
    out = []
    for r in (2, 3):
        if r not in present:
            continue
        right, left = int(counts[r, SHANG]), int(counts[r, XIA])
        winner, chun, qi, text = announcement(right, left)
        out.append({"round": r, "右": right, "左": left, "winner": winner, "chun": chun,
                    "qi": qi, "announcement": text})
        if not_judged is not None:
            out[-1]["not_judged"] = int((np.asarray(not_judged, dtype=bool) & (round_ == r)).sum())
    return out


def withhold(v: Verdict, round_: Codes, role: Codes, mask: Mask, reason: int) -> Verdict:
    """``v`` with the shots of ``mask`` not judged (``reason``, one of :data:`NOT_JUDGED`): not
    released, no beat, left out of the tallies, which count them (``not_judged``)."""
    mask = np.asarray(mask, dtype=bool)
    reasons = np.where(mask, np.int8(reason), v.reason).astype(np.int8)
    released = v.released & ~mask
    beat = np.where(mask, np.nan, v.nearest_beat)
    off = np.where(mask, np.nan, v.offset_s)
    return Verdict(v.clock_s, beat, off, v.on_beat & ~mask, released, reasons,
                   tallies(round_, role, released, np.isin(reasons, NOT_JUDGED)))


@dataclass(frozen=True)
class Verdict:
    """Every shot's verdict (arrays in input order) and the per-round tallies."""

    clock_s: Seconds       # shot time on the timeline clock (time + offset), s
    nearest_beat: Seconds  # nearest 建鼓 stroke, timeline s; NaN outside round 3
    offset_s: Seconds      # clock_s − nearest_beat, s; NaN outside round 3
    on_beat: Mask       # bool; only meaningful in round 3
    released: Mask      # bool
    reason: npt.NDArray[np.int8]        # int8 index into REASONS
    tallies: list[dict[str, Any]]


def huo_called(rank: Codes, target: Codes, result: Codes, pair: Codes,
               settings: Settings = Settings()) -> Mask:
    """Whether the 获者 calls 获 after each shot: the rules of :func:`decide` without the round-1
    and the drum rules (the 获者 at the 侯 calls the hit; whether a 算 is laid is the 释获者's).

    So: any 侯 the 公 touches (「唯公所中，中三侯皆获」; his 着侯 by O21), and for everyone else
    贯 on his own (or his senior partner's) 侯 (「射者非其侯，中之不获」; 「不贯不释」).
    """
    n = len(np.asarray(result))
    released, _ = decide(np.full(n, 2, dtype=np.int8), rank, target, result,
                         hou_of_pairs(rank, pair, settings.own_hou), np.ones(n, dtype=bool), settings)
    return released


def _archer_round_key(round_: npt.ArrayLike, archers: Sequence[str]) -> npt.NDArray[np.int64]:
    """One int64 per shot, equal for the shots of one archer in one round."""
    _, who = np.unique(np.array(archers, dtype=object).astype(str), return_inverse=True)
    return who.astype(np.int64) * 4 + np.asarray(round_)


def arrow_numbers(round_: npt.ArrayLike, archers: Sequence[str],
                  time_s: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Each shot's number among its archer's shots of its round (1-based, in time order; equal
    times in input order)."""
    key = _archer_round_key(round_, archers)
    order = np.lexsort((np.asarray(time_s, dtype=np.float64), key))     # by key, then time
    ks = key[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ks)) + 1]
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(ks)]))
    numbers = np.empty(len(ks), dtype=np.int64)
    numbers[order] = np.arange(len(ks)) - run_start + 1
    return numbers


def over_four(round_: npt.ArrayLike, archers: Sequence[str]) -> list[tuple[int, str, int]]:
    """(round, archer, arrows) for every archer who looses more than 乘矢 (four arrows) in a round,
    in order of first appearance."""
    if not len(archers):
        return []
    _, first, counts = np.unique(_archer_round_key(round_, archers), return_index=True,
                                 return_counts=True)
    many = np.sort(first[counts > MAX_ARROWS])
    by_first = dict(zip(first.tolist(), counts.tolist()))
    rounds = np.asarray(round_)
    return [(int(rounds[i]), archers[i], by_first[i]) for i in many.tolist()]


def evaluate(round_: npt.ArrayLike, rank: Codes, role: Codes, target: Codes,
             result: Codes, pair: Codes, time_s: npt.ArrayLike, beats_s: npt.ArrayLike,
             offset_s: float = 0.0,
             settings: Settings = Settings(), bound_s: npt.ArrayLike | None = None) -> Verdict:
    """All the rules for a whole shot log: nearest beats for round 3, the verdicts, the tallies.

    ``time_s`` is on the log's clock; ``offset_s`` moves it onto the timeline's
    (timeline = time + offset). ``beats_s``: ascending 建鼓 stroke times, timeline seconds.
    ``bound_s`` (one per shot, NaN where none; ``check --own-jie``): the stroke of the shot's own
    shooting 节, which alone it must meet instead of the nearest of ``beats_s``.
    """
    round_ = np.asarray(round_)
    clock = np.asarray(time_s, dtype=np.float64) + float(offset_s)
    n = len(clock)
    beat = np.full(n, np.nan)
    off = np.full(n, np.nan)
    r3 = round_ == 3
    beats_s = np.asarray(beats_s, dtype=np.float64)
    if bound_s is not None:
        beat[r3] = np.asarray(bound_s, dtype=np.float64)[r3]
        off[r3] = clock[r3] - beat[r3]
    elif r3.any() and len(beats_s):
        k, off[r3] = nearest(clock[r3], beats_s)
        beat[r3] = beats_s[k]
    ok = on_beat(off, settings.tolerance_s)          # NaN compares False
    must = hou_of_pairs(rank, pair, settings.own_hou)
    released, reason = decide(round_, rank, target, result, must, ok, settings)
    return Verdict(clock, beat, off, ok, released, reason, tallies(round_, role, released))


def rests_on_drum(shots: Shots, settings: Settings) -> Mask:
    """True for a round-3 shot released on a stroke and refused off it (the rules run both ways)."""
    n = len(shots)
    must = hou_of_pairs(shots.rank, shots.pair, settings.own_hou)
    on, _ = decide(shots.round, shots.rank, shots.target, shots.result, must,
                   np.ones(n, dtype=bool), settings)
    off, _ = decide(shots.round, shots.rank, shots.target, shots.result, must,
                    np.zeros(n, dtype=bool), settings)
    return np.asarray((on != off) & (shots.round == 3))


def evaluate_shots(shots: Shots, beats_s: npt.ArrayLike, offset_s: float = 0.0,
                   settings: Settings = Settings(), bound_s: npt.ArrayLike | None = None) -> Verdict:
    """:func:`evaluate` on a :class:`yuexuan.scoring.shots.Shots`."""
    return evaluate(shots.round, shots.rank, shots.role, shots.target, shots.result, shots.pair,
                    shots.time, beats_s, offset_s, settings, bound_s)


__all__ = ["Verdict", "evaluate", "evaluate_shots", "Settings", "huo_called", "arrow_numbers",
           "over_four", "MAX_ARROWS", "hou_of_pairs", "withhold", "NOT_JUDGED", "rests_on_drum",
           "on_beat", "decide", "tallies", "announcement", "chinese_number", "REASONS", "RULES"]

"""The calls of the shooting: the 获者's 获 after a hit, the 负侯者's 诺 (去侯 and 取矢), the
大射正's 留 / 扬 / 方 on the 公's missed arrows."""

from __future__ import annotations

from typing import Any

from yuexuan.compiler.builder import CALL_DELAY_S, CALL_LEN_S, CALL_STEP_S, Builder, Placed
from yuexuan.rite import cuesheet
from yuexuan.rite import variants as variants_mod
from yuexuan.rite.cuesheet_records import CueSpec, Pair
from yuexuan.rite.cuesheet_roster import miss_place
from yuexuan.rite.tuning import parse_pitch, wusheng
from yuexuan.rite.vocabulary import ZHENG_CALLS

#: the 大射正 speaks once the 公's arrow has come down: 「以矢行告于公」 [001]. INFERENCE: the 物 to
#: the 大侯 is about 129 m (ceremony/courtyard.toml), some 2.3 s of flight at about 55 m/s (OUTSIDE).
ZHENG_DELAY_S = 2.5
ZHENG_LEN_S = 0.7         # one spoken syllable, s
ZHENG_VELOCITY = 90


def huo_calls(b: Builder, spec: CueSpec, t_arrow: float) -> None:
    """The 获者's two calls after a hit: 举旌以宫 (loud), 偃旌以商 (soft)."""
    caller = b.insts.get("获者")
    if caller is None or not b.available(caller):
        return
    ws = wusheng(b.sheet.gong.lv)
    for (delay, length), (sheng, vel) in zip(zip(CALL_DELAY_S, CALL_LEN_S), (("宫", 100), ("商", 60))):
        b.note(spec, t_arrow + delay, length, caller, parse_pitch(ws[sheng]), vel, lyric="获", key="calls")


def zheng_calls(b: Builder, spec: CueSpec, t_arrow: float, where: str) -> None:
    """The 大射正's spoken call on a 公's arrow that missed, :data:`ZHENG_DELAY_S` after it was
    loosed at ``t_arrow`` s: ``where`` 留 (low or short), 扬 (high, over), 方 (left or right) —
    「下曰留，上曰扬，左右曰方」 [001]; 注 「若不中，使君当知而改其度」 [000]."""
    if where not in ZHENG_CALLS:
        raise ValueError(f"the 大射正 calls one of {ZHENG_CALLS}, not {where!r}")
    caller = b.insts.get("大射正")
    if caller is None or not b.available(caller):
        return
    b.note(spec, t_arrow + ZHENG_DELAY_S, ZHENG_LEN_S, caller, None, ZHENG_VELOCITY, lyric=where,
           key="calls", spoken=True)


def arrow_calls(b: Builder, spec: CueSpec, pair: Pair, round_: int, k: int, t_arrow: float) -> None:
    """The calls that follow the k-th arrow (0-based, shooting order) of ``pair`` in ``round_``,
    loosed at ``t_arrow`` s, by the cue sheet's ``hits`` marks: the 获者's on a hit, the 大射正's
    on a miss of the 公 whose place is marked (a ``.`` miss of the 公 gets a warning, no call)."""
    if pair.hit(round_, k):
        huo_calls(b, spec, t_arrow)
        return
    _, archer = pair.shooter(k)
    if archer.rank != "公":
        return
    where = miss_place(pair, round_, k)
    if where is not None:
        zheng_calls(b, spec, t_arrow, where)
    elif round_ <= len(pair.hits) and k < len(pair.hits[round_ - 1]):
        b.warnings.append(f"{b.sheet.file}: pair {pair.id!r} round {round_} arrow {k + 1}: the 公's miss "
                          "has no place (留, 扬 or 方), so the 大射正 does not call it")


def calls_cue(b: Builder, spec: CueSpec, t0: float, vdefs: dict[str, Any]) -> Placed:
    """The 负侯者's calls at their offsets; the beat is :data:`CALL_STEP_S`.

    A call marked ``plain`` is spoken (no pitch) unless O16 (``fuhou_round3``) restores 宫 and 商;
    under O15 (``fuhou_gongshang``) 张尔岐 a call is held until the next one starts."""
    calls = list(spec.calls)
    gongshang = variants_mod.effect(vdefs, b.sheet.variants, "fuhou_round3")["gongshang"]
    if calls and all(c.plain for c in calls) and gongshang:
        c = calls[0]
        calls = [cuesheet.Call(c.who, "宫", c.word, 0.0, 3.5, 100),
                 cuesheet.Call(c.who, "商", c.word, 5.0, 2.5, 90)]
    held = variants_mod.effect(vdefs, b.sheet.variants, "fuhou_gongshang")["held"] \
        if "fuhou_gongshang" in vdefs else False
    ws = wusheng(b.sheet.gong.lv)
    end = t0
    for n, c in enumerate(calls):
        seconds = c.seconds
        nxt = calls[n + 1] if n + 1 < len(calls) else None
        if held and nxt is not None and nxt.who == c.who and not (c.plain or nxt.plain) and nxt.at > c.at:
            seconds = nxt.at - c.at                   # 以宫趋: the 宫 carried to the 商
        inst = b.insts[c.who]
        if c.plain and not gongshang:
            b.note(spec, t0 + c.at, seconds, inst, None, c.velocity, lyric=c.word or None, key="calls",
                   spoken=True)
        else:
            b.note(spec, t0 + c.at, seconds, inst, parse_pitch(ws[c.sheng]), c.velocity,
                   lyric=c.word or None, key="calls")
        end = max(end, t0 + c.at + seconds)
    return Placed(end, [t0], CALL_STEP_S)

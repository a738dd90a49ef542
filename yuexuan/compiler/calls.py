"""The calls of the shooting: the 获者's 获 after a hit, the 负侯者's 诺 (去侯 and 取矢), the
host's officer's (the 大射正's) 留 / 扬 / 方 on the host's missed arrows.

Each 侯 of the rite has its own 获者 at its own 乏 (the body 获者·<侯> the compiler makes from
instruments/获者.toml: 「各去其侯西十北十」, one 乏 per 侯), and a hit is called by the 获者 of the
侯 it struck; the 负侯者 are one body per 侯 too (负侯者·…), and a call whose ``who`` is the group
负侯者 sounds them all (「负侯皆许诺」). Which 侯 a pair shoots and who the host is: the timeline's
``rite`` (compiler/roster.py)."""

from __future__ import annotations

from typing import Any

from yuexuan.compiler.builder import CALL_DELAY_S, CALL_LEN_S, CALL_STEP_S, Builder, Placed
from yuexuan.rite import cuesheet
from yuexuan.rite import variants as variants_mod
from yuexuan.rite.cuesheet_records import CueSpec, Pair
from yuexuan.rite.cuesheet_roster import miss_place
from yuexuan.rite.instruments import members
from yuexuan.rite.tuning import parse_pitch, wusheng
from yuexuan.rite.vocabulary import ZHENG_CALLS

#: the 大射正 speaks once the 公's arrow has come down: 「以矢行告于公」 [001]. INFERENCE: the 物 to
#: the 大侯 is about 129 m (ceremony/courtyard.toml), some 2.3 s of flight at about 55 m/s (OUTSIDE).
ZHENG_DELAY_S = 2.5
ZHENG_LEN_S = 0.7         # one spoken syllable, s
ZHENG_VELOCITY = 90


def pair_hou(b: Builder, pair: Pair) -> str:
    """The 侯 ``pair`` shoots: its senior archer's (「公射大侯，大夫射参，士射干」; 「卑者与尊者为耦，
    不异侯」), by the rite's table, the checker's (the timeline's ``rite``)."""
    assert b.rite is not None
    return b.rite.pair_hou(pair.upper.rank, pair.lower.rank)


def huo_calls(b: Builder, spec: CueSpec, t_arrow: float, hou: str) -> None:
    """The two calls of the 获者 of ``hou`` after a hit on it: 举旌以宫 (loud), 偃旌以商 (soft)."""
    assert b.rite is not None
    caller = b.insts.get(next(h.huozhe for h in b.rite.hou if h.name == hou))
    if caller is None or not b.available(caller):
        return
    ws = wusheng(b.sheet.gong.lv)
    for (delay, length), (sheng, vel) in zip(zip(CALL_DELAY_S, CALL_LEN_S), (("宫", 100), ("商", 60))):
        b.note(spec, t_arrow + delay, length, caller, parse_pitch(ws[sheng]), vel, lyric="获", key="calls")


def zheng_calls(b: Builder, spec: CueSpec, t_arrow: float, where: str) -> None:
    """The spoken call on a host's arrow that missed, by the officer the rite names (the 大射正),
    :data:`ZHENG_DELAY_S` after it was loosed at ``t_arrow`` s: ``where`` 留 (low or short), 扬
    (high, over), 方 (left or right) — 「下曰留，上曰扬，左右曰方」 [001]; 注 「若不中，使君当知而改其度」
    [000]. None where the rite has no such officer."""
    if where not in ZHENG_CALLS:
        raise ValueError(f"the calls on a miss are {ZHENG_CALLS}, not {where!r}")
    host = b.rite.host if b.rite is not None else None
    if host is None or host.misses_called_by is None:
        return
    caller = b.insts.get(host.misses_called_by)
    if caller is None or not b.available(caller):
        return
    b.note(spec, t_arrow + ZHENG_DELAY_S, ZHENG_LEN_S, caller, None, ZHENG_VELOCITY, lyric=where,
           key="calls", spoken=True)


def arrow_calls(b: Builder, spec: CueSpec, pair: Pair, round_: int, k: int, t_arrow: float) -> None:
    """The calls that follow the k-th arrow (0-based, shooting order) of ``pair`` in ``round_``,
    loosed at ``t_arrow`` s, by the cue sheet's ``hits`` marks: on a hit the 获者's of the pair's
    侯 (:func:`pair_hou`), on a miss of the host whose place is marked his officer's (a ``.`` miss
    of the host gets a warning, no call)."""
    if pair.hit(round_, k):
        huo_calls(b, spec, t_arrow, pair_hou(b, pair))
        return
    _, archer = pair.shooter(k)
    host = b.rite.host if b.rite is not None else None
    if not archer.host or host is None or host.misses_called_by is None:
        return
    where = miss_place(pair, round_, k)
    if where is not None:
        zheng_calls(b, spec, t_arrow, where)
    elif round_ <= len(pair.hits) and k < len(pair.hits[round_ - 1]):
        b.warnings.append(f"{b.sheet.file}: pair {pair.id!r} round {round_} arrow {k + 1}: the "
                          f"{archer.rank}'s miss has no place (留, 扬 or 方), so the "
                          f"{host.misses_called_by} does not call it")


def calls_cue(b: Builder, spec: CueSpec, t0: float, vdefs: dict[str, Any]) -> Placed:
    """A calls cue: the 负侯者's calls of ``spec`` from ``t0`` (:func:`sound_calls`); the beat is
    :data:`CALL_STEP_S`."""
    return Placed(sound_calls(b, spec, t0, vdefs), [t0], CALL_STEP_S)


def sound_calls(b: Builder, spec: CueSpec, t0: float, vdefs: dict[str, Any]) -> float:
    """Sound ``spec``'s calls at their offsets from ``t0`` s, each by every body its ``who`` names;
    returns when the last ends (``t0`` for none). A 射节 cue's calls are the re-posting of the 负侯
    before the 公 (O17 连奏: :func:`yuexuan.compiler.shooting.shejie_cue` gives ``t0``).

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
        for inst in (b.insts[name] for name in members(b.insts, c.who)):
            if not b.available(inst):
                continue
            if c.plain and not gongshang:
                b.note(spec, t0 + c.at, seconds, inst, None, c.velocity, lyric=c.word or None, key="calls",
                       spoken=True)
            else:
                b.note(spec, t0 + c.at, seconds, inst, parse_pitch(ws[c.sheng]), c.velocity,
                       lyric=c.word or None, key="calls")
        end = max(end, t0 + c.at + seconds)
    return end

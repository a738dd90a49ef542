"""The calls of the shooting: the 获者's 获 after a hit, the 负侯者's 诺."""

from __future__ import annotations

from yuexuan.compiler.builder import CALL_DELAY_S, CALL_LEN_S, CALL_STEP_S, Builder, Placed
from yuexuan.rite import cuesheet, variants as variants_mod
from yuexuan.rite.tuning import parse_pitch, wusheng


def huo_calls(b: Builder, spec, t_arrow: float):
    """The 获者's two calls after a hit: 举旌以宫 (loud), 偃旌以商 (soft)."""
    caller = b.insts.get("获者")
    if caller is None or not b.available(caller):
        return
    ws = wusheng(b.sheet.gong.lv)
    for (delay, length), (sheng, vel) in zip(zip(CALL_DELAY_S, CALL_LEN_S), (("宫", 100), ("商", 60))):
        b.note(spec, t_arrow + delay, length, caller, parse_pitch(ws[sheng]), vel, lyric="获", key="calls")


def calls_cue(b: Builder, spec, t0: float, vdefs: dict) -> Placed:
    """The 负侯者's calls at their offsets; the beat is :data:`CALL_STEP_S`."""
    calls = list(spec.calls)
    gongshang = variants_mod.effect(vdefs, b.sheet.variants, "fuhou_round3")["gongshang"]
    if calls and all(c.plain for c in calls) and gongshang:
        c = calls[0]
        calls = [cuesheet.Call(c.who, "宫", c.word, 0.0, 3.5, 100), cuesheet.Call(c.who, "商", c.word, 5.0, 2.5, 90)]
    ws = wusheng(b.sheet.gong.lv)
    end = t0
    for c in calls:
        inst = b.insts[c.who]
        b.note(spec, t0 + c.at, c.seconds, inst, parse_pitch(ws[c.sheng]), c.velocity, lyric=c.word or None,
               key="calls")
        end = max(end, t0 + c.at + c.seconds)
    return Placed(end, [t0], CALL_STEP_S)

"""Calls from a shot log (``--shots LOG``, docs/check.md): the 获者's 获 (by the 获者 of the 侯 the
row says was hit) and the 大射正's 留 / 扬 / 方 at the log's times instead of the cue sheet's
``hits`` strings.

A round the log has rows for is "covered": its shooting cues make no calls from the ``hits``
strings (:meth:`Builder.strings_decide`) and each row of that round whose time (timeline seconds of
the compiled selection) falls within such a cue sounds its calls in that cue. Which hits the 获者
calls is the checker's rule (:func:`yuexuan.scoring.shiho.huo_called`: one source of truth).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from yuexuan.compiler.builder import Builder
from yuexuan.compiler.calls import huo_calls, zheng_calls
from yuexuan.rite import variants as variants_mod
from yuexuan.rite.cuesheet_records import SHOOTING_KINDS, CueSpec
from yuexuan.rite.vocabulary import RESULTS, TARGETS, ZHENG_CALLS
from yuexuan.scoring import shiho
from yuexuan.scoring.shots import Shots

#: the log's result codes the 大射正 calls (:data:`~yuexuan.rite.vocabulary.ZHENG_CALLS`)
_ZHENG_CODES = np.array([RESULTS.index(w) for w in ZHENG_CALLS])


def cue_round(spec: CueSpec) -> int | None:
    """The round a shooting cue holds: its ``round``, else 1 (shoot) or 3 (shejie); None for a cue
    that does not shoot."""
    if spec.kind not in SHOOTING_KINDS:
        return None
    return spec.round or (1 if spec.kind == "shoot" else 3)


class LoggedCalls:
    """The calls of one shot log, sounded cue by cue while compiling; remembers the rows used."""

    def __init__(self, shots: Shots, vdefs: dict[str, Any], chosen: dict[str, str]) -> None:
        self.shots = shots
        counted = variants_mod.effect(vdefs, chosen, "gong_outside_hu")["counted"]      # O21
        settings = shiho.Settings(gong_outside_hu=counted)
        self.huo = shiho.huo_called(shots.rank, shots.target, shots.result, shots.pair, settings)
        self.zheng = (shots.rank == shiho.GONG) & np.isin(shots.result, _ZHENG_CODES)
        self.used = np.zeros(len(shots), dtype=bool)

    @property
    def rounds(self) -> frozenset[int]:
        """The rounds the log covers."""
        return frozenset(int(r) for r in np.unique(self.shots.round))

    def sound(self, b: Builder, spec: CueSpec, t0: float, end: float) -> None:
        """Sound the calls of the log's rows of ``spec``'s round loosed within [t0, end] s."""
        s = self.shots
        rows = np.flatnonzero((s.round == cue_round(spec)) & (s.time >= t0) & (s.time <= end)
                              & ~self.used)
        self.used[rows] = True
        for i in rows[self.huo[rows]].tolist():
            huo_calls(b, spec, float(s.time[i]), TARGETS[s.target[i]])
        for i in rows[self.zheng[rows]].tolist():
            zheng_calls(b, spec, float(s.time[i]), RESULTS[s.result[i]])

    def warnings(self) -> list[str]:
        """One warning for the rows that fell in no compiled cue of their round (not sounded)."""
        left = np.flatnonzero(~self.used)
        if not left.size:
            return []
        lines = ", ".join(str(int(x)) for x in self.shots.lines[left[:5]])
        more = f" and {left.size - 5} more" if left.size > 5 else ""
        return [f"{self.shots.path}: {left.size} shot(s) (line {lines}{more}) fall within no compiled "
                "shooting cue of their round; their calls are not sounded"]

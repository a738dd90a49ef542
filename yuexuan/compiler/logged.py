"""Calls from a shot log (``--shots LOG``, docs/check.md): the 获者's 获 (by the 获者 of the 侯 the
row says was hit) and the 大射正's 留 / 扬 / 方 at the log's times instead of the cue sheet's
``hits`` strings.

A round the log has rows for is "covered": its shooting cues make no calls from the ``hits``
strings (:meth:`Builder.strings_decide`) and each row of that round whose time (timeline seconds of
the compiled selection) falls within such a cue sounds its calls in that cue. A row of the round
that falls in none of them but after the previous round's shooting and before its own round's
last shooting cue ends (a hit logged before the 射节 starts, or between two of its cues) is called
too (:meth:`LoggedCalls.sound_between`): the 获者 calls a hit on his 侯 whatever the drum, it is
the 释获者 who holds back the 算. Which hits the 获者 calls is the checker's rule
(:func:`yuexuan.scoring.tally.huo_called`: one source of truth).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from yuexuan.compiler.builder import Builder
from yuexuan.compiler.calls import huo_calls, zheng_calls
from yuexuan.rite.cuesheet_records import SHOOTING_KINDS, CueSpec
from yuexuan.rite.vocabulary import RESULTS, ZHENG_CALLS
from yuexuan.scoring import rules, tally
from yuexuan.scoring.shots import Shots
from yuexuan.timeline import Cue
from yuexuan.timeline_rite import Rite

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

    def __init__(self, shots: Shots, rite: Rite) -> None:
        """``shots`` coded in ``rite``'s order (:func:`yuexuan.scoring.shots.for_rite`)."""
        self.shots, self.rite = shots, rite
        settings = rules.settings_for(rite)          # O21 as the rite's host has it
        self.huo = tally.huo_called(shots.rank, shots.target, shots.result, shots.pair, settings)
        self.zheng = (shots.rank == settings.host) & np.isin(shots.result, _ZHENG_CODES)
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
        for i in rows.tolist():
            self._call(b, spec, i)

    def _call(self, b: Builder, spec: CueSpec, i: int) -> None:
        """The calls of row ``i`` (none for a row nobody calls), as notes of ``spec``."""
        s = self.shots
        if self.huo[i]:
            huo_calls(b, spec, float(s.time[i]), self.rite.hou_names[s.target[i]])
        elif self.zheng[i]:
            zheng_calls(b, spec, float(s.time[i]), RESULTS[s.result[i]])

    def sound_between(self, b: Builder, placed: list[tuple[CueSpec, Cue]]) -> list[Cue]:
        """Call the rows :meth:`sound` left whose time lies within their round but in none of its
        shooting cues: after the last shooting cue of an earlier round ends (or from the start)
        and before the last shooting cue of their own round ends. Each call note goes to the last
        cue begun by its onset, whose end moves up to that onset when it falls after it (a call in
        the gap between two cues); returns the cues, so changed. ``placed``: (spec, cue) of every
        compiled cue, in order."""
        cues = [c for _, c in placed]
        s = self.shots
        for rnd in sorted(self.rounds):
            own = [k for k, (spec, _) in enumerate(placed) if cue_round(spec) == rnd]
            if not own:
                continue
            before = [c.end for spec, c in placed if (cue_round(spec) or rnd) < rnd]
            lo, hi = max(before, default=-np.inf), cues[own[-1]].end
            rows = np.flatnonzero((s.round == rnd) & (s.time >= lo) & (s.time <= hi) & ~self.used)
            self.used[rows] = True
            spec = placed[own[0]][0]
            for i in rows.tolist():
                first = len(b.notes)
                self._call(b, spec, i)
                for n in range(first, len(b.notes)):
                    note = b.notes[n]
                    k = max(j for j, c in enumerate(cues) if c.start <= note.time or j == 0)
                    c = cues[k]
                    b.notes[n] = replace(note, cue=c.id)
                    names = {*c.instruments, note.instrument}
                    cues[k] = replace(c, end=max(c.end, note.time),
                                      instruments=tuple(x for x in b.insts if x in names))
        return cues

    def warnings(self) -> list[str]:
        """One warning for the rows that fell in no compiled cue of their round (not sounded)."""
        left = np.flatnonzero(~self.used)
        if not left.size:
            return []
        lines = ", ".join(str(int(x)) for x in self.shots.lines[left[:5]])
        more = f" and {left.size - 5} more" if left.size > 5 else ""
        return [f"{self.shots.path}: {left.size} shot(s) (line {lines}{more}) fall within no compiled "
                "shooting cue of their round; their calls are not sounded"]

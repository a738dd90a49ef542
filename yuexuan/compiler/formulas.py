"""The officers' spoken formulas (``speech`` cues): one spoken note per syllable with its ``lyric``,
and the 释获者's count at the 数获, the same count ``check`` computes for that round.

The count of a round comes from the shot log (``--shots LOG``) when the log has rows of that round,
judged by :func:`yuexuan.scoring.tally.evaluate_shots` against the 射节 strokes compiled so far with
the settings ``check`` uses (:func:`yuexuan.scoring.rules.settings_for`); else from the cue sheet's
``hits`` strings (every ``x`` a 贯 on the pair's 侯, on the drum), through the same
:func:`~yuexuan.scoring.tally.decide` and :func:`~yuexuan.scoring.tally.tallies`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from yuexuan.compiler import prosody
from yuexuan.compiler.builder import Builder, Placed
from yuexuan.compiler.logged import cue_round
from yuexuan.errors import UserError
from yuexuan.rite.cuesheet_records import SHOOTING_KINDS, CueSheet, CueSpec
from yuexuan.rite.cuesheet_speech import slots
from yuexuan.rite.vocabulary import ARCHER_RANKS, ROLES
from yuexuan.scoring import rules, tally
from yuexuan.scoring.shots import Shots


class Tally:
    """The 释获者's count of each counted round, from the log or the cue sheet's ``hits``."""

    def __init__(self, sheet: CueSheet, specs: Sequence[CueSpec], vdefs: dict[str, Any],
                 shots: Shots | None = None) -> None:
        self.sheet, self.specs, self.shots = sheet, specs, shots
        self.settings = rules.settings_for(sheet.variants, vdefs)

    def words(self, b: Builder, round_: int) -> str:
        """The announcement of ``round_`` (「右贤于左…纯…奇」 or 「左右钧」)."""
        s = self.shots
        if s is not None and (s.round == round_).any():
            beats = np.sort(np.array([x.time for x in b.beats], dtype=np.float64))
            verdict = tally.evaluate_shots(s, beats, 0.0, self.settings)
        else:
            verdict = self._from_hits(round_)
        return next(str(t["announcement"]) for t in verdict.tallies if t["round"] == round_)

    def _from_hits(self, round_: int) -> tally.Verdict:
        """The verdict of the cue sheet's ``hits`` for ``round_``: every arrow of the pairs its
        shooting cues name, a hit being 贯 on the pair's 侯 and on the drum."""
        rows: list[tuple[int, int, bool, int]] = []        # rank, role, hit, pair
        for spec in self.specs:
            if spec.kind not in SHOOTING_KINDS or cue_round(spec) != round_:
                continue
            for n, pair in enumerate(self.sheet.pair_selection(spec.pairs)):
                for k in range(8):
                    role, archer = pair.shooter(k)
                    rows.append((ARCHER_RANKS.index(archer.rank), ROLES.index(role), pair.hit(round_, k), n))
        a = np.array(rows, dtype=np.int64).reshape(-1, 4)
        ranks, roles, hits, pairs = a[:, 0], a[:, 1], a[:, 2].astype(bool), a[:, 3]
        rnd = np.full(len(a), round_, dtype=np.int8)
        must = tally.hou_of_pairs(ranks, pairs)
        result = np.where(hits, tally.GUAN, tally.BU_ZHONG)
        released, reason = tally.decide(rnd, ranks, must, result, must, np.ones(len(a), dtype=bool),
                                        self.settings)
        nan = np.full(len(a), np.nan)
        return tally.Verdict(nan, nan, nan, np.ones(len(a), dtype=bool), released, reason,
                             tally.tallies(rnd, roles, released))


def speech_cue(b: Builder, spec: CueSpec, t0: float, tally: Tally) -> Placed:
    """Each utterance of ``spec`` as spoken notes (no pitch), one per syllable with its ``lyric``
    and F0 contour, laid out by :func:`yuexuan.compiler.prosody.utterance` in the utterance's span
    of a slot of ``syllable_seconds`` per syllable (a pause at punctuation is one slot); a count is fitted
    into its window ``seconds`` (its syllables closer together when they would overrun it) and
    named in the cue's ``piece`` (「数获：…」), which the captions show."""
    end, starts, counted = t0, [], []
    for u in spec.speech:
        inst = b.insts[u.who]
        words = tally.words(b, u.tally) if u.tally is not None else u.words
        said = slots(words)
        if u.tally is not None:
            counted.append(words)
        step = u.syllable_seconds
        if u.seconds is not None and len(said) * step > u.seconds:
            step = u.seconds / len(said)
        if not b.available(inst):
            raise UserError(f"cue {spec.id!r}: {u.who} is not there at a {b.sheet.rank}'s rite",
                            file=b.sheet.file, line=spec.line, key="speech")
        t = t0 + u.at
        starts.append(t)
        for s in prosody.utterance(said, step):
            b.note(spec, t + s.onset_s, s.duration_s, inst, None, u.velocity, lyric=s.syllable, key="speech",
                   spoken=True, f0_st=s.f0_st)
        end = max(end, t + (u.seconds if u.seconds is not None else len(said) * step))
    # a count is named with the cue's piece, so the captions say it: 「数获：右贤于左二纯」
    piece = f"{spec.piece}：{'；'.join(counted)}" if counted and spec.piece else None
    return Placed(end, sorted(starts), spec.speech[0].syllable_seconds, piece=piece)

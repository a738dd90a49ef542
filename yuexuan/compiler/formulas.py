"""The officers' spoken formulas (``speech`` cues): one spoken note per syllable with its ``lyric``,
and the 释获者's count at the 数获, the same count ``check`` computes for that round.

A formula may name what the rank gives (:func:`at_rank`): ``{射节}`` the piece the rank shoots to,
``{NAME}`` the rank's formula NAME (ceremony/<rite>.toml ``formulas``, e.g. the 司射's 誓); a cue
naming one the rank has not is left out, as is a cue of a piece the rank lacks (``lacks``) and a
cue ``when = "矢不备"`` unless the shot log leaves an arrow of its round unrecovered.

The count of a round comes from the shot log (``--shots LOG``) when the log has rows of that round,
judged by :func:`yuexuan.scoring.tally.evaluate_shots` against the 射节 strokes compiled so far with
the settings ``check`` uses (:func:`yuexuan.scoring.rules.settings_for`); else from the cue sheet's
``hits`` strings (every ``x`` a 贯 on the pair's 侯, on the drum), through the same
:func:`~yuexuan.scoring.tally.decide` and :func:`~yuexuan.scoring.tally.tallies`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from yuexuan.compiler import prosody
from yuexuan.compiler.builder import Builder, Placed
from yuexuan.compiler.logged import cue_round
from yuexuan.errors import UserError
from yuexuan.rite.cuesheet_records import SHOOTING_KINDS, CueSheet, CueSpec
from yuexuan.rite.cuesheet_speech import PLACEHOLDER, SHEJIE_PIECE, slots
from yuexuan.rite.ranks import RankRite
from yuexuan.rite.suspension import Rank
from yuexuan.rite.vocabulary import ROLES
from yuexuan.scoring import rules, tally
from yuexuan.scoring.shots import LOST, Shots
from yuexuan.timeline_rite import Rite as RiteRecord


class Tally:
    """The 释获者's count of each counted round, from the log or the cue sheet's ``hits``."""

    def __init__(self, sheet: CueSheet, specs: Sequence[CueSpec], rite: RiteRecord,
                 shots: Shots | None = None) -> None:
        self.sheet, self.specs, self.shots, self.rite = sheet, specs, shots, rite
        self.settings = rules.settings_for(rite)

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
                    rows.append((self.rite.ranks.index(archer.rank), ROLES.index(role), pair.hit(round_, k),
                                 n))
        a = np.array(rows, dtype=np.int64).reshape(-1, 4)
        ranks, roles, hits, pairs = a[:, 0], a[:, 1], a[:, 2].astype(bool), a[:, 3]
        rnd = np.full(len(a), round_, dtype=np.int8)
        must = tally.hou_of_pairs(ranks, pairs, self.settings.own_hou)
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
    end, starts, counted = t0, list[float](), list[str]()
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
        t = t0 + u.at if u.at is not None else (end + step if starts else t0)   # no `at`: after the last
        starts.append(t)
        for s in prosody.utterance(said, step):
            b.note(spec, t + s.onset_s, s.duration_s, inst, None, u.velocity, lyric=s.syllable, key="speech",
                   spoken=True, f0_st=s.f0_st)
        end = max(end, t + (u.seconds if u.seconds is not None else len(said) * step))
    # a count is named with the cue's piece, so the captions say it: 「数获：右贤于左二纯」
    piece = f"{spec.piece}：{'；'.join(counted)}" if counted and spec.piece else None
    return Placed(end, sorted(starts), spec.speech[0].syllable_seconds, piece=piece)


def shejie_title(cues: Sequence[CueSpec], rank: Rank) -> str:
    """The piece the rank shoots to: a 射节 cue's own piece where the sheet names one, else the
    rank's (ceremony/suspension.toml, 礼记·射义)."""
    return next((c.piece for c in cues if c.kind == "shejie" and c.piece), rank.shejie_piece)


def at_rank(spec: CueSpec, rr: RankRite, rank: str, shejie: str, shots: Shots | None) -> CueSpec | None:
    """``spec`` as the rank's rite has it, or None where it is left out: a cue of a piece the rank
    lacks; a cue ``when = "矢不备"`` unless ``shots`` has a lost arrow (失) of its round; a speech
    cue naming a formula the rank has not. A speech cue's ``{射节}`` and ``{NAME}`` are filled
    in, the formula's source added to the cue's; a cue whose ``wording_of`` is another rank's is
    marked INFERENCE."""
    if spec.piece is not None and spec.piece in rr.lacks:
        return None
    if spec.when is not None:
        lost = shots is not None and bool(((shots.round == spec.round) & (shots.result == LOST)).any())
        if not lost:
            return None
    source = spec.source
    if spec.speech:
        said, added = [], []
        for u in spec.speech:
            names = PLACEHOLDER.findall(u.words)
            if any(n != SHEJIE_PIECE and n not in rr.formulas for n in names):
                return None
            added += [rr.formulas[n].source for n in names if n != SHEJIE_PIECE]
            said.append(replace(u, words=PLACEHOLDER.sub(
                lambda m: shejie if m.group(1) == SHEJIE_PIECE else rr.formulas[m.group(1)].words, u.words)))
        source = "; ".join([source, *dict.fromkeys(added)])
        spec = replace(spec, speech=tuple(said))
    if spec.wording_of is not None and spec.wording_of != rank:
        source += (f"; INFERENCE: the words of the {spec.wording_of}'s rite, said at a {rank}'s")
    return replace(spec, source=source) if source != spec.source else spec

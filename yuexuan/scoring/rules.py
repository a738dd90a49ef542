"""The judging options shared by ``check`` and the live judge (``play --osc``): one setup of the rules.

:func:`add_arguments` declares ``--tolerance``, ``--cue``, ``--strict-gong`` and ``--own-jie``;
:func:`rules_for` turns them and the timeline into :class:`Rules` — the :class:`tally.Settings`
(the roster of the timeline's ``rite``: each rank's 侯, the host and his privileges, the
``gong_exempt`` and ``gong_outside_hu`` variants applied there), the planned 建鼓 strokes
of the 射节 cue(s) and, for ``--own-jie``, the stroke each arrow is bound to. ``check`` and
:class:`yuexuan.live.judge.Judge` both build their rules here, so a verdict given live is the one
``check`` gives on the log.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.scoring import arrow_stroke, tally
from yuexuan.timeline import Beat, Timeline, chosen_cues
from yuexuan.timeline_rite import Rite

DEFAULT_TOLERANCE_S = tally.Settings().tolerance_s


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The judging options (same names and meaning in ``check`` and ``play``)."""
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE_S, metavar="SECONDS",
                   help=f"round 3: a shot meets the drum within ± this of a 建鼓 stroke "
                        f"(default {DEFAULT_TOLERANCE_S}, mir_eval's beat window)")
    p.add_argument("--cue", default=None, metavar="ID",
                   help="the 射节 cue whose beats count (default: every cue of kind shejie)")
    p.add_argument("--strict-gong", action="store_true",
                   help="hold the 公 to the drum in round 3 too (default: the cue sheet's gong_exempt "
                        "variant, which is exempt, 「不以乐志」, unless set to strict)")
    p.add_argument("--own-jie", action="store_true",
                   help="round 3: each arrow must meet the 建鼓 stroke of its own shooting 节 (the "
                        "archer's n-th arrow, the stroke the timeline binds to him; 贾疏 "
                        "「皆四节拾将乘矢」) instead of any stroke of the 射节 (default)")


def finite_seconds(name: str, value: float | None) -> float:
    """``value`` as float seconds; a :class:`UserError` naming ``name`` when not finite."""
    if value is None or not math.isfinite(value):
        raise UserError(f"{name} must be a finite number of seconds, not {value}")
    return float(value)


def tolerance_of(value: float | None) -> float:
    """``--tolerance`` checked: finite and ≥ 0 seconds."""
    tolerance_s = finite_seconds("--tolerance", value)
    if tolerance_s < 0:
        raise UserError(f"--tolerance must be ≥ 0 seconds, not {tolerance_s}")
    return tolerance_s


def shejie_beats(timeline: Timeline, cue: str | None) -> tuple[npt.NDArray[np.float64], list[str]]:
    """The planned 建鼓 strokes (timeline s, ascending) of the 射节 cue(s), and the cue ids."""
    if cue is not None:
        ids = [c.id for c in chosen_cues(timeline, [cue], key="--cue")]
    else:
        ids = [c.id for c in timeline.cues if c.kind == "shejie"]
    wanted = set(ids)
    beats = np.sort(np.array([b.time for b in timeline.beats if b.cue in wanted], dtype=float))
    return beats, ids


@dataclass(frozen=True)
class Rules:
    """How shots are judged: the settings of the open readings and the drum's planned strokes."""

    settings: tally.Settings
    plan_s: npt.NDArray[np.float64]        # planned 建鼓 strokes of the 射节 cue(s), timeline s, ascending
    cue_ids: list[str]          # the 射节 cue ids whose strokes count
    own_jie: bool             # --own-jie: each arrow on its own 节's stroke
    timeline_beats: tuple[Beat, ...]  # the timeline's Beat records (for --own-jie)
    ranks: tuple[str, ...] = ()       # the rite's ranks and 侯 (the timeline's ``rite``): the codes'
    hou: tuple[str, ...] = ()         # order (yuexuan.scoring.shots.for_rite)

    def bound_strokes(self, round_: npt.ArrayLike, archers: Sequence[str],
                      time_s: npt.ArrayLike) -> npt.NDArray[np.float64] | None:
        """--own-jie: the planned stroke bound to each shot (timeline s, NaN where none); None
        without --own-jie (then the nearest stroke of :attr:`plan_s` counts)."""
        if not self.own_jie:
            return None
        return arrow_stroke.own_strokes(self.timeline_beats, self.cue_ids, round_, archers, time_s)


def rules_for(timeline: Timeline, source: DataSource, tolerance_s: float = DEFAULT_TOLERANCE_S,
              strict_gong: bool = False, own_jie: bool = False, cue: str | None = None) -> Rules:
    """The rules for ``timeline`` (its ``rite``: the roster, the 侯, the host) and the options.
    ``source`` is kept for the callers' sake: everything is read from the timeline."""
    del source
    tolerance_s = tolerance_of(tolerance_s)
    plan, cue_ids = shejie_beats(timeline, cue)
    if timeline.rite is None:
        raise UserError("the timeline has no rite (its roster and 侯): recompile the cue sheet")
    settings = settings_for(timeline.rite, tolerance_s, strict_gong)
    return Rules(settings, plan, cue_ids, bool(own_jie), tuple(timeline.beats), timeline.rite.ranks,
                 timeline.rite.hou_names)


def settings_for(rite: Rite, tolerance_s: float = DEFAULT_TOLERANCE_S,
                 strict_gong: bool = False) -> tally.Settings:
    """The :class:`tally.Settings` of a compiled rite (the timeline's ``rite``): each rank's 侯, the
    host and what the rite grants him (O20 and O21 already applied by the compiler; ``strict_gong``,
    ``--strict-gong``, holds him to the drum all the same): what ``check`` judges by, and what the
    compiler's 释获者 counts by (compiler/formulas.py)."""
    hou = rite.hou_names
    own = tuple(hou.index(rite.own_hou(r)) for r in rite.ranks)
    host = rite.host
    if host is None:
        return tally.Settings(tolerance_s=tolerance_s, gong_exempt=False, gong_outside_hu=False,
                              own_hou=own)
    return tally.Settings(tolerance_s=tolerance_s, gong_exempt=host.drum_exempt and not strict_gong,
                          gong_outside_hu=host.outside_hu, own_hou=own, host=rite.ranks.index(host.rank),
                          host_any_hou=host.any_hou, host_near_misses=host.near_misses)


def rules_from_args(args: argparse.Namespace, timeline: Timeline, source: DataSource) -> Rules:
    """:func:`rules_for` with the options of :func:`add_arguments`."""
    return rules_for(timeline, source, args.tolerance, args.strict_gong, args.own_jie, args.cue)

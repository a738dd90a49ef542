"""The default rite's roster for the scoring tests, read from the rite's data (ceremony/dashe.toml),
not restated: its ranks and 侯 (the codes of a shot log read for it) and the settings ``check``
judges an 诸侯's 大射 by."""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

from yuexuan.compiler import roster
from yuexuan.rite import courtyard, ranks, variants
from yuexuan.scoring import rules, tally
from yuexuan.scoring.shots import Shots, for_rite, read_shots
from yuexuan.timeline_rite import Rite


@lru_cache(maxsize=None)
def rite(rank: str = "诸侯") -> Rite:
    """The timeline's ``rite`` of ``rank``'s 大射仪 with the default readings and no roster."""
    data, vdefs = ranks.load(), variants.load()
    rr = ranks.rank_rite(data, rank, vdefs, {})
    yard = courtyard.load()
    return roster.record(data, rr, (), roster.hou_places(data, rr, yard), yard.bu_m, vdefs, {})


RITE = rite()
RANKS, HOU = RITE.ranks, RITE.hou_names          # 公 宾 卿 大夫 士; 大侯 参 干


def settings(**changes) -> tally.Settings:
    """The 诸侯's settings (each rank's 侯, the 公's privileges), ``changes`` applied."""
    return dataclasses.replace(rules.settings_for(RITE), **changes)


def read(path: str | Path) -> Shots:
    """A shot log read and coded for the 诸侯's 大射仪."""
    return for_rite(read_shots(path), RANKS, HOU)

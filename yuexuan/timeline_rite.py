"""The timeline's ``rite``: who shoots in the compiled rite, at which 侯, and the host's privileges.

The compiler fills it from the rite's data (``ceremony/<rite>.toml``, the cue sheet's roster and
the chosen variants); ``check``, the live judge, ``compile --shots`` and a hit sensor's map read
the ranks, the 侯 and the host here, never from the code (docs/timeline.md, "rite"). The rules
that are the same in every rite (释获, 不鼓不释, 纯/奇) stay in :mod:`yuexuan.scoring.tally`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Host:
    """The rite's host as an archer (公, 王, 主人) and the privileges the rite gives him."""

    rank: str                  # his rank in the roster
    looses_first: bool = False  # as 下射 he looses first (注 「公下射也，而先发不留尊也」)
    any_hou: bool = False      # a hit on any 侯 counts (「唯公所中，中三侯皆获」)
    near_misses: bool = False  # 离维纲, 扬触, 梱复 count (「公则释获，众则不与」)
    drum_exempt: bool = False  # round 3 off the drum still counts (「不以乐志」; O20 applied)
    outside_hu: bool = False   # in the 侯 outside the 鹄 counts (O21 applied)
    misses_called_by: str | None = None   # the officer who calls where his misses went (大射正)


@dataclass(frozen=True)
class Hou:
    """One 侯 of the compiled rite, its 侯道 and its callers."""

    name: str
    distance_bu: float         # 侯道, in the rite's 步 (貍步 for the 大射)
    distance_m: float          # the same in metres
    position_m: tuple[float, ...]   # the 侯, (x, y, z) m
    fa_m: tuple[float, ...]         # its 乏 (容), (x, y, z) m
    shot_by: tuple[str, ...]   # the ranks whose own 侯 it is
    huozhe: str                # the instrument of its 获者 (calls its hits)
    fuhou: str                 # the instrument of its 负侯者
    huo: int = 1               # how many 获者 (射人 「三获三容」 …)
    rong: int = 1              # how many 乏 (容)
    source: str = ""


@dataclass(frozen=True)
class Archer:
    name: str
    rank: str


@dataclass(frozen=True)
class Pair:
    """A pair of the compiled roster: its 上射 and 下射 and who looses first."""

    id: str
    group: str
    upper: Archer
    lower: Archer
    first: str = "上射"        # 上射 | 下射


@dataclass(frozen=True)
class Rite:
    """The rite as compiled: its ranks (most senior first), 侯, host and roster."""

    name: str
    rank: str                  # the ceremony's rank (天子, 诸侯 …) as the cue sheet sets it
    ranks: tuple[str, ...]     # the archers' ranks, most senior first
    hou: tuple[Hou, ...]
    host: Host | None = None
    ou_group: str = ""         # the group of the first 耦 (三耦), who shoot round 1
    ou: int = 0                # how many pairs it has at this rank (三耦, 四耦, 六耦)
    pairs: tuple[Pair, ...] = ()
    inference: str = ""        # why the rite itself is INFERENCE ("" when the sources give it)
    source: str = ""
    courtyard: str = ""        # its courtyard, a file of ceremony/ ("": courtyard.toml, the 大射仪's)

    @property
    def hou_names(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.hou)

    def own_hou(self, rank: str) -> str:
        """The 侯 of ``rank`` (the one whose ``shot_by`` names it); KeyError for none."""
        for h in self.hou:
            if rank in h.shot_by:
                return h.name
        raise KeyError(rank)

    def pair_hou(self, upper_rank: str, lower_rank: str) -> str:
        """The 侯 a pair shoots: its senior archer's (「卑者与尊者为耦，不异侯」)."""
        senior = min(self.ranks.index(upper_rank), self.ranks.index(lower_rank))
        return self.own_hou(self.ranks[senior])

    def is_host(self, rank: str) -> bool:
        return self.host is not None and rank == self.host.rank


def to_dict(rite: Rite) -> dict[str, Any]:
    """The JSON form (docs/timeline.md, "rite"): arrays as lists."""
    def plain(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        return [plain(v) for v in x] if isinstance(x, (list, tuple)) else x
    out: dict[str, Any] = plain(asdict(rite))
    return out


def from_dict(d: dict[str, Any]) -> Rite:
    """Inverse of :func:`to_dict` (the schema has checked its shape)."""
    hou = tuple(Hou(**{**h, "position_m": tuple(h["position_m"]), "fa_m": tuple(h["fa_m"]),
                       "shot_by": tuple(h["shot_by"])}) for h in d["hou"])
    pairs = tuple(Pair(p["id"], p["group"], Archer(**p["upper"]), Archer(**p["lower"]), p["first"])
                  for p in d.get("pairs", ()))
    host = None if d.get("host") is None else Host(**d["host"])
    rest = {k: v for k, v in d.items() if k not in ("hou", "pairs", "host", "ranks")}
    return Rite(**rest, ranks=tuple(d["ranks"]), hou=hou, host=host, pairs=pairs)


__all__ = ["Host", "Hou", "Archer", "Pair", "Rite", "to_dict", "from_dict"]

"""The suspension hierarchy by rank (ceremony/suspension.toml): the sides and instruments each rank
hangs, its 射节, and the substitutes the compiler uses where a rank lacks what a cue names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from yuexuan.data import DataSource
from yuexuan.rite import tomlfile

_RANK_KEYS = {"rank", "suspension", "shejie_jie", "shejie_piece", "shejie_source", "in_seeds", "source",
              "notes", "hung"}


@dataclass(frozen=True)
class Side:
    """One hung side of a rank's 县: its instruments (names in instruments/) and why."""
    side: str                # 东 | 西 | 北 | 南
    instruments: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Substitute:
    """Where a rank lacks ``instead_of`` (an instrument name or kind), play ``use`` (names or kinds;
    empty: the strokes are left out)."""
    instead_of: str
    use: tuple[str, ...]
    reason: str
    source: str


@dataclass(frozen=True)
class Rank:
    rank: str
    suspension: str          # 宫县 | 轩县 | 判县 | 特县
    sides: tuple[str, ...]        # 县 sides that carry a hung set
    shejie_jie: int          # 射节: 天子 9, 诸侯 7, 卿大夫 and 士 5
    shejie_piece: str        # the piece the rank shoots to (礼记·射义)
    in_seeds: bool
    source: str
    hung: tuple[Side, ...] = ()       # of Side
    shejie_source: str = ""
    substitutes: tuple[Substitute, ...] = ()  # of Substitute that apply to this rank

    @property
    def instruments(self) -> frozenset[str]:
        """Names of every instrument hung on the rank's sides."""
        return frozenset(name for side in self.hung for name in side.instruments)

    def substitute(self, token: str, kind: str | None = None) -> Substitute | None:
        """The substitute for ``token`` (a name or kind) or, failing that, for its ``kind``."""
        for key in (token, kind):
            for row in self.substitutes:
                if row.instead_of == key:
                    return row
        return None


def _side(f: tomlfile.Fields) -> Side:
    f.unknown({"side", "instruments", "source"})
    return Side(f.get("side", str, choices=("东", "西", "北", "南")), tuple(f.strings("instruments")),
                f.get("source", str))


def _substitute(f: tomlfile.Fields) -> tuple[tuple[str, ...], Substitute]:
    """(ranks it applies to, Substitute)."""
    f.unknown({"ranks", "instead_of", "use", "reason", "source"})
    return tuple(f.strings("ranks")), Substitute(f.get("instead_of", str), tuple(f.strings("use")),
                                                 f.get("reason", str), f.get("source", str))


def load(path: str | Path | None = None, source: DataSource = DataSource()) -> dict[str, Rank]:
    """The ranks of ``path`` (default ceremony/suspension.toml of ``source``), by rank."""
    path = Path(path) if path else source.path("ceremony", "suspension.toml")
    data, text = tomlfile.load(path)
    top = tomlfile.Fields(data, str(path), text, "")
    top.unknown({"rank", "substitute"})
    subs = [_substitute(sf) for sf in top.tables("substitute", [])]
    out = {}
    for rf in top.tables("rank"):
        rf.unknown(_RANK_KEYS)
        name = rf.get("rank", str)
        hung = tuple(_side(hf) for hf in rf.tables("hung", []))
        out[name] = Rank(name, rf.get("suspension", str), tuple(s.side for s in hung),
                         rf.get("shejie_jie", int, lo=1, hi=99), rf.get("shejie_piece", str),
                         rf.get("in_seeds", bool), rf.get("source", str), hung,
                         rf.get("shejie_source", str, ""),
                         tuple(sub for ranks, sub in subs if name in ranks))
    return out

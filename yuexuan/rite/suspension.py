"""The suspension hierarchy by rank (rite/suspension.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from yuexuan.data import DataSource
from yuexuan.rite import tomlfile


@dataclass(frozen=True)
class Rank:
    rank: str
    suspension: str          # 宫县 | 轩县 | 判县 | 特县
    sides: tuple             # 县 sides that carry a hung set
    shejie_jie: int          # 射节: 天子 9, 诸侯 7, 卿大夫 and 士 5
    shejie_piece: str
    in_seeds: bool
    source: str


def load(path: str | Path | None = None, source: DataSource = DataSource()) -> dict:
    """The ranks of ``path`` (default rite/suspension.toml of ``source``), by rank."""
    data, text = tomlfile.load(Path(path) if path else source.path("rite", "suspension.toml"))
    return {r["rank"]: Rank(r["rank"], r["suspension"], tuple(r["sides"]), int(r["shejie_jie"]),
                            r["shejie_piece"], bool(r["in_seeds"]), r["source"]) for r in data["rank"]}

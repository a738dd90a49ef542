"""A rite's data by rank (``ceremony/<rite>.toml``, e.g. ceremony/dashe.toml): who shoots, the host
and his privileges, the first 耦, the 侯, the formulas that differ by rank and the music a rank
lacks. The cue sheet's ``[ceremony] rite`` names the file and ``rank`` the table; a variant option
may replace fields of a rank (``ranks = { RANK = { … } }`` in ceremony/variants.toml), applied by
:func:`rank_rite`. Every problem is a :class:`~yuexuan.errors.UserError` naming the file and key.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.rite import tomlfile
from yuexuan.rite.tomlfile import Fields

DEFAULT_RITE = "dashe"         # the rite of a cue sheet whose [ceremony] names none
_TOP_KEYS = {"name", "courtyard", "fa_bu", "fa_source", "huozhe", "fuhou", "default_rank", "rank"}

RANK_KEYS = {"rank", "alias", "suspension", "host", "ranks", "ranks_source", "ou_group", "ou", "ou_source",
             "shejie_zheng", "shejie_piece", "shejie_jie", "lacks", "lacks_source", "inference", "refused",
             "source", "privileges", "hou", "formulas"}
_HOU_KEYS = {"name", "alias", "distance_bu", "shot_by", "huo", "rong", "fa_bu", "source"}
_PRIVILEGE_KEYS = {"looses_first", "any_hou", "near_misses", "drum_exempt", "outside_hu", "misses_called_by"}


@dataclass(frozen=True)
class Privileges:
    """What the rite grants its host (docs/cuesheet.md, "The rite as data")."""
    looses_first: bool = False
    any_hou: bool = False
    near_misses: bool = False
    drum_exempt: bool = False
    outside_hu: bool = False
    misses_called_by: str | None = None


@dataclass(frozen=True)
class HouSpec:
    name: str
    distance_bu: float
    shot_by: tuple[str, ...]
    alias: str = ""
    huo: int = 1
    rong: int = 1
    fa_bu: tuple[float, float] | None = None     # the 乏's offset (west, north) in 步; None: the rite's
    source: str = ""


@dataclass(frozen=True)
class Formula:
    words: str
    source: str


@dataclass(frozen=True)
class RankRite:
    """One rank's rite (a ``[[rank]]`` table, the chosen variants applied)."""
    rank: str
    host: str | None
    ranks: tuple[str, ...]                   # the archers' ranks, most senior first
    hou: tuple[HouSpec, ...]
    ou_group: str
    ou: int
    suspension: str                          # its row of ceremony/suspension.toml (the 县, the 射节)
    privileges: Privileges = Privileges()
    alias: str = ""
    zheng: int | None = None
    lacks: tuple[str, ...] = ()              # pieces the rank has not
    formulas: dict[str, Formula] = field(default_factory=dict)
    inference: str = ""
    refused: str = ""                        # a reading under which the rank has no such rite
    source: str = ""
    sources: dict[str, str] = field(default_factory=dict)    # ranks_source, ou_source, lacks_source
    # the 射节's piece and 节 where the rank's rite says otherwise than its suspension row
    shejie_piece: str | None = None
    shejie_jie: int | None = None


@dataclass(frozen=True)
class Rite:
    """A rite file: its name, its courtyard, the geometry of its 乏 and its ranks (raw tables, parsed
    per rank by :func:`rank_rite` once the variants are known)."""
    name: str
    file: str
    courtyard: str
    fa_bu: tuple[float, float]
    fa_source: str
    huozhe: str
    fuhou: str
    default_rank: str
    tables: dict[str, dict[str, Any]]        # rank -> its [[rank]] table (raw)
    aliases: dict[str, str]                  # alias -> rank
    text: str = ""
    lines: dict[str, int | None] = field(default_factory=dict)   # rank -> its table's line
    # rank -> {"privileges" | "formulas": line of [rank.…], "hou": lines of its [[rank.hou]]}
    sub_lines: dict[str, dict[str, Any]] = field(default_factory=dict)

    def resolve(self, name: str) -> str | None:
        """The rank named ``name`` or by its alias; None for neither."""
        return name if name in self.tables else self.aliases.get(name)

    def listing(self) -> str:
        """"天子 (tianzi), 诸侯 (zhuhou) …": the ranks with their aliases, for messages and --help."""
        back = {r: a for a, r in self.aliases.items()}
        return ", ".join(f"{r} ({back[r]})" if r in back else r for r in self.tables)


class NoRite(UserError):
    """The rite file a cue sheet names is not there."""


def load(name: str = DEFAULT_RITE, source: DataSource = DataSource()) -> Rite:
    """The rite file ``ceremony/<name>.toml`` of ``source`` (``name`` may be a path to a .toml)."""
    path = Path(name) if name.endswith(".toml") else source.path("ceremony", f"{name}.toml")
    if not path.is_file():
        raise NoRite(f"no rite file ceremony/{name}.toml (the rite's ranks, 侯 and host; "
                     "docs/cuesheet.md)")
    data, text = tomlfile.load(path)
    top = Fields(data, str(path), text, "")
    top.unknown(_TOP_KEYS)
    tables, aliases, lines = {}, {}, {}
    for rf in top.tables("rank"):
        rank = rf.get("rank", str)
        if rank in tables:
            raise rf.error("rank", f"rank {rank!r} is given twice")
        tables[rank], lines[rank] = rf.data, rf.line
        alias = rf.get("alias", str, "")
        if alias:
            if alias in aliases or alias in tables:
                raise rf.error("alias", f"alias {alias!r} is given twice")
            aliases[alias] = rank
    fa = top.get("fa_bu", list, [10.0, 10.0])
    starts = [*lines.values(), None]
    sub_lines = {rank: _sub_lines(text, start, end) for rank, start, end in zip(lines, starts, starts[1:])}
    rite = Rite(top.get("name", str), str(path), top.get("courtyard", str, "courtyard.toml"),
                _pair(top, "fa_bu", fa), top.get("fa_source", str, ""), top.get("huozhe", str),
                top.get("fuhou", str), top.get("default_rank", str, next(iter(tables))), tables, aliases,
                text, lines, sub_lines)
    for rank in tables:                 # every rank parses as written (a variant's fields: rank_rite)
        rank_rite(rite, rank)
    return rite


def rite_names(source: DataSource = DataSource()) -> list[str]:
    """The rite files of ``source``'s ceremony/ (a file with ``[[rank]]`` tables and its callers),
    by name (dashe, …)."""
    import tomllib

    out = []
    for path in source.files("ceremony"):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(data.get("rank"), list) and "huozhe" in data:
            out.append(path.stem)
    return out


def _sub_lines(text: str, start: int | None, end: int | None) -> dict[str, Any]:
    """The lines of a rank's sub-tables' headers, between its own line and the next rank's."""
    out: dict[str, Any] = {"hou": []}
    first = start or 1
    for n, line in enumerate(text.splitlines()[first - 1:end - 1 if end else None], start=first):
        head = line.split("#")[0].strip()
        if head == "[[rank.hou]]":
            out["hou"].append(n)
        elif head in ("[rank.privileges]", "[rank.formulas]"):
            out[head[6:-1]] = n
    return out


def _pair(f: Fields, key: str, v: Any) -> tuple[float, float]:
    if len(v) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise f.error(key, "expected [west, north] in 步")
    return float(v[0]), float(v[1])


def patched(rite: Rite, rank: str, vdefs: dict[str, Any], chosen: dict[str, str]) -> dict[str, Any]:
    """The raw table of ``rank`` with the fields the chosen variant options give it (``ranks``)."""
    table = copy.deepcopy(rite.tables[rank])
    for key, v in vdefs.items():
        option = v["options"][chosen.get(key, v["default"])]
        table.update(copy.deepcopy(option.get("ranks", {}).get(rank, {})))
    return table


def rank_rite(rite: Rite, rank: str, vdefs: dict[str, Any] | None = None,
              chosen: dict[str, str] | None = None) -> RankRite:
    """The rite of ``rank`` (a rank of ``rite``), the chosen options of ``vdefs`` applied."""
    data = patched(rite, rank, vdefs or {}, chosen or {})
    rf = Fields(data, rite.file, rite.text, f"rank[{rank}]", rite.lines.get(rank))
    where = rite.sub_lines.get(rank, {}) if data.get("hou") == rite.tables[rank].get("hou") else {}
    rf.unknown(RANK_KEYS)
    ranks = rf.strings("ranks")
    if not ranks or len(set(ranks)) != len(ranks):
        raise rf.error("ranks", "expected the archers' ranks, most senior first, each once")
    host = rf.get("host", str, None)
    if host is not None and host not in ranks:
        raise rf.error("host", f"the host {host!r} is not among the ranks ({', '.join(ranks)})")
    hou_lines = where.get("hou", [])
    hou = tuple(_hou(Fields(hf.data, hf.file, hf.text, hf.prefix,
                            hou_lines[i] if i < len(hou_lines) else hf.line), ranks)
                for i, hf in enumerate(rf.tables("hou")))
    names = [h.name for h in hou]
    if len(set(names)) != len(names):
        raise rf.error("hou", "each 侯 needs a name of its own")
    for r in ranks:
        if sum(r in h.shot_by for h in hou) != 1:
            raise rf.error("hou", f"rank {r!r}: expected exactly one 侯 whose shot_by names it")
    pf = _sub(rf, "privileges", where)
    pf.unknown(_PRIVILEGE_KEYS)
    flags = {k: pf.get(k, bool, False) for k in ("looses_first", "any_hou", "near_misses", "drum_exempt",
                                                  "outside_hu")}
    privileges = Privileges(**flags, misses_called_by=pf.get("misses_called_by", str, None))
    formulas = {}
    ff = _sub(rf, "formulas", where)
    for name in ff.data:
        one = ff.table(name)
        one.unknown({"words", "source"})
        formulas[name] = Formula(one.get("words", str), one.get("source", str))
    return RankRite(rank, host, ranks, hou, rf.get("ou_group", str), rf.get("ou", int, lo=1, hi=1000),
                    rf.get("suspension", str, rank),
                    privileges, rf.get("alias", str, ""), rf.get("shejie_zheng", int, None, lo=0, hi=99),
                    rf.strings("lacks"), formulas, rf.get("inference", str, ""), rf.get("refused", str, ""),
                    rf.get("source", str, ""),
                    {k: rf.get(k, str, "") for k in ("ranks_source", "ou_source", "lacks_source")},
                    rf.get("shejie_piece", str, None), rf.get("shejie_jie", int, None, lo=1, hi=99))


def _sub(rf: Fields, key: str, where: dict[str, Any]) -> Fields:
    """The rank's sub-table ``key`` ({} when absent), at its header's line where known."""
    f = rf.table(key, {})
    return Fields(f.data, f.file, f.text, f.prefix, where.get(key, f.line))


def _hou(hf: Fields, ranks: tuple[str, ...]) -> HouSpec:
    hf.unknown(_HOU_KEYS)
    shot_by = hf.strings("shot_by")
    for r in shot_by:
        if r not in ranks:
            raise hf.error("shot_by", f"unknown rank {r!r}; expected one of: {', '.join(ranks)}")
    fa = hf.get("fa_bu", list, None)
    return HouSpec(hf.get("name", str), hf.get("distance_bu", float, lo=1.0, hi=1000.0), shot_by,
                   hf.get("alias", str, ""), hf.get("huo", int, 1, lo=1, hi=9),
                   hf.get("rong", int, 1, lo=1, hi=9), None if fa is None else _pair(hf, "fa_bu", fa),
                   hf.get("source", str, ""))

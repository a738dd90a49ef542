"""The courtyard of the rite (``ceremony/courtyard.toml``): the 堂, landmarks, targets and listener seats.

Frame: metres, x east, y north, z up; the origin is the middle of the 堂's south edge. The
readers of this file: this module (the renderer takes its listeners, :func:`listeners`; the drawing
all of it, :func:`load`) and :mod:`yuexuan.rite.venue` (its reflecting surfaces). Both check every key
of the file against :data:`KEYS`. Errors name the file, the line and the key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from yuexuan.data import DataSource
from yuexuan.rite import names, tomlfile
from yuexuan.timeline import Timeline

_WHERE = {"name", "english", "position_m", "source"}
#: every key of ceremony/courtyard.toml (:meth:`yuexuan.rite.tomlfile.Fields.known_keys`)
KEYS: tomlfile.Schema = {
    "chi_m": None, "bu_m": None, "default_houdao": None,
    "houdao": {"name", "venue", "zhong", "measured_from", "origin_y_m", "source"},
    "tang": {"name", "english", "x_m", "y_m", "height_m", "absorption", "material", "absorption_source"},
    "ground": {"name", "english", "absorption", "absorption_source"},
    "stairs": {"names", "width_m", "absorption", "absorption_source"},
    "venue": {"name", "english", "tail_t60_s", "tail_drr_db_at_10m", "source"},
    "wall": {"name", "english", "venue", "from_m", "to_m", "height_m", "absorption", "source"},
    "landmark": _WHERE,
    "target": _WHERE | {"pinyin", "distance_bu", "fa_m"},
    "listener": _WHERE | {"facing_deg", "pinyin", "alias"},
}


@dataclass(frozen=True)
class Place:
    """A landmark (阼阶, 西阶, 物)."""
    name: str
    english: str
    position_m: tuple[float, ...]  # (x, y, z) metres
    source: str = ""


@dataclass(frozen=True)
class Target:
    """A 侯 and its 乏."""
    name: str
    pinyin: str
    english: str
    distance_bu: float         # 侯道 in 貍步
    position_m: tuple[float, ...]  # (x, y, z) metres
    fa_m: tuple[float, ...]    # the 乏 (screen), (x, y, z) metres


@dataclass(frozen=True)
class Listener:
    """A seat the rite is heard from (宾, 公, 中庭)."""
    name: str
    english: str
    position_m: tuple[float, ...]  # (x, y, z) metres
    facing_deg: float          # 0 = north, 90 = east
    pinyin: str = ""
    alias: str = ""            # what a user may type for it (rite/names.py), e.g. zhongting


@dataclass(frozen=True)
class Houdao:
    """One reading of where the 侯道 is measured from (variant O24)."""
    name: str                  # the commentator (郑玄, 敖继公)
    venue: str                 # 郊 | 公宫
    zhong: str                 # the tally holder of that venue (闾中, 皮树中)
    measured_from: str         # 堂 | 物
    origin_y_m: float          # y of the origin, metres (the targets in the file are for y = 0)
    source: str = ""


@dataclass(frozen=True)
class Courtyard:
    tang_x_m: tuple[float, ...]  # the 堂's (west, east) edges, metres
    tang_y_m: tuple[float, ...]  # its (south, north) edges, metres
    bu_m: float                # one 貍步, metres
    landmarks: tuple[Place, ...]
    targets: tuple[Target, ...]
    listeners: tuple[Listener, ...]
    houdao: Houdao | None = None   # the geometry the targets are placed by (O24)

    def seats(self) -> dict[str, Listener]:
        """The listener seats by name (宾, 公, 中庭): the renderer's ``listener_table``."""
        return {li.name: li for li in self.listeners}


def read(path: Path) -> tomlfile.Fields:
    """The top table of the courtyard file ``path``, every key checked against :data:`KEYS`."""
    doc, text = tomlfile.load(path)
    top = tomlfile.Fields(doc, str(path), text, "")
    top.known_keys(KEYS)
    return top


def metres(f: tomlfile.Fields, key: str, n: int = 3, shape: str = "[x, y, z]") -> tuple[float, ...]:
    """An array of ``n`` numbers (metres) under ``key``."""
    v = f.get(key, list)
    if len(v) != n or not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in v):
        raise f.error(key, f"expected {shape} in metres")
    return tuple(float(a) for a in v)


def _listeners(top: tomlfile.Fields) -> tuple[Listener, ...]:
    out = {}
    for f in top.tables("listener", []):
        name = f.get("name", str)
        if name in out:
            raise f.error("name", f"duplicate listener {name!r}")
        alias = f.get("alias", str, "")
        if alias and not names.ALIAS.fullmatch(alias):
            raise f.error("alias", "expected lower-case ASCII pinyin, e.g. zhongting")
        out[name] = Listener(name, f.get("english", str, ""), metres(f, "position_m"),
                             f.get("facing_deg", float, 0.0), f.get("pinyin", str, ""), alias)
    if not out:
        raise top.error("listener", "no [[listener]] positions")
    clash = names.duplicate({li.name: li.alias for li in out.values()})
    if clash:
        raise top.error("listener", f"the seats {clash[0]!r} and {clash[1]!r} have one alias")
    return tuple(out.values())


def _houdao(top: tomlfile.Fields, name: str | None) -> Houdao | None:
    """The ``[[houdao]]`` table named ``name`` (default: ``default_houdao``); None if the file has none."""
    rows = {f.get("name", str): f for f in top.tables("houdao", [])}
    if not rows:
        return None
    name = name or top.get("default_houdao", str, next(iter(rows)))
    if name not in rows:
        raise top.error("houdao", f"no [[houdao]] named {name!r}; expected one of: {', '.join(rows)}")
    f = rows[name]
    return Houdao(name, f.get("venue", str), f.get("zhong", str, ""), f.get("measured_from", str),
                  f.get("origin_y_m", float), f.get("source", str, ""))


def _moved(p: tuple[float, ...], dy_m: float) -> tuple[float, ...]:
    return (p[0], p[1] + dy_m, p[2])


def load(path: str | Path | None = None, source: DataSource = DataSource(),
         houdao: str | None = None) -> Courtyard:
    """Read ``path`` (default ceremony/courtyard.toml of ``source``), its targets placed by the
    ``[[houdao]]`` reading ``houdao`` (variant O24; default: the file's ``default_houdao``)."""
    path = Path(path) if path else source.path("ceremony", "courtyard.toml")
    top = read(path)
    tang = top.table("tang")
    tang_x_m, tang_y_m = (metres(tang, key, 2, "[min, max]") for key in ("x_m", "y_m"))
    landmarks = tuple(Place(f.get("name", str), f.get("english", str, ""), metres(f, "position_m"),
                            f.get("source", str, "")) for f in top.tables("landmark", []))
    geometry = _houdao(top, houdao)
    dy_m = geometry.origin_y_m if geometry else 0.0
    targets = tuple(Target(f.get("name", str), f.get("pinyin", str, ""), f.get("english", str, ""),
                           f.get("distance_bu", float), _moved(metres(f, "position_m"), dy_m),
                           _moved(metres(f, "fa_m"), dy_m))
                    for f in top.tables("target", []))
    return Courtyard(tang_x_m, tang_y_m, top.get("bu_m", float, 1.386), landmarks, targets, _listeners(top),
                     geometry)


def path_of(timeline: Timeline, source: DataSource = DataSource()) -> Path:
    """The courtyard file of the timeline's rite (its ``rite.courtyard``; courtyard.toml without)."""
    name = timeline.rite.courtyard if timeline.rite is not None else ""
    return source.path("ceremony", name or "courtyard.toml")


def for_timeline(timeline: Timeline, source: DataSource = DataSource()) -> Courtyard:
    """The courtyard of the timeline's rite in ``source``, its geometry as the timeline's variant
    ``houdao`` (O24) sets it (the option names the ``[[houdao]]`` table; the file's default when
    not set), its targets the rite's 侯 as compiled (the timeline's ``rite.hou``)."""
    court = load(path_of(timeline, source), source, houdao=timeline.ceremony.variants.get("houdao"))
    if timeline.rite is None:
        return court
    drawn = {t.name: t for t in court.targets}
    targets = tuple(Target(h.name, drawn[h.name].pinyin if h.name in drawn else "",
                           drawn[h.name].english if h.name in drawn else f"the {h.name}", h.distance_bu,
                           h.position_m, h.fa_m) for h in timeline.rite.hou)
    return dataclasses.replace(court, targets=targets)


def listeners(path: str | Path | None = None, source: DataSource = DataSource()) -> dict[str, Listener]:
    """The listener seats by name (宾, 公, 中庭) of ``path`` (default: that of ``source``)."""
    return load(path, source).seats()

"""The venue heard in the courtyard (``ceremony/courtyard.toml``): the reflecting surfaces of one
venue — the ground, the 堂's platform (south, east and west faces and its top), the two stairs, and
the walls the venue has (variant O24: 郊 none, 公宫 its court walls) — and its diffuse tail. Each
surface is a rectangle in the courtyard frame (metres; x east, y north, z up) with the pressure
reflection coefficient √(1 − α) of its cited absorption coefficient α. The renderer's room
(:mod:`yuexuan.audio.room`) takes it as read here. Errors name the file, the line and the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from yuexuan.data import DataSource
from yuexuan.rite import courtyard, tomlfile
from yuexuan.rite.courtyard import metres
from yuexuan.timeline import Timeline

GROUND_EXTENT_M = 400.0        # the ground is a square this wide around the origin (open field)


@dataclass(frozen=True)
class Surface:
    """A reflecting rectangle: ``corner_m + s·edge1_m + t·edge2_m`` for s, t in [0, 1] (edges at
    right angles)."""

    name: str
    corner_m: tuple[float, float, float]
    edge1_m: tuple[float, float, float]
    edge2_m: tuple[float, float, float]
    reflection: float          # pressure reflection coefficient, √(1 − α)


@dataclass(frozen=True)
class Room:
    """What the ambience needs of one venue: its surfaces and the diffuse tail's decay."""

    venue: str
    surfaces: tuple[Surface, ...]
    tail_t60_s: float          # decay of the diffuse tail, s
    tail_drr_db_at_10m: float  # direct-to-reverberant energy ratio of a source 10 m away, dB


def _absorption(f: tomlfile.Fields) -> float:
    return math.sqrt(1.0 - f.get("absorption", float, lo=0.0, hi=1.0))


def _platform(tang: tomlfile.Fields) -> list[Surface]:
    """The 堂's platform: south face, east and west faces, top (floor of 堂上)."""
    (x0, x1), (y0, y1) = (metres(tang, k, 2, "[min, max]") for k in ("x_m", "y_m"))
    h = tang.get("height_m", float, lo=0.0)
    r = _absorption(tang)
    return [Surface("堂·南廉", (x0, y0, 0.0), (x1 - x0, 0.0, 0.0), (0.0, 0.0, h), r),
            Surface("堂·东", (x1, y0, 0.0), (0.0, y1 - y0, 0.0), (0.0, 0.0, h), r),
            Surface("堂·西", (x0, y0, 0.0), (0.0, y1 - y0, 0.0), (0.0, 0.0, h), r),
            Surface("堂上", (x0, y0, h), (x1 - x0, 0.0, 0.0), (0.0, y1 - y0, 0.0), r)]


def _stairs(top: tomlfile.Fields, tang_y0: float, height: float) -> list[Surface]:
    """Each stair a slope from its foot (the landmark's position) up to the 堂's edge."""
    if not top.has("stairs"):
        return []
    f = top.table("stairs")
    width = f.get("width_m", float, lo=0.0)
    feet = {g.get("name", str): g for g in top.tables("landmark", [])}
    out = []
    for name in f.strings("names"):
        if name not in feet:
            raise f.error("names", f"no [[landmark]] named {name!r}")
        x, y, _ = metres(feet[name], "position_m")
        out.append(Surface(name, (x - width / 2, y, 0.0), (width, 0.0, 0.0),
                           (0.0, tang_y0 - y, height), _absorption(f)))
    return out


def _walls(top: tomlfile.Fields, venue: str) -> list[Surface]:
    out = []
    for f in top.tables("wall", []):
        if f.get("venue", str) != venue:
            continue
        (x0, y0), (x1, y1) = (metres(f, k, 2, "[x, y]") for k in ("from_m", "to_m"))
        out.append(Surface(f.get("name", str), (x0, y0, 0.0), (x1 - x0, y1 - y0, 0.0),
                           (0.0, 0.0, f.get("height_m", float, lo=0.0)), _absorption(f)))
    return out


def load(venue: str, path: str | Path | None = None, source: DataSource = DataSource()) -> Room:
    """The surfaces of ``venue`` (a ``[[venue]]`` name: 郊, 公宫) in ``path`` (default
    ceremony/courtyard.toml)."""
    top = courtyard.read(Path(path) if path else source.path("ceremony", "courtyard.toml"))
    venues = {f.get("name", str): f for f in top.tables("venue")}
    if venue not in venues:
        raise top.error("venue", f"no [[venue]] named {venue!r}; expected one of: {', '.join(venues)}")
    tang = top.table("tang")
    ground = top.table("ground")
    half = GROUND_EXTENT_M / 2
    surfaces = [Surface(ground.get("name", str), (-half, -half, 0.0), (2 * half, 0.0, 0.0),
                        (0.0, 2 * half, 0.0), _absorption(ground))]
    surfaces += _platform(tang)
    surfaces += _stairs(top, metres(tang, "y_m", 2, "[min, max]")[0], tang.get("height_m", float))
    surfaces += _walls(top, venue)
    v = venues[venue]
    return Room(venue, tuple(surfaces), v.get("tail_t60_s", float, lo=0.05, hi=5.0),
                v.get("tail_drr_db_at_10m", float, lo=-20.0, hi=60.0))


def for_timeline(timeline: Timeline, source: DataSource = DataSource()) -> Room:
    """The room of the venue the timeline's variant ``houdao`` (O24) names (郑玄: 郊, 敖继公: 公宫),
    from the courtyard file of ``source``."""
    court = courtyard.for_timeline(timeline, source)
    return load(court.houdao.venue if court.houdao else "郊", courtyard.path_of(timeline, source), source)

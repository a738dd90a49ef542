"""Specular reflections from a few finite planes by the image-source method, with a visibility check.

Why our own and not pyroomacoustics: pyroomacoustics builds closed rooms (shoeboxes or polyhedra
from a floor plan and a height) and sums every image of every wall; our courtyard is open — a
ground, a 1 m platform with two stairs and, in the 公宫, three walls with no roof — so most images
are invalid and the few valid ones must be found one by one. The method is the same (J. Borish
1984, "Extension of the image model to arbitrary polyhedra", J. Acoust. Soc. Am. 75(6),
1827–1836): mirror the source in each surface's plane (and the image again, for second order),
then keep the image only if the path it stands for is real — each reflection point lies inside
its finite rectangle, and no leg of the path passes through another surface.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Collection, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.rite.venue import Surface

MAX_ORDER = 2
EPS = 1e-9


class Reflection(NamedTuple):
    """One valid specular path from the source to the listener."""

    surfaces: tuple[str, ...]  # surface names, in the order the sound meets them
    image_m: tuple[float, ...]  # the image source (x, y, z), metres
    path_m: float              # length of the path, metres (= image to listener)
    reflection: float          # product of the surfaces' pressure reflection coefficients


@functools.lru_cache(maxsize=256)
def normal(surface: Surface) -> npt.NDArray[np.float64]:
    """The unit normal of ``surface``'s plane (edge1 × edge2); read-only (it is kept)."""
    n = np.cross(surface.edge1_m, surface.edge2_m)
    out = np.asarray(n / np.linalg.norm(n), dtype=np.float64)
    out.flags.writeable = False
    return out


Point = tuple[float, float, float]


@functools.lru_cache(maxsize=256)
def _frame(surface: Surface) -> tuple[Point, Point, Point, Point, float, float]:
    """(corner, unit normal, edge1, edge2, |edge1|², |edge2|²) as Python floats: the tracing below
    works on 3-vectors, where a numpy call costs more than the arithmetic (the 40 placements of
    the ceremony took 0.1 s of the render's serial start in numpy)."""
    c, e1, e2 = (_point(x) for x in (surface.corner_m, surface.edge1_m, surface.edge2_m))
    n = _point(normal(surface))
    return (c, n, e1, e2, _dot(e1, e1), _dot(e2, e2))


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _height(p: Point, corner: Point, n: Point) -> float:
    """Signed distance of ``p`` from the plane through ``corner`` with unit normal ``n``."""
    return (p[0] - corner[0]) * n[0] + (p[1] - corner[1]) * n[1] + (p[2] - corner[2]) * n[2]


def _mirrored(p: Point, surface: Surface) -> Point:
    c, n = _frame(surface)[:2]
    d = 2.0 * _height(p, c, n)
    return (p[0] - d * n[0], p[1] - d * n[1], p[2] - d * n[2])


def _crossed(surface: Surface, a: Point, b: Point) -> Point | None:
    c, n, e1, e2, l1, l2 = _frame(surface)
    da, db = _height(a, c, n), _height(b, c, n)
    if da * db >= 0.0:
        return None
    t = da / (da - db)
    if not EPS < t < 1.0 - EPS:
        return None
    q = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2]))
    rel = (q[0] - c[0], q[1] - c[1], q[2] - c[2])
    for edge, length in ((e1, l1), (e2, l2)):
        if not -EPS <= _dot(rel, edge) / length <= 1.0 + EPS:
            return None
    return q


def _point(p: npt.ArrayLike) -> Point:
    x, y, z = (float(v) for v in np.asarray(p, dtype=float))
    return (x, y, z)


def mirror(point: npt.ArrayLike, surface: Surface) -> npt.NDArray[np.float64]:
    """``point`` mirrored in the plane of ``surface``."""
    return np.array(_mirrored(_point(point), surface))


def crossing(surface: Surface, a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64] | None:
    """Where the segment a→b crosses ``surface``'s rectangle (strictly between its ends), or None."""
    q = _crossed(surface, _point(a), _point(b))
    return None if q is None else np.array(q)


def blocked(surfaces: Sequence[Surface], a: npt.ArrayLike, b: npt.ArrayLike,
            skip: Collection[str] = ()) -> bool:
    """Whether the segment a→b passes through any surface not in ``skip``."""
    return _blocked(surfaces, _point(a), _point(b), skip)


def _blocked(surfaces: Sequence[Surface], a: Point, b: Point, skip: Collection[str] = ()) -> bool:
    return any(_crossed(s, a, b) is not None for s in surfaces if s.name not in skip)


def _trace(source: Point, listener: Point,
           chain: Sequence[Surface]) -> tuple[Point, list[Point]] | None:
    """(image of the last surface, [source, reflection points …, listener]) of the path off
    ``chain`` (surfaces in order), or None when a reflection point falls outside its surface."""
    images = [source]
    for s in chain:
        images.append(_mirrored(images[-1], s))
    points = [listener]                                 # traced back from the listener
    for k in range(len(chain), 0, -1):
        q = _crossed(chain[k - 1], images[k], points[-1])
        if q is None:
            return None
        points.append(q)
    points.append(images[0])
    return images[-1], points[::-1]


def reflections(source: npt.ArrayLike, listener: npt.ArrayLike, surfaces: Sequence[Surface],
                max_order: int = MAX_ORDER) -> list[Reflection]:
    """Every valid specular path of order 1 … ``max_order`` from ``source`` to ``listener``
    (points in metres), shortest first: each reflection point inside its surface, no leg through
    any surface."""
    out = []
    src, ear = _point(source), _point(listener)
    for order in range(1, max_order + 1):
        for chain in itertools.product(surfaces, repeat=order):
            if any(a is b for a, b in itertools.pairwise(chain)):
                continue
            traced = _trace(src, ear, chain)
            if traced is None:
                continue
            image, points = traced
            if any(_blocked(surfaces, a, b) for a, b in itertools.pairwise(points)):
                continue
            out.append(Reflection(tuple(s.name for s in chain), image, math.dist(image, points[-1]),
                                  math.prod(s.reflection for s in chain)))
    return sorted(out, key=lambda r: r.path_m)

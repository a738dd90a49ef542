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


def mirror(point: npt.ArrayLike, surface: Surface) -> npt.NDArray[np.float64]:
    """``point`` mirrored in the plane of ``surface``."""
    n = normal(surface)
    p = np.asarray(point, dtype=float)
    return p - 2.0 * float(np.dot(p - surface.corner_m, n)) * n


def crossing(surface: Surface, a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.float64] | None:
    """Where the segment a→b crosses ``surface``'s rectangle (strictly between its ends), or None."""
    n = normal(surface)
    da = float(np.dot(np.asarray(a) - surface.corner_m, n))
    db = float(np.dot(np.asarray(b) - surface.corner_m, n))
    if da * db >= 0.0:
        return None
    t = da / (da - db)
    if not EPS < t < 1.0 - EPS:
        return None
    q = np.asarray(a, dtype=float) + t * (np.asarray(b, dtype=float) - np.asarray(a, dtype=float))
    rel = q - surface.corner_m
    for edge in (surface.edge1_m, surface.edge2_m):
        s = float(np.dot(rel, edge)) / float(np.dot(edge, edge))
        if not -EPS <= s <= 1.0 + EPS:
            return None
    return q


def blocked(surfaces: Sequence[Surface], a: npt.ArrayLike, b: npt.ArrayLike,
            skip: Collection[str] = ()) -> bool:
    """Whether the segment a→b passes through any surface not in ``skip``."""
    return any(crossing(s, a, b) is not None for s in surfaces if s.name not in skip)


def _trace(source: npt.ArrayLike, listener: npt.ArrayLike,
           chain: Sequence[Surface]) -> tuple[npt.NDArray[np.float64], list[npt.NDArray[np.float64]]] | None:
    """(image of the last surface, [source, reflection points …, listener]) of the path off
    ``chain`` (surfaces in order), or None when a reflection point falls outside its surface."""
    images = [np.asarray(source, dtype=float)]
    for s in chain:
        images.append(mirror(images[-1], s))
    points = [np.asarray(listener, dtype=float)]       # traced back from the listener
    for k in range(len(chain), 0, -1):
        q = crossing(chain[k - 1], images[k], points[-1])
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
    for order in range(1, max_order + 1):
        for chain in itertools.product(surfaces, repeat=order):
            if any(a is b for a, b in itertools.pairwise(chain)):
                continue
            traced = _trace(source, listener, chain)
            if traced is None:
                continue
            image, points = traced
            if any(blocked(surfaces, a, b) for a, b in itertools.pairwise(points)):
                continue
            out.append(Reflection(tuple(s.name for s in chain), tuple(float(v) for v in image),
                                  float(np.linalg.norm(image - points[-1])),
                                  math.prod(s.reflection for s in chain)))
    return sorted(out, key=lambda r: r.path_m)

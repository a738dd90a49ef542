"""Geometry of the courtyard drawing: metres to pixels, label widths and placement, and clusters
of nearby instruments. Pure; no SVG is written here (that is :mod:`yuexuan.publish.drawing`)."""

from __future__ import annotations

import math

#: a box (x0, y0, x1, y1), px
Box = tuple[float, float, float, float]
#: an item to cluster: (name, x, y), metres
Item = tuple[str, float, float]


class Panel:
    """Maps courtyard metres to SVG pixels (north up)."""

    def __init__(self, x0_px: float, y0_px: float, xr: tuple[float, float], yr: tuple[float, float],
                 px: float) -> None:
        self.x0, self.y0, self.xr, self.yr, self.px = x0_px, y0_px, xr, yr, px

    def __call__(self, x: float, y: float) -> tuple[float, float]:
        return (round(self.x0 + (x - self.xr[0]) * self.px, 1),
                round(self.y0 + (self.yr[1] - y) * self.px, 1))

    @property
    def size(self) -> tuple[float, float]:
        return ((self.xr[1] - self.xr[0]) * self.px, (self.yr[1] - self.yr[0]) * self.px)

    def holds(self, x: float, y: float) -> bool:
        return self.xr[0] <= x <= self.xr[1] and self.yr[0] <= y <= self.yr[1]


def text_width(s: str, size: float) -> float:
    """Rough width (px) of ``s`` at font ``size``: ASCII about 0.6 em; CJK and every other
    non-ASCII sign (·, →, tone-marked pinyin) counted full width, as the CJK fonts draw them."""
    return sum(size if ord(c) > 0x7F else 0.6 * size for c in s)


class Labeller:
    """Greedy label placement: right, left, below, above, then the corners, then further out;
    avoids the reserved boxes and, when ``bounds`` (x0, y0, x1, y1 px) is given, stays inside it."""

    def __init__(self, bounds: Box | None = None) -> None:
        self.boxes: list[Box] = []
        self.bounds = bounds

    def reserve(self, x0: float, y0: float, x1: float, y1: float) -> None:
        self.boxes.append((x0, y0, x1, y1))

    def _free(self, b: Box) -> bool:
        if self.bounds and not (self.bounds[0] <= b[0] and b[2] <= self.bounds[2]
                                and self.bounds[1] <= b[1] and b[3] <= self.bounds[3]):
            return False
        return all(b[2] <= o[0] or b[0] >= o[2] or b[3] <= o[1] or b[1] >= o[3] for o in self.boxes)

    def place(self, cx: float, cy: float, text: str, size: float,
              gap: float = 10.0) -> tuple[float, float, str]:
        """Return (x, y, anchor) for the text near (cx, cy); the box is reserved."""
        w, h = text_width(text, size), size * 1.2
        cands: list[tuple[float, float, str, Box]] = []
        for k in (1.0, 1.8, 2.6, 3.6, 5.0, 7.0, 9.0):
            g = gap * k
            cands += [(cx + g, cy, "start", (cx + g, cy - h / 2, cx + g + w, cy + h / 2)),
                      (cx - g, cy, "end", (cx - g - w, cy - h / 2, cx - g, cy + h / 2)),
                      (cx, cy + g + h / 2, "middle", (cx - w / 2, cy + g, cx + w / 2, cy + g + h)),
                      (cx, cy - g - h / 2, "middle", (cx - w / 2, cy - g - h, cx + w / 2, cy - g))]
            for sx in (1, -1):            # the corners: a label beside and below / above
                for sy in (1, -1):
                    x = cx + sx * g * 0.7
                    y = cy + sy * (g * 0.7 + h / 2)
                    x0 = x if sx > 0 else x - w
                    cands.append((x, y, "start" if sx > 0 else "end", (x0, y - h / 2, x0 + w, y + h / 2)))
        for x, y, anchor, box in cands:
            if self._free(box):
                self.reserve(*box)
                return x, y, anchor
        x, y, anchor, box = min(cands, key=lambda c: self._overlap_px2(c[3]))     # least covered
        self.reserve(*box)
        return x, y, anchor

    def _overlap_px2(self, b: Box) -> float:
        """Area (px²) of ``b`` covered by reserved boxes, plus any part outside the bounds."""
        area = sum(max(0.0, min(b[2], o[2]) - max(b[0], o[0])) * max(0.0, min(b[3], o[3]) - max(b[1], o[1]))
                   for o in self.boxes)
        if self.bounds:
            inside = (max(0.0, min(b[2], self.bounds[2]) - max(b[0], self.bounds[0]))
                      * max(0.0, min(b[3], self.bounds[3]) - max(b[1], self.bounds[1])))
            area += (b[2] - b[0]) * (b[3] - b[1]) - inside
        return area


def clusters(items: list[Item], gap_m: float = 3.5) -> list[list[Item]]:
    """Split (name, x, y) items into groups whose members lie within ``gap_m`` of another."""
    groups: list[list[Item]] = []
    for it in items:
        near = [g for g in groups if any(math.hypot(it[1] - o[1], it[2] - o[2]) <= gap_m for o in g)]
        merged = [it]
        for g in near:
            merged += g
            groups.remove(g)
        groups.append(merged)
    return groups

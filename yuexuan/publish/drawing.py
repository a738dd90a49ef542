"""The courtyard drawing: an SVG of the 堂, the stairs, the three 县, the 侯道 and the listeners.

Positions come from ``ceremony/courtyard.toml`` (:mod:`yuexuan.rite.courtyard`) and the timeline's
instrument facts (metres; x east,
y north). Two panels share one file: the 乐县 in detail (north up) and the whole 侯道 at a smaller
scale. Every instrument is drawn exactly once, as ``<g id="inst-NAME" data-instrument="NAME">``,
so a page can light it (class ``sounding``). Performers who move (the facts' ``places``, filled by
the compiler from the cues' ``places``) are drawn again at each other place, as
``<g class="yx-place" data-performer="NAME" data-where="…" data-cues="ID ID …">``, with an
arrow from their home and the officials standing by. Pure: :func:`layout_svg` returns text; the geometry
(metres to pixels, label placement) is :mod:`yuexuan.publish.drawing_geometry`.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any, NamedTuple

from yuexuan.errors import UserError
from yuexuan.formats.svgstyle import FONT, SVG_NS
from yuexuan.publish.drawing_geometry import Labeller, Panel, clusters, text_width
from yuexuan.rite.courtyard import Courtyard, Listener

FAMILY_COLOUR = {"bell": "#b8860b", "stone": "#5f7f8f", "drum": "#a0402a", "string": "#6b4f9f",
                 "pipe": "#3f7f3f", "free_reed": "#6f7f2f", "voice": "#2f4f8f"}
FAMILY_EN = {"bell": "bells", "stone": "stone chimes", "drum": "drums", "string": "zithers",
             "pipe": "pipes", "free_reed": "mouth organs", "voice": "voices"}
XIAN_LABEL = {"东": "东县 east", "西": "西县 west", "北": "北 (阶间) north", "堂上": "堂上 on the hall"}

# Detail panel: the 县 and the 堂 (metres), and its scale (px per metre).
DETAIL_X = (-15.0, 15.0)
DETAIL_Y = (-12.5, 9.0)
DETAIL_PX = 22.0
# Overview panel: the whole 侯道, with room east of the 乐县 for the targets' labels (metres).
OVER_PX = 3.4
OVER_EAST_M = 24.0
STYLE = """
.yx-inst .yx-mark { stroke: #222; stroke-width: 1.2; }
.yx-inst text { font-size: 13px; fill: #111; }
.yx-inst.sounding .yx-mark { fill: #ffd21f; stroke: #d40000; stroke-width: 3; }
.yx-inst.sounding text { fill: #d40000; font-weight: bold; }
.yx-place .yx-mark { fill-opacity: 0.35; stroke-dasharray: 3 2; }
.yx-place.here .yx-mark { fill: #ffd21f; fill-opacity: 1; stroke: #d40000; stroke-width: 3; }
.yx-place text, .yx-attendant text { font-size: 11px; fill: #333; }
.yx-place.here text, .yx-attendant.here text { fill: #d40000; font-weight: bold; }
.yx-attendant.here rect { fill: #ffd21f; stroke: #d40000; }
.yx-small { font-size: 11px; fill: #333; }
.yx-label { font-size: 13px; fill: #111; }
.yx-title { font-size: 18px; font-weight: bold; fill: #111; }
.yx-sub { font-size: 14px; font-weight: bold; fill: #222; }
"""


def _el(parent: ET.Element, tag: str, text: str | None = None, **attrs: object) -> ET.Element:
    e = ET.SubElement(parent, tag, {k.rstrip("_").replace("_", "-"): str(v) for k, v in attrs.items()})
    if text is not None:
        e.text = text
    return e


def _marker(g: ET.Element, family: str, cx: float, cy: float, r: float = 7.0) -> None:
    fill = FAMILY_COLOUR.get(family, "#888")
    if family == "stone":        # a chime frame: a wide bar
        _el(g, "rect", class_="yx-mark", x=cx - 1.5 * r, y=cy - 0.6 * r, width=3 * r, height=1.2 * r,
            fill=fill)
    elif family == "bell":
        _el(g, "path", class_="yx-mark", fill=fill,
            d=f"M{cx - r:.1f},{cy + r:.1f} L{cx - 0.6 * r:.1f},{cy - r:.1f} "
              f"L{cx + 0.6 * r:.1f},{cy - r:.1f} L{cx + r:.1f},{cy + r:.1f} Z")
    elif family == "drum":
        _el(g, "circle", class_="yx-mark", cx=cx, cy=cy, r=r, fill=fill)
    elif family == "string":
        _el(g, "rect", class_="yx-mark", x=cx - 1.2 * r, y=cy - 0.45 * r, width=2.4 * r,
            height=0.9 * r, fill=fill)
    elif family == "pipe":
        _el(g, "path", class_="yx-mark", fill=fill,
            d=f"M{cx:.1f},{cy - r:.1f} L{cx + r:.1f},{cy + r:.1f} L{cx - r:.1f},{cy + r:.1f} Z")
    elif family == "free_reed":  # a mouth organ: its pipes standing in a row
        _el(g, "rect", class_="yx-mark", x=cx - 0.6 * r, y=cy - r, width=1.2 * r, height=2 * r, fill=fill)
    else:                        # voices: a diamond
        _el(g, "path", class_="yx-mark", fill=fill,
            d=f"M{cx:.1f},{cy - r:.1f} L{cx + r:.1f},{cy:.1f} L{cx:.1f},{cy + r:.1f} "
              f"L{cx - r:.1f},{cy:.1f} Z")


def _label(parent: ET.Element, lab: Labeller, cx: float, cy: float, text: str, size: float = 13.0,
           cls: str = "yx-label", gap: float = 10.0, **attrs: object) -> ET.Element:
    x, y, anchor = lab.place(cx, cy, text, size, gap)
    if cls:
        attrs["class_"] = cls
    return _el(parent, "text", text, x=round(x, 1), y=round(y, 1), dy="0.35em", text_anchor=anchor,
               **attrs)


class LabelJob(NamedTuple):
    """A label to place once every mark of its panel is drawn and reserved (px, font px)."""
    parent: ET.Element
    cx: float
    cy: float
    text: str
    size: float
    gap: float
    cls: str = ""
    fill: str = ""

    def place(self, lab: Labeller) -> None:
        _label(self.parent, lab, self.cx, self.cy, self.text, self.size, self.cls, self.gap,
               **({"fill": self.fill} if self.fill else {}))


def instrument_id(name: str) -> str:
    """The SVG id of an instrument's element (XML names allow CJK and the middle dot)."""
    return "inst-" + name.replace(" ", "_")


def layout_svg(instruments: dict[str, dict[str, Any]], court: Courtyard, title: str = "") -> str:
    """The courtyard drawing as SVG text.

    ``instruments`` maps name -> facts dict (as in ``Timeline.instruments``: pinyin, english,
    family, xian, position_m …).
    """
    if not instruments:
        raise UserError("no instruments to draw")
    det = Panel(20, 95, DETAIL_X, DETAIL_Y, DETAIL_PX)
    far_y = min([t.position_m[1] for t in court.targets] + [t.fa_m[1] for t in court.targets]
                + [DETAIL_Y[0]]) - 8.0
    far_x = (min([DETAIL_X[0]] + [t.fa_m[0] - 10 for t in court.targets]), DETAIL_X[1] + OVER_EAST_M)
    over = Panel(det.x0 + det.size[0] + 70, 95, far_x, (far_y, DETAIL_Y[1]), OVER_PX)
    width = over.x0 + over.size[0] + 130
    legend_y = max(det.y0 + det.size[1], over.y0 + over.size[1]) + 40
    n_legend = len(instruments) + len(court.targets) + len(court.landmarks) + len(court.listeners) + 4 \
        + sum(len(f.get("places", ())) for f in instruments.values())
    height = legend_y + 20 * n_legend + 40

    root = ET.Element("svg", {"xmlns": SVG_NS, "version": "1.1", "width": f"{width:.0f}",
                              "height": f"{height:.0f}", "viewBox": f"0 0 {width:.0f} {height:.0f}",
                              "font-family": FONT, "role": "img", "aria-labelledby": "yx-title"})
    _el(root, "title", title or "大射仪 乐县 · The Great Archery Rite: the music suspension and the range",
        id="yx-title")
    _el(root, "style", STYLE)
    marker = _el(_el(root, "defs"), "marker", id="yx-arrow", viewBox="0 0 8 8", refX=8, refY=4,
                 markerWidth=6, markerHeight=6, orient="auto")
    _el(marker, "path", d="M0,0 L8,4 L0,8 Z", fill="#777")
    _el(root, "rect", x=0, y=0, width=f"{width:.0f}", height=f"{height:.0f}", fill="#fbf8f0")
    _el(root, "text", title or "大射仪 乐县与侯道 · The music suspension and the target range",
        class_="yx-title", x=20, y=30)
    _el(root, "text", "北 north ↑   东 east →   metres from the middle of the 堂's south edge",
        class_="yx-small", x=20, y=50)

    lab = Labeller((det.x0, det.y0, det.x0 + det.size[0], det.y0 + det.size[1]))
    _draw_detail(root, det, court, instruments, lab)
    _draw_overview(root, over, det, court, instruments)
    _draw_legend(root, 20, legend_y, court, instruments)
    ET.indent(root, "  ")
    return ET.tostring(root, encoding="unicode", xml_declaration=False) + "\n"


def _scale_bar(parent: ET.Element, p: Panel, x_m: float, y_m: float, length_m: float, lab: Labeller) -> None:
    x0, y = p(x_m, y_m)
    x1, _ = p(x_m + length_m, y_m)
    _el(parent, "path", d=f"M{x0},{y - 4} V{y} H{x1} V{y - 4}", fill="none", stroke="#333")
    _el(parent, "text", f"{length_m:g} m", class_="yx-small", x=x1 + 4, y=y, dy="0.35em")
    lab.reserve(x0 - 1, y - 5, x1 + 6 + text_width(f"{length_m:g} m", 11), y + 7)


def _draw_detail(root: ET.Element, p: Panel, court: Courtyard, instruments: dict[str, dict[str, Any]],
                 lab: Labeller) -> None:
    g = _el(root, "g", id="yx-detail")
    w, h = p.size
    _el(g, "rect", class_="yx-panel", x=p.x0, y=p.y0, width=w, height=h, fill="#efe6d2",
        stroke="#8a7a5a")
    _el(g, "text", "乐县 · the music suspension (detail)", class_="yx-sub", x=p.x0 + 6, y=p.y0 - 8)
    # the 堂
    (x0, y1), (x1, y0) = p(court.tang_x_m[0], court.tang_y_m[0]), p(court.tang_x_m[1],
                                                                    min(court.tang_y_m[1], DETAIL_Y[1]))
    _el(g, "rect", id="yx-tang", x=x0, y=y0, width=x1 - x0, height=y1 - y0, fill="#d8c39a",
        stroke="#6b5530", stroke_width=2)
    _el(g, "text", "堂 the hall", class_="yx-sub", x=(x0 + x1) / 2, y=y0 + 18, text_anchor="middle")
    lab.reserve((x0 + x1) / 2 - 45, y0 + 6, (x0 + x1) / 2 + 45, y0 + 26)
    # instruments first: their labels get the best places
    items = [(n, *f["position_m"][:2]) for n, f in instruments.items()
             if p.holds(*f["position_m"][:2])]
    xians = []                  # (县 label, pixel box) of each group of one 县 standing together
    # the 县 are grouped among the hung (and 堂上) bodies alone: an officer standing by a 县 (the
    # 乐正, the 大师 by the east 县) does not join its box
    for grp in clusters([it for it in items if instruments[it[0]].get("xian", "") in XIAN_LABEL]):
        xian = {instruments[n].get("xian", "") for n, _, _ in grp}
        if len(xian) == 1 and next(iter(xian)) in XIAN_LABEL and len(grp) >= 2:
            pts = [p(x, y) for _, x, y in grp]
            box = (min(q[0] for q in pts) - 16, min(q[1] for q in pts) - 16,
                   max(q[0] for q in pts) + 16, max(q[1] for q in pts) + 16)
            xians.append((XIAN_LABEL[next(iter(xian))], box))
            _el(g, "rect", class_="yx-xian", x=box[0], y=box[1], width=box[2] - box[0],
                height=box[3] - box[1], rx=8, fill="none", stroke="#8a7a5a", stroke_dasharray="4 3")
    # every mark first, reserved; then the labels around them
    jobs = [_instrument(g, n, instruments[n], *p(x, y), lab) for n, x, y in items]
    jobs += _places(g, p, instruments, lab)
    for text, (bx0, _, bx1, by1) in xians:    # the 县 named under their boxes
        jobs.append(LabelJob(g, (bx0 + bx1) / 2, by1 - 2, text, 11, 4, "yx-small"))
    for lm in court.landmarks:
        if not p.holds(*lm.position_m[:2]):
            continue
        cx, cy = p(*lm.position_m[:2])
        if lm.name.endswith("阶"):
            _el(g, "rect", class_="yx-stairs", x=cx - 22, y=cy - 22, width=44, height=22,
                fill="#c9b48a", stroke="#6b5530")
            for k in range(1, 4):
                _el(g, "line", x1=cx - 22, x2=cx + 22, y1=cy - 22 + 5.5 * k, y2=cy - 22 + 5.5 * k,
                    stroke="#6b5530", stroke_width=0.6)
            lab.reserve(cx - 22, cy - 22, cx + 22, cy)
            jobs.append(LabelJob(g, cx, cy - 11, lm.name, 13, 26, "yx-label"))
        else:
            _el(g, "path", d=f"M{cx - 6},{cy - 6} L{cx + 6},{cy + 6} M{cx - 6},{cy + 6} L{cx + 6},{cy - 6}",
                stroke="#b00000", stroke_width=2.5)
            lab.reserve(cx - 7, cy - 7, cx + 7, cy + 7)
            jobs.append(LabelJob(g, cx, cy, lm.name, 13, 10, "yx-label"))
    jobs += [_listener(g, li, *p(*li.position_m[:2]), lab) for li in court.listeners
             if p.holds(*li.position_m[:2])]
    _scale_bar(g, p, DETAIL_X[0] + 1, DETAIL_Y[0] + 1, 5.0, lab)
    for job in jobs:
        job.place(lab)


def _instrument(parent: ET.Element, name: str, facts: dict[str, Any], cx: float, cy: float, lab: Labeller,
                size: float = 13.0) -> LabelJob:
    """Draw the instrument's group and mark (reserved); return its label, to place later."""
    g = _el(parent, "g", id=instrument_id(name), class_=f"yx-inst yx-{facts.get('family', 'other')}",
            data_instrument=name, data_xian=facts.get("xian", ""))
    _el(g, "title", f"{name} {facts.get('pinyin', '')} — {facts.get('english', '')}".strip())
    _marker(g, facts.get("family", ""), cx, cy)
    lab.reserve(cx - 11, cy - 8, cx + 11, cy + 8)
    return LabelJob(g, cx, cy, name, size, 11)


def _places(parent: ET.Element, p: Panel, instruments: dict[str, dict[str, Any]],
            lab: Labeller) -> list[LabelJob]:
    """Each performer's other places (facts ``places``), labelled with the place and its cues, an
    arrow from home; and the officials standing by (``attendants``). Marks are drawn and reserved;
    the labels are returned, to place later."""
    jobs = []
    for name, facts in instruments.items():
        home = tuple(facts["position_m"][:2])
        for row in facts.get("places", ()):
            x, y = row["position_m"][:2]
            cues = row.get("cues", [])
            if (x, y) != home and p.holds(x, y):
                cx, cy = p(x, y)
                g = _el(parent, "g", class_="yx-place", data_performer=name, data_where=row["where"],
                        data_cues=" ".join(cues))
                _el(g, "title", f"{name} at {row['where']} during {', '.join(cues)}")
                if p.holds(*home):
                    hx, hy = p(*home)
                    _el(g, "path", d=f"M{hx},{hy} L{cx},{cy}", stroke="#777", stroke_width=0.8,
                        stroke_dasharray="2 3", fill="none", marker_end="url(#yx-arrow)")
                _marker(g, facts.get("family", ""), cx, cy, r=6.0)
                lab.reserve(cx - 7, cy - 7, cx + 7, cy + 7)
                jobs.append(LabelJob(g, cx, cy, f"{name} → {row['where']}", 11, 10))
            for who, pos in row.get("attendants", {}).items():
                if p.holds(*pos[:2]):
                    ax, ay = p(*pos[:2])
                    g = _el(parent, "g", class_="yx-attendant", data_attendant=who,
                            data_cues=" ".join(cues))
                    _el(g, "title", f"{who}, standing by the {name} during {', '.join(cues)}")
                    _el(g, "rect", x=ax - 4, y=ay - 4, width=8, height=8, fill="#fff", stroke="#555")
                    lab.reserve(ax - 5, ay - 5, ax + 5, ay + 5)
                    jobs.append(LabelJob(g, ax, ay, who, 11, 8))
    return jobs


def _listener(parent: ET.Element, li: Listener, cx: float, cy: float, lab: Labeller) -> LabelJob:
    """Draw a listener's seat and facing (reserved); return its label, to place later."""
    g = _el(parent, "g", class_="yx-listener", data_listener=li.name)
    _el(g, "title", f"{li.name} — {li.english} (listener)")
    _el(g, "circle", cx=cx, cy=cy, r=5, fill="#fff", stroke="#0a5", stroke_width=2)
    a = math.radians(li.facing_deg)
    dx, dy = 16 * math.sin(a), -16 * math.cos(a)
    _el(g, "path", d=f"M{cx},{cy} l{dx:.1f},{dy:.1f}", stroke="#0a5", stroke_width=2)
    _el(g, "circle", cx=round(cx + dx, 1), cy=round(cy + dy, 1), r=2.2, fill="#0a5")
    lab.reserve(min(cx, cx + dx) - 5, min(cy, cy + dy) - 5, max(cx, cx + dx) + 5, max(cy, cy + dy) + 5)
    return LabelJob(g, cx, cy, f"{li.name} (听)", 11, 10, "yx-small", "#075")


def _draw_overview(root: ET.Element, p: Panel, det: Panel, court: Courtyard,
                   instruments: dict[str, dict[str, Any]]) -> None:
    g = _el(root, "g", id="yx-range")
    w, h = p.size
    _el(g, "rect", class_="yx-panel", x=p.x0, y=p.y0, width=w, height=h, fill="#e8efe0",
        stroke="#7a8a5a")
    _el(g, "text", "侯道 · the target range", class_="yx-sub", x=p.x0, y=p.y0 - 8)
    lab = Labeller((p.x0, p.y0, p.x0 + w, p.y0 + h))
    # the 堂, cut at the panel's north edge as in the detail panel
    (x0, y1), (x1, y0) = p(court.tang_x_m[0], court.tang_y_m[0]), p(court.tang_x_m[1],
                                                                    min(court.tang_y_m[1], p.yr[1]))
    _el(g, "rect", x=x0, y=y0, width=x1 - x0, height=y1 - y0, fill="#d8c39a", stroke="#6b5530")
    _el(g, "text", "堂", class_="yx-small", x=(x0 + x1) / 2, y=(y0 + y1) / 2, dy="0.35em",
        text_anchor="middle")
    lab.reserve(x0, y0, x1, y1)
    (dx0, dy0), (dx1, dy1) = p(det.xr[0], det.yr[1]), p(det.xr[1], det.yr[0])
    _el(g, "rect", x=dx0, y=dy0, width=dx1 - dx0, height=dy1 - dy0, fill="none", stroke="#8a7a5a",
        stroke_dasharray="3 2")
    lab.reserve(dx0, dy0, dx1, dy1)
    _label(g, lab, dx1, (dy0 + dy1) / 2, "乐县 (detail, left)", 11, "yx-small", 4)
    if court.targets:
        far = min(t.position_m[1] for t in court.targets)
        xa, ya = p(0.0, court.tang_y_m[0])
        _, yb = p(0.0, far)
        _el(g, "line", x1=xa, y1=ya, x2=xa, y2=yb, stroke="#555", stroke_dasharray="6 4")
    jobs = []
    for t in court.targets:
        cx, cy = p(*t.position_m[:2])
        tg = _el(g, "g", class_="yx-target", data_target=t.name)
        _el(tg, "title", f"{t.name} {t.pinyin} — {t.english}; 侯道 {t.distance_bu:g} 步 "
                         f"({court.tang_y_m[0] - t.position_m[1]:.1f} m)")
        _el(tg, "rect", x=cx - 14, y=cy - 4, width=28, height=8, fill="#fff", stroke="#222",
            stroke_width=1.5)
        _el(tg, "circle", cx=cx, cy=cy, r=2.5, fill="#222")
        lab.reserve(cx - 15, cy - 5, cx + 15, cy + 5)
        jobs.append(LabelJob(tg, cx, cy, f"{t.name} {t.distance_bu:g}步", 13, 18, "yx-label"))
        fx, fy = p(*t.fa_m[:2])
        _el(tg, "rect", class_="yx-fa", x=fx - 6, y=fy - 3, width=12, height=6, fill="#8b5a2b")
        lab.reserve(fx - 7, fy - 4, fx + 7, fy + 4)
    for n, f in instruments.items():
        x, y = f["position_m"][:2]
        if not det.holds(x, y):
            jobs.append(_instrument(g, n, f, *p(x, y), lab, size=12))
    jobs += [_listener(g, li, *p(*li.position_m[:2]), lab) for li in court.listeners
             if not det.holds(*li.position_m[:2])]
    _scale_bar(g, p, p.xr[0] + 2, p.yr[0] + 2, 20.0, lab)
    # the 乏 labels after the callers, so the callers' names stay close
    jobs += [LabelJob(g, *p(*t.fa_m[:2]), f"乏 ({t.name})", 11, 8, "yx-small") for t in court.targets]
    for job in jobs:
        job.place(lab)


def _draw_legend(root: ET.Element, x: float, y: float, court: Courtyard,
                 instruments: dict[str, dict[str, Any]]) -> None:
    g = _el(root, "g", id="yx-legend")
    _el(g, "text", "图例 · Legend", class_="yx-sub", x=x, y=y)
    y += 24
    cols = (x + 30, x + 150, x + 270)
    for head, cx in zip(("中文", "pinyin", "English"), cols):
        _el(g, "text", head, class_="yx-small", x=cx, y=y, font_weight="bold")
    y += 20
    for name, f in instruments.items():
        _marker(g, f.get("family", ""), x + 10, y - 4, r=6)
        _el(g, "text", name, class_="yx-label", x=cols[0], y=y)
        _el(g, "text", f.get("pinyin", ""), class_="yx-label", x=cols[1], y=y)
        fam = FAMILY_EN.get(f.get("family", ""), "")
        _el(g, "text", f"{f.get('english', '')} [{f.get('xian', '')}; {fam}]", class_="yx-label",
            x=cols[2], y=y)
        y += 20
    y += 6
    for t in court.targets:
        _el(g, "text", f"{t.name}", class_="yx-label", x=cols[0], y=y)
        _el(g, "text", t.pinyin, class_="yx-label", x=cols[1], y=y)
        west_bu = round((t.position_m[0] - t.fa_m[0]) / court.bu_m, 1)      # where its 乏 stands
        north_bu = round((t.fa_m[1] - t.position_m[1]) / court.bu_m, 1)
        _el(g, "text", f"{t.english}: {t.distance_bu:g} 步 = {t.distance_bu * court.bu_m:.1f} m "
                       f"from the 堂; its 乏 (screen) {west_bu:g} 步 west, {north_bu:g} 步 north",
            class_="yx-label", x=cols[2], y=y)
        y += 20
    for lm in court.landmarks:
        _el(g, "text", lm.name, class_="yx-label", x=cols[0], y=y)
        _el(g, "text", lm.english, class_="yx-label", x=cols[2], y=y)
        y += 20
    for li in court.listeners:
        _el(g, "text", f"{li.name} (听)", class_="yx-label", x=cols[0], y=y)
        _el(g, "text", f"listener: {li.english}", class_="yx-label", x=cols[2], y=y)
        y += 20
    for name, f in instruments.items():     # where performers who move are, cue by cue
        for row in f.get("places", ()):
            _el(g, "text", f"{name} → {row['where']}", class_="yx-label yx-place-key", x=cols[0], y=y,
                data_performer=name, data_cues=" ".join(row.get("cues", [])))
            cues = row.get("cues", [])
            shown = (", ".join(cues) if len(cues) <= 4
                     else f"{cues[0]}, {cues[1]} … {cues[-1]} ({len(cues)} cues)")
            _el(g, "text", "cues: " + shown, class_="yx-label", x=cols[2], y=y)
            y += 20

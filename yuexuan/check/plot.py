"""``check --plot FILE.svg``: the drum evidence on one time axis, drawn as SVG (xml.etree, in the
:mod:`yuexuan.formats.svgstyle` of the courtyard drawing; no plotting library needed).

The top panel spans the 射节 (timeline seconds): the recording's onset strength, the strokes
found (dark when their confidence reaches the threshold, orange and dashed below it, grey when
they match no planned stroke), the planned beats with a line to the stroke heard for each, and the
round-3 shots (green ● released, red ✕ refused, ``?`` above an uncertain verdict). Below it, one
close-up per round-3 shot whose verdict rests on the drum: ±0.6 s around the shot, the tolerance
shaded, each stroke's confidence written beside it — what a judge shows an archer in a dispute.
Every mark has a class (``yx-stroke``, ``yx-plan``, ``yx-shot``, ``yx-uncertain`` …) and a
``<title>`` that a browser shows on hover.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.check.evidence import DrumEvidence, ShotEvidence
from yuexuan.formats.svgstyle import FONT, SVG_NS
from yuexuan.scoring import tally
from yuexuan.scoring.shots import Shots

WIDTH = 1400.0            # px
LEFT, RIGHT = 100.0, 20.0 # px margins of the panels
ZOOM_HALF_S = 0.6         # a close-up spans the shot ± this, seconds
ZOOM_COLS = 4
ZOOM_MAX = 24             # close-ups drawn at most (the first ones in time)
STYLE = """
text { fill: #111; font-size: 12px; }
.yx-title { font-size: 16px; font-weight: bold; }
.yx-axis { stroke: #444; stroke-width: 1; }
.yx-grid { stroke: #ddd; stroke-width: 1; }
.yx-strength { fill: none; stroke: #3f6f9f; stroke-width: 1; }
.yx-stroke { stroke: #222; stroke-width: 1.6; }
.yx-stroke.doubtful { stroke: #e07000; stroke-dasharray: 3 2; stroke-width: 2; }
.yx-stroke.extra { stroke: #999; }
.yx-plan { stroke: #7a7a7a; stroke-width: 1.2; }
.yx-plan.missed { stroke: #d40000; stroke-dasharray: 2 2; }
.yx-link { stroke: #bbb; stroke-width: 0.8; }
.yx-shot.released { fill: #2e8b3e; stroke: #1b5a27; }
.yx-shot.refused { stroke: #c0141c; stroke-width: 2.4; fill: none; }
.yx-uncertain { fill: #e07000; font-weight: bold; font-size: 15px; }
.yx-tol { fill: #2e8b3e; fill-opacity: 0.12; }
.yx-small { font-size: 10px; fill: #333; }
"""


def _el(parent: ET.Element, tag: str, text: str | None = None, tip: str | None = None,
        **attrs: object) -> ET.Element:
    e = ET.SubElement(parent, tag, {k.rstrip("_").replace("_", "-"): str(v)
                                    for k, v in attrs.items()})
    if text is not None:
        e.text = text
    if tip is not None:
        ET.SubElement(e, "title").text = tip
    return e


class _Axis:
    """Seconds → px on a panel [x0, x1]."""

    def __init__(self, t0: float, t1: float, x0: float, x1: float):
        self.t0, self.t1, self.x0, self.x1 = t0, t1, x0, x1

    def __call__(self, t: npt.ArrayLike) -> Any:       # an array of px, or one (a numpy float)
        return self.x0 + (np.asarray(t, dtype=float) - self.t0) * (self.x1 - self.x0) / (self.t1 - self.t0)


def _ticks(t0: float, t1: float, n: int = 12) -> npt.NDArray[np.float64]:
    """Round tick times (s) between t0 and t1, about ``n`` of them."""
    raw = (t1 - t0) / n
    step = min((s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600) if s >= raw),
               default=600.0)
    return np.arange(np.ceil(t0 / step) * step, t1 + 1e-9, step)


def _strength_line(g: ET.Element, ev: DrumEvidence, ax: _Axis, y_base: float, height: float) -> None:
    """The onset strength as one polyline, its maximum per pixel column (so no peak is lost)."""
    t, s = ev.strength_t_s, ev.strength
    keep = (t >= ax.t0) & (t <= ax.t1)
    t, s = t[keep], s[keep]
    if not len(t):
        return
    col = np.floor(ax(t)).astype(np.int64)
    starts = np.r_[0, np.flatnonzero(np.diff(col)) + 1]
    peak = np.maximum.reduceat(s, starts)
    xs = col[starts].astype(float)
    pts = " ".join(f"{x:.1f},{y_base - height * min(1.0, v):.1f}" for x, v in zip(xs, peak))
    _el(g, "polyline", class_="yx-strength", points=pts,
        tip="onset strength of the recording (0 to 1 = the strongest)")


def _time_axis(g: ET.Element, ax: _Axis, y: float, label: bool = True, n: int = 12) -> None:
    _el(g, "line", class_="yx-axis", x1=f"{ax.x0:.1f}", y1=f"{y:.1f}", x2=f"{ax.x1:.1f}", y2=f"{y:.1f}")
    for t in _ticks(ax.t0, ax.t1, n):
        x = float(ax(t))
        _el(g, "line", class_="yx-axis", x1=f"{x:.1f}", y1=f"{y:.1f}", x2=f"{x:.1f}", y2=f"{y + 4:.1f}")
        if label:
            _el(g, "text", f"{t:g}", class_="yx-small", x=f"{x:.1f}", y=f"{y + 15:.1f}",
                text_anchor="middle")


def _stroke_kind(ev: DrumEvidence, k: int, matched: npt.NDArray[np.bool_]) -> str:
    if not matched[k]:
        return "yx-stroke extra"
    return "yx-stroke" if ev.confidence[k] >= ev.threshold else "yx-stroke doubtful"


def _shot_mark(g: ET.Element, x: float, y: float, released: bool, tip: str) -> None:
    if released:
        _el(g, "circle", class_="yx-shot released", cx=f"{x:.1f}", cy=f"{y:.1f}", r="5", tip=tip)
    else:
        r = 5.0
        _el(g, "path", class_="yx-shot refused", tip=tip,
            d=f"M{x - r:.1f},{y - r:.1f} L{x + r:.1f},{y + r:.1f} M{x - r:.1f},{y + r:.1f} "
              f"L{x + r:.1f},{y - r:.1f}")


def _shot_tip(shots: Shots, v: tally.Verdict, proof: ShotEvidence, i: int) -> str:
    c = proof.stroke_confidence[i]
    return (f"row {i + 1}: {shots.archers[i]} at {v.clock_s[i]:.3f} s, "
            f"{'released' if v.released[i] else 'refused'} ({tally.REASONS[v.reason[i]]}); "
            f"offset {1000 * v.offset_s[i]:+.0f} ms"
            + ("" if c != c else f"; stroke confidence {c:.2f}")
            + ("; UNCERTAIN" if proof.uncertain[i] else ""))


def _lanes(g: ET.Element, ev: DrumEvidence, plan: npt.NDArray[np.float64], ax: _Axis, top: float,
           shots: Shots, v: tally.Verdict, proof: ShotEvidence,
           r3: npt.NDArray[np.bool_], zoom: bool) -> float:
    """Strength, strokes, plan and shots between ``top`` and the returned bottom (px)."""
    al = ev.alignment
    live = al.live_s
    matched = np.zeros(len(live), dtype=bool)
    matched[al.live_index] = True
    heard_of_plan: dict[int, int] = dict(zip(al.plan_index.tolist(), al.live_index.tolist()))
    y_str, y_stroke, y_plan, y_shot = top + 70, top + 78, top + 128, top + 150
    _el(g, "text", "onset strength", class_="yx-small", x=f"{ax.x0 - 4:.1f}", y=f"{top + 40:.1f}",
        text_anchor="end")
    _el(g, "text", "heard", class_="yx-small", x=f"{ax.x0 - 4:.1f}", y=f"{y_stroke + 14:.1f}",
        text_anchor="end")
    _el(g, "text", "planned", class_="yx-small", x=f"{ax.x0 - 4:.1f}", y=f"{y_plan - 4:.1f}",
        text_anchor="end")
    _el(g, "text", "shots", class_="yx-small", x=f"{ax.x0 - 4:.1f}", y=f"{y_shot + 4:.1f}",
        text_anchor="end")
    _strength_line(g, ev, ax, y_str, 66)
    k: int | None                              # a heard stroke's index (below: a planned one's, if heard)
    for k in np.flatnonzero((live >= ax.t0) & (live <= ax.t1)).tolist():
        x = float(ax(live[k]))
        _el(g, "line", class_=_stroke_kind(ev, k, matched), x1=f"{x:.1f}", y1=f"{y_stroke:.1f}",
            x2=f"{x:.1f}", y2=f"{y_stroke + 22:.1f}",
            tip=f"stroke heard at {live[k]:.3f} s, confidence {ev.confidence[k]:.2f}"
                + ("" if matched[k] else " (matches no planned stroke)"))
        if zoom:
            _el(g, "text", f"{ev.confidence[k]:.2f}", class_="yx-small", x=f"{x + 3:.1f}",
                y=f"{y_stroke + 10:.1f}")
    for p in np.flatnonzero((plan >= ax.t0) & (plan <= ax.t1)).tolist():
        x = float(ax(plan[p]))
        k = heard_of_plan.get(p)
        _el(g, "line", class_="yx-plan" if k is not None else "yx-plan missed", x1=f"{x:.1f}",
            y1=f"{y_plan - 16:.1f}", x2=f"{x:.1f}", y2=f"{y_plan:.1f}",
            tip=f"planned stroke {p + 1} at {plan[p]:.3f} s"
                + (f", heard {1000 * (live[k] - plan[p]):+.0f} ms" if k is not None else ", not heard"))
        if k is not None and ax.t0 <= live[k] <= ax.t1:
            _el(g, "line", class_="yx-link", x1=f"{x:.1f}", y1=f"{y_plan - 16:.1f}",
                x2=f"{float(ax(live[k])):.1f}", y2=f"{y_stroke + 22:.1f}")
    for i in np.flatnonzero(r3 & (v.clock_s >= ax.t0) & (v.clock_s <= ax.t1)).tolist():
        x = float(ax(v.clock_s[i]))
        _shot_mark(g, x, y_shot, bool(v.released[i]), _shot_tip(shots, v, proof, i))
        if proof.uncertain[i]:
            _el(g, "text", "?", class_="yx-uncertain", x=f"{x:.1f}", y=f"{y_shot - 8:.1f}",
                text_anchor="middle", tip=f"row {i + 1}: uncertain, look again")
    return y_shot + 12


def evidence_svg(ev: DrumEvidence, plan: npt.NDArray[np.float64], shots: Shots, v: tally.Verdict,
                 proof: ShotEvidence, settings: tally.Settings | None = None,
                 title: str = "") -> str:
    """The SVG text of the plot (see the module's doc)."""
    settings = settings or tally.Settings()
    r3 = np.asarray(shots.round) == 3
    times = np.concatenate((plan, ev.alignment.live_s, v.clock_s[r3]))
    t0, t1 = (float(times.min()) - 1.0, float(times.max()) + 1.0) if len(times) else (0.0, 1.0)
    disputed = np.flatnonzero(r3 & tally.rests_on_drum(shots, settings))
    disputed = disputed[np.argsort(v.clock_s[disputed], kind="stable")][:ZOOM_MAX]
    zoom_rows = -(-len(disputed) // ZOOM_COLS)
    zoom_h = 215.0
    height = 60 + 190 + 30 + zoom_h * zoom_rows + 40
    root = ET.Element("svg", {"xmlns": SVG_NS, "version": "1.1", "width": f"{WIDTH:.0f}",
                              "height": f"{height:.0f}", "viewBox": f"0 0 {WIDTH:.0f} {height:.0f}",
                              "font-family": FONT, "role": "img", "aria-labelledby": "yx-title"})
    heading = f"建鼓 strokes heard and planned, and the round-3 shots — {title}".rstrip(" —")
    _el(root, "title", heading, id="yx-title")
    _el(root, "style", STYLE)
    _el(root, "rect", x=0, y=0, width=f"{WIDTH:.0f}", height=f"{height:.0f}", fill="#fbf8f0")
    _el(root, "text", heading, class_="yx-title", x=20, y=26)
    _el(root, "text", f"timeline seconds; confidence threshold {ev.threshold:g}: orange dashed "
                      f"strokes fall below it; grey strokes match no planned stroke; red dashed "
                      f"planned strokes were not heard; ● released ✕ refused ? uncertain",
        class_="yx-small", x=20, y=44)
    main = _el(root, "g", class_="yx-main")
    ax = _Axis(t0, t1, LEFT, WIDTH - RIGHT)
    bottom = _lanes(main, ev, plan, ax, 50, shots, v, proof, r3, zoom=False)
    _time_axis(main, ax, bottom + 4)
    panel_w = (WIDTH - 20) / ZOOM_COLS
    for n, i in enumerate(disputed.tolist()):
        x0 = 20 + (n % ZOOM_COLS) * panel_w + LEFT - 10
        top = 60 + 190 + 30 + (n // ZOOM_COLS) * zoom_h
        g = _el(root, "g", class_="yx-zoom")
        c = float(v.clock_s[i])
        zx = _Axis(c - ZOOM_HALF_S, c + ZOOM_HALF_S, x0, x0 + panel_w - LEFT - 10)
        tol = settings.tolerance_s
        _el(g, "rect", class_="yx-tol", x=f"{float(zx(c - tol)):.1f}", y=f"{top + 20:.1f}",
            width=f"{float(zx(c + tol) - zx(c - tol)):.1f}", height="145",
            tip=f"±{1000 * tol:.0f} ms around the shot")
        _el(g, "text", f"row {i + 1} · {shots.archers[i]} · "
                       f"{'released' if v.released[i] else 'refused'} {tally.REASONS[v.reason[i]]}"
                       + (" ?" if proof.uncertain[i] else ""), x=f"{x0:.1f}", y=f"{top + 12:.1f}")
        b = _lanes(g, ev, plan, zx, top, shots, v, proof, r3 & (np.arange(len(r3)) == i), zoom=True)
        _time_axis(g, zx, b + 4, n=4)
    ET.indent(root, "  ")
    return ET.tostring(root, encoding="unicode", xml_declaration=False) + "\n"

"""The courtyard drawing written by ``yuexuan layout``, parsed as XML and checked against the data."""

from __future__ import annotations

import math
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from yuexuan import cli
from yuexuan.compiler import compile_file

ROOT = Path(__file__).resolve().parent.parent
CUES = ROOT / "cues" / "dashe.toml"
NS = {"svg": "http://www.w3.org/2000/svg"}
S = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def timeline():
    return compile_file(CUES)


@pytest.fixture(scope="module")
def svg(tmp_path_factory):
    out = tmp_path_factory.mktemp("layout") / "court.svg"
    assert cli.main(["layout", str(CUES), "-o", str(out)]) == 0
    return ET.parse(out).getroot()


def _texts(el) -> list:
    return ["".join(t.itertext()) for t in el.iter(f"{S}text")]


def _centre(g) -> tuple:
    """Centre (px) of an instrument's marker: circle centre, rect centre or path vertex mean."""
    for m in g:
        if m.get("class") != "yx-mark":
            continue
        if m.tag == f"{S}circle":
            return float(m.get("cx")), float(m.get("cy"))
        if m.tag == f"{S}rect":
            return (float(m.get("x")) + float(m.get("width")) / 2,
                    float(m.get("y")) + float(m.get("height")) / 2)
        pts = [tuple(map(float, p.split(","))) for p in re.findall(r"-?[\d.]+,-?[\d.]+", m.get("d"))]
        return sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    raise AssertionError("no marker")


def test_every_instrument_named_once_with_an_id(svg, timeline):
    assert svg.tag == f"{S}svg" and svg.get("viewBox")
    for name, facts in timeline.instruments.items():
        found = [g for g in svg.iter(f"{S}g") if g.get("id") == f"inst-{name}"]
        assert len(found) == 1, name
        g = found[0]
        assert g.get("data-instrument") == name
        assert name in _texts(g)                                   # labelled in Chinese
        assert facts["pinyin"] in g.find(f"{S}title").text and facts["english"] in g.find(f"{S}title").text
    legend = _texts(svg.find(".//svg:g[@id='yx-legend']", NS))
    for name, facts in timeline.instruments.items():
        assert name in legend and facts["pinyin"] in legend
        assert any(t.startswith(facts["english"]) for t in legend)


def test_places_follow_the_coordinates(svg, timeline):
    """East is right and north is up, within the detail panel and within the range panel."""
    pos = {n: f["position_m"] for n, f in timeline.instruments.items()}
    px = {n: _centre(g) for g in svg.iter(f"{S}g") if (n := g.get("data-instrument"))}
    detail = [n for n in pos if abs(pos[n][0]) <= 15 and -12.5 <= pos[n][1] <= 9]
    assert len(detail) >= 14
    for a in detail:
        for b in detail:
            if pos[a][0] < pos[b][0] - 0.1:
                assert px[a][0] < px[b][0], (a, b)
            if pos[a][1] < pos[b][1] - 0.1:
                assert px[a][1] > px[b][1], (a, b)
    # one scale: distances in px proportional to metres
    a, b = "笙磬", "颂磬"
    ratio = (px[a][0] - px[b][0]) / (pos[a][0] - pos[b][0])
    c, d = "笙磬", "鑮·东"
    assert (px[d][1] - px[c][1]) / (pos[c][1] - pos[d][1]) == pytest.approx(ratio, rel=0.02)


def test_courtyard_features(svg):
    court = tomllib.loads((ROOT / "ceremony" / "courtyard.toml").read_text(encoding="utf-8"))
    texts = _texts(svg)
    joined = "\n".join(texts)
    for lm in court["landmark"]:
        assert lm["name"] in texts, lm["name"]                    # 阼阶, 西阶, 物
    targets = {g.get("data-target"): g for g in svg.iter(f"{S}g") if g.get("data-target")}
    assert set(targets) == {t["name"] for t in court["target"]} == {"干", "参", "大侯"}
    for t in court["target"]:
        g = targets[t["name"]]
        assert f"{t['name']} {t['distance_bu']}步" in _texts(g)
        assert len(g.findall(f"{S}rect[@class='yx-fa']")) == 1
    # the targets lie in order down the range: 干 nearest the 堂, 大侯 furthest
    ys = {n: float(g.find(f"{S}circle").get("cy")) for n, g in targets.items()}
    assert ys["干"] < ys["参"] < ys["大侯"]
    for li in court["listener"]:
        assert any(g.get("data-listener") == li["name"] for g in svg.iter(f"{S}g")), li["name"]
    assert "堂 the hall" in texts and "东县 east" in texts and "西县 west" in texts
    assert "Legend" in joined


def test_bad_output_is_a_user_error(tmp_path, capsys):
    assert cli.main(["layout", str(CUES), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path) in err


def test_listeners_drawn_where_the_renderer_hears_from(svg, timeline):
    """One reader of the seats: the renderer's listeners (space.listeners) are the courtyard file's,
    and each is drawn at its position on the instruments' scale, its facing arrow pointing its way."""
    from yuexuan.audio.room import space
    court = tomllib.loads((ROOT / "ceremony" / "courtyard.toml").read_text(encoding="utf-8"))
    seats = space.listeners()
    assert {n: (s.position_m, s.facing_deg) for n, s in seats.items()} == {
        li["name"]: (tuple(li["position_m"]), li["facing_deg"]) for li in court["listener"]}
    pos = {n: f["position_m"] for n, f in timeline.instruments.items()}
    px = {n: _centre(g) for g in svg.iter(f"{S}g") if (n := g.get("data-instrument"))}
    a, b = "笙磬", "颂磬"                                           # both in the detail panel
    scale = (px[a][0] - px[b][0]) / (pos[a][0] - pos[b][0])
    drawn = {g.get("data-listener"): g for g in svg.iter(f"{S}g") if g.get("data-listener")}
    for name, seat in seats.items():
        dot, arrow = drawn[name].find(f"{S}circle"), drawn[name].find(f"{S}path")
        x, y = float(dot.get("cx")), float(dot.get("cy"))
        assert x == pytest.approx(px[a][0] + scale * (seat.position_m[0] - pos[a][0]), abs=1.0), name
        assert y == pytest.approx(px[a][1] - scale * (seat.position_m[1] - pos[a][1]), abs=1.0), name
        dx, dy = map(float, re.search(r"l(-?[\d.]+),(-?[\d.]+)", arrow.get("d")).groups())
        facing = math.degrees(math.atan2(dx, -dy)) % 360                # 0 = north (up), 90 = east
        assert min(abs(facing - seat.facing_deg), 360 - abs(facing - seat.facing_deg)) < 1.0, name


def test_bad_courtyard_file_is_one_line(tmp_path, cli):
    """A listener seat that is not three numbers: layout exits 2 naming the file, line and key,
    and the renderer's reader of the seats refuses it the same way."""
    from yuexuan.audio.room import space
    from yuexuan.errors import UserError

    text = (ROOT / "ceremony" / "courtyard.toml").read_text(encoding="utf-8")
    bad = text.replace("position_m = [4.5, 1.5, 1.8]", 'position_m = [4.5, "1.5", 1.8]')
    assert bad != text
    (tmp_path / "ceremony").mkdir()
    court = tmp_path / "ceremony" / "courtyard.toml"
    court.write_text(bad, encoding="utf-8")
    line = bad.splitlines().index('position_m = [4.5, "1.5", 1.8]') + 1
    out = tmp_path / "court.svg"
    r = cli("layout", CUES, "-o", out, env={"YUEXUAN_DATA": str(tmp_path)})
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert f"{court}:{line}: listener[1].position_m: expected [x, y, z] in metres" in r.stderr
    assert not out.exists()
    with pytest.raises(UserError) as exc:
        space.listeners(court)
    assert (exc.value.file, exc.value.line, exc.value.key) == (str(court), line, "listener[1].position_m")


# --- label boxes, estimated from the SVG alone: font size (the style sheet's classes) x characters,
# CJK and other non-ASCII full width, ASCII 0.6 em; height 1.2 em.
FONT_PX = {"yx-small": 11.0, "yx-label": 13.0, "yx-title": 18.0, "yx-sub": 14.0}


def _font_px(el, inherited: float) -> float:
    classes = (el.get("class") or "").split()
    if "yx-place" in classes or "yx-attendant" in classes:     # .yx-place text { font-size: 11px }
        inherited = 11.0
    for c in classes:
        inherited = FONT_PX.get(c, inherited)
    return inherited


def _text_box(el, size: float) -> tuple:
    text = "".join(el.itertext())
    w = sum(size if ord(ch) > 0x7F else 0.6 * size for ch in text)
    x, y = float(el.get("x")), float(el.get("y"))
    x0 = {"start": x, "middle": x - w / 2, "end": x - w}[el.get("text-anchor", "start")]
    top = y - 0.6 * size if el.get("dy") == "0.35em" else y - 0.85 * size    # centred / on a baseline
    return x0, top, x0 + w, top + 1.2 * size


def _path_box(d: str) -> tuple:
    """Bounding box of a path of M/L/H/V (absolute) and l (relative) commands."""
    xs, ys, x, y = [], [], 0.0, 0.0
    for cmd, args in re.findall(r"([MLHVlZ])([^MLHVlZ]*)", d):
        nums = [float(v) for v in re.findall(r"-?[\d.]+", args)]
        if cmd in "ML":
            x, y = nums[0], nums[1]
        elif cmd == "l":
            x, y = x + nums[0], y + nums[1]
        elif cmd == "H":
            x = nums[0]
        elif cmd == "V":
            y = nums[0]
        else:
            continue
        xs.append(x)
        ys.append(y)
    return min(xs), min(ys), max(xs), max(ys)


def _shape_box(el) -> tuple:
    f = lambda k: float(el.get(k))                                             # noqa: E731
    if el.tag == f"{S}rect":
        return f("x"), f("y"), f("x") + f("width"), f("y") + f("height")
    if el.tag == f"{S}circle":
        return f("cx") - f("r"), f("cy") - f("r"), f("cx") + f("r"), f("cy") + f("r")
    if el.tag == f"{S}line":
        return min(f("x1"), f("x2")), min(f("y1"), f("y2")), max(f("x1"), f("x2")), max(f("y1"), f("y2"))
    return _path_box(el.get("d"))


def labels_and_marks(root) -> tuple:
    """([(text, box)], [(tag, box, filled)]) of the drawing. Marks leave out the page background,
    the panels (class yx-panel), dashed outlines and dashed leader lines."""
    labels, marks = [], []

    def walk(el, size, in_defs):
        size = _font_px(el, size)
        in_defs = in_defs or el.tag == f"{S}defs"
        if el.tag == f"{S}text":
            labels.append(("".join(el.itertext()), _text_box(el, size)))
        elif el.tag in (f"{S}rect", f"{S}circle", f"{S}path", f"{S}line") and not in_defs:
            skip = ("yx-panel" in (el.get("class") or "") or el.get("stroke-dasharray")
                    or (el.get("x") == "0" and el.get("y") == "0"))
            if not skip:
                marks.append((el.tag[len(S):], _shape_box(el), el.get("fill") not in (None, "none")))
        for child in el:
            walk(child, size, in_defs)

    walk(root, 13.0, False)
    return labels, marks


def _overlap(a, b, tol: float = 0.5) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > tol and min(a[3], b[3]) - max(a[1], b[1]) > tol


def _inside(a, b) -> bool:
    return b[0] <= a[0] and a[2] <= b[2] and b[1] <= a[1] and a[3] <= b[3]


def _label_clashes(root) -> list:
    labels, marks = labels_and_marks(root)
    clashes = [(s, t) for i, (s, a) in enumerate(labels) for t, b in labels[i + 1:] if _overlap(a, b)]
    # a label may lie wholly on a filled surface (the 堂's own caption, the seats on it), not across
    # a mark's edge
    clashes += [(s, f"{tag} {b}") for s, a in labels for tag, b, filled in marks
                if _overlap(a, b) and not (filled and tag == "rect" and _inside(a, b))]
    return clashes


@pytest.fixture(scope="module")
def tianzi_svg(tmp_path_factory):
    text = CUES.read_text(encoding="utf-8")
    changed = re.sub(r'(?m)^rank = "诸侯"', 'rank = "天子"', text, count=1)
    assert changed != text
    d = tmp_path_factory.mktemp("tianzi")
    (d / "dashe.toml").write_text(changed, encoding="utf-8")
    out = d / "court.svg"
    assert cli.main(["layout", str(d / "dashe.toml"), "-o", str(out)]) == 0
    return ET.parse(out).getroot()


def test_label_boxes_do_not_overlap(svg, tianzi_svg):
    """No two labels' boxes overlap, and no label lies across a drawn mark, for the default cue sheet
    (诸侯, 轩县) and for the 天子's 宫县 (more instruments, a south side)."""
    for root in (svg, tianzi_svg):
        labels, marks = labels_and_marks(root)
        assert len(labels) > 60 and len(marks) > 40                            # the checker sees them
        assert _label_clashes(root) == []


def test_label_checker_finds_a_clash(svg):
    """The checker itself: a label moved onto the 堂's caption and one onto a drum are both found."""
    import copy

    root = copy.deepcopy(svg)
    hall = next(t for t in root.iter(f"{S}text") if "".join(t.itertext()) == "堂 the hall")
    drum = next(g for g in root.iter(f"{S}g") if g.get("data-instrument") == "建鼓·东")
    moved = next(t for t in root.iter(f"{S}text") if "".join(t.itertext()) == "西县 west")
    moved.set("x", hall.get("x"))
    moved.set("y", hall.get("y"))
    label = drum.find(f"{S}text")
    cx, cy = _centre(drum)
    label.set("x", str(cx))
    label.set("y", str(cy))
    found = _label_clashes(root)
    assert ("西县 west", "堂 the hall") in found or ("堂 the hall", "西县 west") in found
    assert any(s == "建鼓·东" and t.startswith("circle") for s, t in found)

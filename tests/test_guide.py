"""The audio guide in a real headless Chromium (selenium): served over HTTP and opened from file://.

The audio is a silent FLAC of the timeline's length written here with soundfile, so the page's
wiring is tested independently of the renderer. Evidence: the browser's own log, its media and
text-track state, and the SVG classes after seeking the <audio> element.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from yuexuan import cli
from yuexuan.compiler import compile_file
from yuexuan.publish import guide
from yuexuan.timeline import to_dict

ROOT = Path(__file__).resolve().parent.parent
CUES = ROOT / "cues" / "dashe.toml"


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with HTTP Range support, as any static host has (browsers seek media with it)."""

    def log_message(self, *args):
        pass

    def send_head(self):
        path = self.translate_path(self.path)
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range") or "")
        if not m or not os.path.isfile(path):
            self._remaining = None
            return super().send_head()
        size = os.path.getsize(path)
        a, b = m.groups()
        start = int(a) if a else max(0, size - int(b))
        end = min(int(b), size - 1) if (a and b) else size - 1
        if start >= size:
            self.send_error(416)
            return None
        f = open(path, "rb")
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self._remaining = end - start + 1
        return f

    def copyfile(self, source, outputfile):
        n = getattr(self, "_remaining", None)
        try:
            if n is None:
                return super().copyfile(source, outputfile)
            while n > 0:
                buf = source.read(min(65536, n))
                if not buf:
                    break
                outputfile.write(buf)
                n -= len(buf)
        except (ConnectionResetError, BrokenPipeError):
            pass                        # the browser dropped a media request it no longer needs


@pytest.fixture(scope="module")
def timeline():
    return compile_file(CUES)


@pytest.fixture(scope="module")
def site(tmp_path_factory, timeline):
    d = tmp_path_factory.mktemp("guide")
    audio = d / "src" / "dashe.flac"
    audio.parent.mkdir()
    sr = 8000
    sf.write(audio, np.zeros(int(np.ceil(timeline.duration * sr)) + sr, dtype="int16"), sr)
    out = d / "site"
    assert cli.main(["guide", str(CUES), "-o", str(out), "--audio", str(audio)]) == 0
    bare = d / "bare"
    assert cli.main(["guide", str(CUES), "-o", str(bare), "--no-audio"]) == 0
    return {"dir": out, "bare": bare, "audio_s": sf.info(str(audio)).duration}


@pytest.fixture(scope="module")
def server(site):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(RangeHandler, directory=str(site["dir"].parent)))
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()
    srv.server_close()


def _open(browser, url: str) -> None:
    browser.get(url)
    _wait(browser, "return document.documentElement.dataset.ready === '1'")
    browser.get_log("browser")          # anything logged so far is checked by the caller


def _wait(browser, script: str, *args, timeout: float = 10.0):
    t_end = time.monotonic() + timeout
    while True:
        v = browser.execute_script(script, *args)
        if v:
            return v
        if time.monotonic() > t_end:
            raise AssertionError(f"timed out waiting for: {script}")
        time.sleep(0.05)


def _problems(log) -> list:
    return [e for e in log if e["level"] in ("SEVERE", "WARNING")]


def _seek(browser, t: float) -> float:
    """Seek the page's <audio> to ``t`` s; return the media's own currentTime after 'seeked'."""
    browser.execute_script("""
        const a = document.getElementById('audio');
        window.__seeked = false;
        a.addEventListener('seeked', () => { window.__seeked = true; }, {once: true});
        a.currentTime = arguments[0];""", t)
    _wait(browser, "return window.__seeked === true")
    time.sleep(0.05)
    return browser.execute_script("return document.getElementById('audio').currentTime")


def _lit(browser, name: str) -> bool:
    cls = browser.execute_script("return document.getElementById(arguments[0]).getAttribute('class')",
                                 f"inst-{name}")
    return "sounding" in cls.split()


def _drum_beat(timeline) -> float:
    """A 貍首 beat at which 建鼓·东 is struck (a note within 10 ms of the beat)."""
    drum = np.array([n.time for n in timeline.notes if n.instrument == "建鼓·东" and n.cue == "lishou"])
    beats = timeline.beat_times("lishou")
    assert len(beats) and len(drum)
    hit = [b for b in beats if np.min(np.abs(drum - b)) < 0.01]
    assert hit, "no 貍首 beat carries a 建鼓·东 stroke"
    return float(hit[len(hit) // 2])


def _quiet_time(timeline, name: str) -> float:
    """A time inside 鹿鸣 at least 2 s away from any note of ``name``."""
    c = timeline.cue("luming")
    on = np.array([n.time for n in timeline.notes if n.instrument == name])
    for t in np.arange(c.start + 1, c.end - 1, 0.5):
        if len(on) == 0 or np.min(np.abs(on - t)) > 2.0:
            return float(t)
    raise AssertionError("no quiet time found")


def _check_page(browser, timeline, site, base_url: str) -> None:
    _open(browser, base_url + "/index.html")
    _wait(browser, "const a = document.getElementById('audio'); return a.readyState >= 1")
    _wait(browser, "const t = document.getElementById('captions'); return t.readyState === 2")
    state = browser.execute_script("""
        const a = document.getElementById('audio'), tr = document.getElementById('captions');
        return {src: a.currentSrc, dur: a.duration, err: a.error && a.error.code,
                tsrc: tr.src, kind: tr.kind, mode: tr.track.mode,
                cues: Array.from(tr.track.cues).map(c => [c.id, c.startTime, c.endTime, c.text])};""")
    assert state["src"].endswith("/dashe.flac") and state["err"] is None
    assert state["dur"] == pytest.approx(site["audio_s"], abs=0.01)
    assert state["kind"] == "captions"
    # one caption per cue, at the cue's times, naming its piece and quoting its source
    by_id = {c.id: c for c in timeline.cues}
    assert [c[0].split()[-1] for c in state["cues"]] == \
        [c.id for c in sorted(timeline.cues, key=lambda c: (c.start, c.end))]
    for cid, start, end, text in state["cues"]:
        c = by_id[cid.split()[-1]]
        assert start == pytest.approx(c.start, abs=0.002) and end == pytest.approx(c.end, abs=0.002)
        assert c.piece in text
        if c.gloss:
            assert c.gloss.split(";")[0][:40] in text
    # seeking: the 建鼓·东 lights on a 貍首 beat and not in a quiet stretch of 鹿鸣
    quiet = _quiet_time(timeline, "建鼓·东")
    assert _seek(browser, quiet) == pytest.approx(quiet, abs=0.05)
    assert not _lit(browser, "建鼓·东")
    beat = _drum_beat(timeline)
    assert _seek(browser, beat) == pytest.approx(beat, abs=0.05)
    assert _lit(browser, "建鼓·东")
    cap = browser.execute_script("return document.getElementById('caption').textContent")
    assert "貍首" in cap
    cur = browser.execute_script(
        "const b = document.querySelector('button.cue[aria-current=\"true\"]'); return b && b.dataset.cue")
    assert cur == "lishou"
    assert _problems(browser.get_log("browser")) == []


def test_served_over_http(browser, server, timeline, site):
    _check_page(browser, timeline, site, server + "/site")
    assert browser.execute_script("return document.getElementById('captions').src").endswith("/captions.vtt")


def test_opened_from_file_url(browser, timeline, site):
    _check_page(browser, timeline, site, site["dir"].as_uri())


def test_cue_list_is_keyboard_operable(browser, server, timeline):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _open(browser, server + "/site/index.html")
    _wait(browser, "return document.getElementById('audio').readyState >= 1")
    buttons = browser.find_elements(By.CSS_SELECTOR, "button.cue")
    assert [b.get_attribute("data-cue") for b in buttons] == \
        [c.id for c in sorted(timeline.cues, key=lambda c: (c.start, c.end))]
    luming = next(b for b in buttons if b.get_attribute("data-cue") == "luming")
    browser.execute_script("arguments[0].focus()", luming)
    luming.send_keys(Keys.ENTER)
    _wait(browser, "return Math.abs(document.getElementById('audio').currentTime - arguments[0]) < 0.05",
          timeline.cue("luming").start)
    assert _lit(browser, "歌") or _wait(browser, "return document.getElementById('inst-歌')"
                                              ".classList.contains('sounding')")
    # ] moves to the next cue
    browser.find_element(By.TAG_NAME, "body").send_keys("]")
    nxt = min((c.start for c in timeline.cues if c.start > timeline.cue("luming").start + 0.05))
    _wait(browser, "return Math.abs(document.getElementById('audio').currentTime - arguments[0]) < 0.05", nxt)
    assert _problems(browser.get_log("browser")) == []


def test_a_later_melody_is_named_in_the_cue_list_and_the_caption(browser, server, timeline):
    """鹿鸣 is a Song melody (风雅十二诗谱): its button and its caption say so; 新宫's do not."""
    _open(browser, server + "/bare/index.html")
    text = browser.execute_script("return Object.fromEntries(Array.from(document.querySelectorAll("
                                  "'button.cue')).map(b => [b.dataset.cue, b.innerText]))")
    assert "后世谱" in text["luming"] and "风雅十二诗谱" in text["luming"]
    assert "后世谱" not in text["xingong"]
    _wait(browser, "return document.getElementById('captions').track.cues.length > 0")
    browser.execute_script("window.yuexuanSeek(arguments[0])", timeline.cue("luming").start + 1)
    assert "not a Zhou tune" in _wait(browser, "return document.getElementById('caption').textContent")
    browser.execute_script("window.yuexuanSeek(arguments[0])", timeline.cue("xingong").start + 1)
    assert "not a Zhou tune" not in _wait(browser, "return document.getElementById('caption').textContent")
    assert _problems(browser.get_log("browser")) == []


#: what the page runs at 390×844 to find text drawn under 12 px (an SVG's text at its drawn size:
#: its font size times the drawing's scale) and any box that scrolls sideways
PHONE_PROBE = """
const small = [], sideways = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode, el = node.parentElement;
  if (!node.textContent.trim() || el.closest('script, style, title, desc, option')) continue;
  const range = document.createRange();
  range.selectNodeContents(node);
  const box = range.getBoundingClientRect();
  if (!range.getClientRects().length || (box.width === 0 && box.height === 0)) continue;
  let px = parseFloat(getComputedStyle(el).fontSize);
  const svg = el.closest('svg');
  if (svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width)
    px *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  if (px < 12) small.push(el.tagName + ' ' + px.toFixed(1) + ' px: ' + node.textContent.trim().slice(0, 30));
}
for (const el of document.querySelectorAll('body, body *')) {
  const style = getComputedStyle(el);
  if (style.display === 'none') continue;
  if (el.scrollWidth > el.clientWidth + 1 && /(auto|scroll)/.test(style.overflowX))
    sideways.push(el.tagName + '#' + el.id + '.' + el.className + ' ' + el.scrollWidth + ' > ' + el.clientWidth);
  const r = el.getBoundingClientRect();
  if (r.width && (r.right > innerWidth + 1 || r.left < -1) && !el.closest('.skip'))
    sideways.push(el.tagName + '#' + el.id + ' spans ' + r.left.toFixed(0) + '..' + r.right.toFixed(0));
}
return {small, sideways, page: [document.documentElement.scrollWidth, innerWidth]};
"""


def _shown_text(browser, selector: str) -> dict:
    return browser.execute_script("return Object.fromEntries(Array.from(document.querySelectorAll("
                                  "arguments[0])).map(b => [b.dataset.cue, b.innerText]))", selector)


def test_bilingual_and_phone_width(browser, server, timeline, site):
    """Both languages, either alone (the choice kept, and set by ?lang=), English piece names and
    rank line; at 390×844 (a phone, emulated) nothing scrolls sideways and no text is under 12 px.
    Evidence: the page as Chromium lays it out; the English names are the pieces' own files'."""
    import tomllib

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    pieces_en = {}
    for f in (ROOT / "pieces").glob("*.toml"):
        d = tomllib.loads(f.read_text(encoding="utf-8"))
        pieces_en[d["title"]] = d["english"]
    short = {t["zh"]: t.get("short") for t in tomllib.loads(
        (ROOT / "ceremony" / "glossary.toml").read_text(encoding="utf-8"))["term"]}
    mode = "return document.documentElement.dataset.lang"
    visible = """return [Array.from(document.querySelectorAll('body [lang=zh]'))
        .filter(e => e.offsetParent !== null).length, Array.from(document.querySelectorAll('body [lang=en]'))
        .filter(e => e.offsetParent !== null).length]"""
    try:
        _open(browser, server + "/site/index.html")
        assert browser.execute_script(mode) == "both"
        zh, en = browser.execute_script(visible)
        assert zh > 5 and en > 5
        Select(browser.find_element(By.ID, "lang")).select_by_value("en")
        shown = browser.execute_script(visible)
        assert shown[0] == 0 and shown[1] > 5
        # English mode names each piece in English, and the rank in English
        text = _shown_text(browser, "button.cue")
        named = [c for c in timeline.cues if c.piece in pieces_en]
        assert len(named) >= 8
        for c in named:
            assert pieces_en[c.piece] in text[c.id], (c.id, text[c.id])
        rank = browser.execute_script("return document.querySelector('.rank-en').innerText")
        c = timeline.ceremony
        assert short[c.rank] in rank and short[c.suspension] in rank, rank
        # the choice is kept: a plain reload stays in English; ?lang= sets it (a kiosk's link)
        _open(browser, server + "/site/index.html")
        assert browser.execute_script(mode) == "en"
        assert browser.execute_script("return document.getElementById('lang').value") == "en"
        _open(browser, server + "/site/index.html?lang=zh")
        assert browser.execute_script(mode) == "zh" and browser.execute_script(visible)[1] == 0
        _open(browser, server + "/site/index.html?lang=nonsense")
        assert browser.execute_script(mode) == "zh"
        _open(browser, server + "/site/index.html?lang=both")
        assert browser.execute_script(mode) == "both"
        # the glossary is linked and written beside the page
        assert browser.execute_script("return !!document.querySelector('a[href=\"glossary.html\"]')")
        assert "释获" in (site["dir"] / "glossary.html").read_text(encoding="utf-8")
        # a phone: 390×844 CSS px, as an iPhone 12–15 reports
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True})
        for lang in ("both", "en"):
            _open(browser, server + f"/site/index.html?lang={lang}")
            found = browser.execute_script(PHONE_PROBE)
            assert found["page"][0] <= found["page"][1], f"page scrolls sideways on a phone: {found['page']}"
            assert found["sideways"] == [], found["sideways"]
            assert found["small"] == [], found["small"]
            # the drawing is there, whole, and its key names the instruments
            svg_w = browser.execute_script("return document.querySelector('.svgwrap svg')"
                                           ".getBoundingClientRect().width")
            assert 300 <= svg_w <= 390
            keys = browser.execute_script("return Array.from(document.querySelectorAll('.key-item'))"
                                          ".filter(e => e.offsetParent !== null).length")
            assert keys == len(timeline.instruments)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        browser.execute_script("localStorage.clear()")
    assert _problems(browser.get_log("browser")) == []


def test_page_without_audio_has_a_notice_and_a_working_slider(browser, server, timeline):
    _open(browser, server + "/bare/index.html")
    assert browser.execute_script("return document.querySelector('#audio source')") is None
    assert "No audio" in browser.execute_script("return document.querySelector('.notice').textContent")
    beat = _drum_beat(timeline)
    browser.execute_script("const s = document.getElementById('time'); s.value = arguments[0];"
                           "s.dispatchEvent(new Event('input'));", beat)
    # the slider has 0.1 s steps; the stroke is held long enough to still show
    assert _lit(browser, "建鼓·东")
    assert _problems(browser.get_log("browser")) == []


def test_site_files(site, timeline):
    d = site["dir"]
    names = {p.name for p in d.iterdir()}
    assert {"index.html", "app.js", "style.css", "timeline.json", "captions.vtt", "layout.svg",
            "dashe.flac"} <= names
    assert json.loads((d / "timeline.json").read_text(encoding="utf-8")) == \
        json.loads(json.dumps(to_dict(timeline)))
    page = (d / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "the page must not reach the network"
    for n in timeline.instrument_names():
        assert f'id="inst-{n}"' in page
    # a static host must be able to read every file
    assert all(p.stat().st_mode & 0o044 == 0o044 for p in d.iterdir())
    # the script and the style sheet are the package's own files, copied as they are, and linked
    static = Path(guide.__file__).parent / "guide_static"
    for name in ("app.js", "style.css"):
        assert (d / name).read_bytes() == (static / name).read_bytes(), name
    assert '<script src="app.js"></script>' in page and '<link rel="stylesheet" href="style.css">' in page


def test_vtt_text(timeline):
    vtt = guide.cue_vtt(timeline)
    assert vtt.startswith("WEBVTT\n")
    blocks = [b.splitlines() for b in vtt.split("\n\n") if "-->" in b]
    assert len(blocks) == len(timeline.cues)
    for b, c in zip(blocks, sorted(timeline.cues, key=lambda c: (c.start, c.end))):
        assert b[0].split()[-1] == c.id
        a, z = (sum(float(x) * m for x, m in zip(t.split(":"), (3600, 60, 1))) for t in b[1].split(" --> "))
        assert a == pytest.approx(c.start, abs=0.0011) and z == pytest.approx(c.end, abs=0.0011)
        assert c.piece in b[2]


def test_build_step_uses_the_rendered_audio(tmp_path, timeline):
    from yuexuan.commands import guide as guide_cmd
    from yuexuan.data import DataSource

    sf.write(tmp_path / "dashe.wav", np.zeros(800, dtype="int16"), 8000)
    written = guide_cmd.build_step(timeline, CUES, tmp_path, DataSource())
    assert tmp_path / "guide" / "index.html" in written
    assert (tmp_path / "guide" / "dashe.wav").is_file()
    assert 'src="dashe.wav"' in (tmp_path / "guide" / "index.html").read_text(encoding="utf-8")


def test_bad_audio_is_a_user_error(tmp_path, capsys):
    assert cli.main(["guide", str(CUES), "-o", str(tmp_path / "g"), "--audio", str(tmp_path / "no.flac")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no.flac" in err


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def test_audio_of_another_selection_is_refused_naming_both_lengths(tmp_path, capsys, timeline):
    """``guide cues/dashe.toml --audio luming.wav``: 鹿鸣's render is not the whole sheet's; so is
    audio a random amount beyond 2 s short or 2 s + the ring-out long (seed printed)."""
    import random

    from yuexuan.commands.guide import LENGTH_SLACK_S, RING_OUT_S

    cue = timeline.cue("luming")
    seed = random.randrange(2 ** 32)
    rng = random.Random(seed)
    cases = [cue.end - cue.start, timeline.duration - LENGTH_SLACK_S - rng.uniform(0.1, 60),
             timeline.duration + LENGTH_SLACK_S + RING_OUT_S + rng.uniform(0.1, 60)]
    for k, seconds in enumerate(cases):
        audio = tmp_path / f"luming{k}.wav"
        sf.write(audio, np.zeros(int(seconds * 1000), dtype="int16"), 1000)
        assert cli.main(["guide", str(CUES), "-o", str(tmp_path / "g"), "--audio", str(audio)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, (seed, err)
        assert _clock(seconds) in err and _clock(timeline.duration) in err and audio.name in err, (seed, err)
    assert not (tmp_path / "g").exists()


@pytest.fixture(scope="module")
def rendered_site(tmp_path_factory):
    """The renderer's audio of 貍首 alone and a guide of the same selection."""
    d = tmp_path_factory.mktemp("rendered")
    audio = d / "lishou.flac"
    assert cli.main(["render", str(CUES), "-o", str(audio), "--cues", "lishou", "--sample-rate", "22050"]) == 0
    assert cli.main(["guide", str(CUES), "--cues", "lishou", "-o", str(d / "site"), "--audio", str(audio)]) == 0
    return d / "site", compile_file(CUES, ["lishou"])


def test_rendered_drum_is_heard_where_the_page_lights_it(browser, rendered_site):
    """With the renderer's audio, the 建鼓·东 lights at a 貍首 beat and the audio has an onset there."""
    import librosa

    site_dir, tl = rendered_site
    _open(browser, (site_dir / "index.html").as_uri())
    _wait(browser, "return document.getElementById('audio').readyState >= 1")
    beat = _drum_beat(tl)
    assert _seek(browser, beat) == pytest.approx(beat, abs=0.05)
    assert _lit(browser, "建鼓·东")
    # the renderer's sidecar captions are the ones the page uses
    assert (site_dir / "captions.vtt").read_text(encoding="utf-8") == \
        (site_dir.parent / "lishou.vtt").read_text(encoding="utf-8")
    y, sr = librosa.load(str(site_dir / "lishou.flac"), sr=22050, mono=True,
                         offset=max(0.0, beat - 2.0), duration=4.0)
    onsets = librosa.onset.onset_detect(y=y, sr=sr, units="time", backtrack=False) + max(0.0, beat - 2.0)
    assert np.min(np.abs(onsets - beat)) < 0.05, (beat, onsets)
    assert _problems(browser.get_log("browser")) == []


def test_layout_svg_renders_in_chromium(browser, site, timeline):
    """The standalone drawing, as the browser lays it out: every instrument inside the picture and
    no two instrument labels overlapping."""
    _open_svg = (site["dir"] / "layout.svg").as_uri()
    browser.get(_open_svg)
    boxes = browser.execute_script("""
        const svg = document.documentElement, vb = svg.viewBox.baseVal, out = {};
        for (const g of document.querySelectorAll('g[data-instrument]')) {
          const t = g.querySelector('text').getBBox(), b = g.getBBox();
          out[g.dataset.instrument] = {text: [t.x, t.y, t.x + t.width, t.y + t.height],
                                       all: [b.x, b.y, b.x + b.width, b.y + b.height]};
        }
        return {vb: [vb.x, vb.y, vb.x + vb.width, vb.y + vb.height], boxes: out};""")
    assert set(boxes["boxes"]) == set(timeline.instruments)
    x0, y0, x1, y1 = boxes["vb"]
    for name, b in boxes["boxes"].items():
        a = b["all"]
        assert x0 <= a[0] and a[2] <= x1 and y0 <= a[1] and a[3] <= y1, name
        assert b["text"][2] - b["text"][0] > 0, name
    names = sorted(boxes["boxes"])
    for i, p in enumerate(names):
        for q in names[i + 1:]:
            a, b = boxes["boxes"][p]["text"], boxes["boxes"][q]["text"]
            overlap = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
            assert not (overlap[0] > 1 and overlap[1] > 1), (p, q, a, b)
    assert _problems(browser.get_log("browser")) == []


def test_guide_renders_its_own_audio_when_none_is_given(tmp_path):
    out = tmp_path / "g"
    assert cli.main(["guide", str(CUES), "--cues", "lishou", "-o", str(out)]) == 0
    info = sf.info(str(out / "dashe.flac"))
    tl = compile_file(CUES, ["lishou"])
    assert info.duration >= tl.duration - 0.01
    page = (out / "index.html").read_text(encoding="utf-8")
    assert 'src="dashe.flac"' in page and "No audio" not in page
    # its captions are the renderer's chapters for that audio
    assert (out / "captions.vtt").read_text(encoding="utf-8") == (out / "dashe.vtt").read_text(encoding="utf-8")


def test_static_track_has_a_src(site):
    """The <track> validates: its src is in the page as written (the data: URL is app.js's, for
    file:// only)."""
    import xml.etree.ElementTree as ET

    for d in (site["dir"], site["bare"]):
        page = (d / "index.html").read_text(encoding="utf-8")
        tags = re.findall(r"<track\b[^>]*>", page)
        assert len(tags) == 1
        attrs = dict(re.findall(r'(\w+)="([^"]*)"', tags[0]))
        assert attrs["src"] == "captions.vtt" and (d / "captions.vtt").is_file()
        assert "data:" not in tags[0]
        ET.fromstring(tags[0].replace(" default>", ' default="default"/>'))      # one well-formed tag


@pytest.mark.parametrize("where", ["http", "file"])
def test_first_caption_shown_at_0(browser, server, timeline, site, where):
    """Opened and not yet played or sought: the clock reads 0:00 and the caption box shows the
    first cue's caption (from the served captions.vtt, or over file:// the data: URL)."""
    url = server + "/site/index.html" if where == "http" else (site["dir"] / "index.html").as_uri()
    _open(browser, url)
    first = min(timeline.cues, key=lambda c: (c.start, c.end))
    assert first.start == 0.0
    cap = _wait(browser, "return document.getElementById('caption').textContent")
    state = browser.execute_script("""
        const a = document.getElementById('audio'), tr = document.getElementById('captions');
        return {t: a.currentTime, paused: a.paused, clock: document.getElementById('clock').textContent,
                tsrc: tr.src, first: tr.track.cues[0].text};""")
    assert state["t"] == 0 and state["paused"] and state["clock"] == "0:00"
    assert cap == state["first"] and first.piece in cap
    if where == "http":
        assert state["tsrc"].endswith("/site/captions.vtt")
    else:
        assert state["tsrc"].startswith("data:text/vtt")
    assert _problems(browser.get_log("browser")) == []

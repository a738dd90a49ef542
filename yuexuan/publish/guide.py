"""The audio guide: a self-contained static site (no network) built from one Timeline.

Files written into the output folder: ``index.html`` (with the courtyard SVG inline and the
timeline JSON embedded, so it works from ``file://``), ``app.js`` and ``style.css`` (package files,
``yuexuan/publish/guide_static/``),
``timeline.json`` (the JSON contract, for download), ``captions.vtt``, ``glossary.html`` (the
rite's words, :mod:`yuexuan.publish.glossary`) and, when given, the audio. The page lights the
instruments sounding at the audio's current time, shows the caption of the current cue and lists
the cues as buttons that seek to them. It reads in Chinese, English or both (``?lang=en|zh|both``,
else the reader's last choice, kept in localStorage); on a phone the drawing fits the screen
without its words, and an HTML key beside it names and lights the instruments.
"""

from __future__ import annotations

import html
import json
import os
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from yuexuan import atomic
from yuexuan.data import DataSource
from yuexuan.publish import drawing
from yuexuan.publish import glossary as glossary_page
from yuexuan.rite import courtyard, glossary, pieces
from yuexuan.timeline import Timeline, to_dict

AUDIO_TYPES = {".flac": "audio/flac", ".wav": "audio/wav", ".ogg": "audio/ogg", ".oga": "audio/ogg",
               ".opus": "audio/ogg", ".mp3": "audio/mpeg", ".m4a": "audio/mp4"}
ACTION_EN = {"奏": "played", "歌": "sung", "管": "piped", "射": "shooting", "诺": "answer",
             "获": "hit call", "命": "order", "告": "announcement"}
STATIC_FILES = ("app.js", "style.css")     # package files in yuexuan/publish/guide_static/, copied as is


def static_text(name: str) -> str:
    """The text of the guide's static file ``name`` (one of :data:`STATIC_FILES`)."""
    return (resources.files("yuexuan.publish") / "guide_static" / name).read_text(encoding="utf-8")


def cue_vtt(timeline: Timeline) -> str:
    """WebVTT captions, one per cue, from the renderer's VTT writer (the one writer of captions)."""
    from yuexuan.formats import captions

    rows = sorted(((c.start, c.end, c) for c in timeline.cues), key=lambda r: (r[0], r[1]))
    return captions.vtt_text(rows)


def _json_for_script(obj: Any) -> str:
    """JSON safe inside a <script> element (no ``<`` at all)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _mmss(t_s: float) -> str:
    t = int(t_s)
    return f"{t // 3600}:{t // 60 % 60:02d}:{t % 60:02d}" if t >= 3600 else f"{t // 60}:{t % 60:02d}"


def english_names(source: DataSource = DataSource()) -> dict[str, str]:
    """{characters: English name} the page shows beside the rite's words: each piece's title
    (pieces/*.toml ``english``) and the glossary's short names (ranks, suspensions)."""
    names = glossary.short_names(glossary.load(source))
    names.update({title: p.english for title, p in pieces.load_all(source).items() if p.english})
    return names


def _cue_items(timeline: Timeline, english: dict[str, str]) -> str:
    e = html.escape
    items = []
    for c in sorted(timeline.cues, key=lambda c: (c.start, c.end)):
        act = ACTION_EN.get(c.action, "")
        badge = ('<span class="badge" title="a modern reconstruction"><span lang="zh">重构</span> '
                 '<span lang="en">reconstruction</span></span>' if c.reconstruction else "")
        if c.later_source:
            badge += (' <span class="badge later" title="melody from a later source, not a Zhou tune">'
                      f'<span lang="zh">后世谱</span> <span lang="en">later melody:</span> {e(c.later_source)}</span>')
        moment = f'<span class="moment" lang="zh">{e(c.starts_when)}</span>' if c.starts_when else ""
        if c.starts_when_en:
            moment += f'<span class="moment" lang="en">When: {e(c.starts_when_en)}</span>'
        gloss = f'<span class="gloss" lang="en">{e(c.gloss)}</span>' if c.gloss else ""
        title_en = english.get(c.piece, "")
        en = " · ".join(x for x in (e(title_en), act) if x)
        items.append(
            f'<li><button type="button" class="cue" data-cue="{e(c.id)}" data-start="{c.start:.6f}" '
            f'data-end="{c.end:.6f}"><span class="t">{_mmss(c.start)}</span> '
            f'<span class="piece" lang="zh">{e(c.piece)} · {e(c.action)}</span>'
            f'{f" <span class={chr(34)}piece-en{chr(34)} lang={chr(34)}en{chr(34)}>{en}</span>" if en else ""}'
            f' {badge}{moment}{gloss}</button></li>')
    return "\n".join(items)


def _instrument_key(timeline: Timeline) -> str:
    """The drawing's key as HTML, for a phone (where the drawing is shown without its words): one
    item per instrument, lit with it (app.js), a tap marking it in the drawing."""
    e = html.escape
    items = []
    for name, facts in timeline.instruments.items():
        en = ", ".join(x for x in (facts.get("pinyin", ""), facts.get("english", "")) if x)
        items.append(f'<li><button type="button" class="key-item yx-{e(str(facts.get("family", "")))}" '
                     f'data-instrument="{e(name)}"><span lang="zh">{e(name)}</span>'
                     f'{f" <span lang={chr(34)}en{chr(34)}>{e(en)}</span>" if en else ""}</button></li>')
    return "\n".join(items)


def index_html(timeline: Timeline, svg: str, vtt: str, audio_name: str | None,
               english: dict[str, str] | None = None) -> str:
    """The page. ``audio_name`` is the audio file beside it, or None for no audio; ``english``:
    the English names of the rite's words (:func:`english_names`; default the packaged data's)."""
    e = html.escape
    c = timeline.ceremony
    english = english_names() if english is None else english
    name_en = english.get(c.name, "")            # the glossary's short name of the rite
    rite_en = e(name_en[:1].upper() + name_en[1:]) if name_en else e(c.name)
    rank_en = (f"{e(english.get(c.rank, c.rank))}'s rite ({e(c.rank)}), "
               f"{e(english.get(c.suspension, c.suspension))} ({e(c.suspension)})")
    if audio_name:
        typ = AUDIO_TYPES.get(Path(audio_name).suffix.lower(), "")
        audio = (f'<audio id="audio" controls preload="auto">'
                 f'<source src="{e(audio_name)}"{f" type={chr(34)}{typ}{chr(34)}" if typ else ""}>'
                 f'<track id="captions" kind="captions" src="captions.vtt" srclang="zh" '
                 f'label="中文 / English" default></audio>')
        notice = ""
    else:
        audio = ('<audio id="audio" controls preload="none"><track id="captions" kind="captions" '
                 'src="captions.vtt" srclang="zh" label="中文 / English" default></audio>')
        notice = ('<p class="notice" role="status"><span lang="zh">没有音频：此页未附录音。'
                  '时间滑块仍可走动，乐器随之点亮。</span> <span lang="en">No audio: this page was built '
                  'without a recording. The time slider still moves through the rite and lights the '
                  'instruments.</span></p>')
    svg_body = svg[svg.index("<svg"):]
    return f"""<!doctype html>
<html lang="zh-Hans" data-lang="both">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(c.name)} 乐县导览 · {rite_en} — audio guide</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="style.css">
</head>
<body>
<a class="skip" href="#cue-list">跳到乐目 · Skip to the cue list</a>
<header>
<h1><span lang="zh">{e(c.name)} · 乐县导览</span> <span lang="en">{rite_en}: an audio guide</span></h1>
<p class="meta"><span lang="zh">{e(c.rank)} · {e(c.suspension)} · 黄钟 = {c.huangzhong_hz:g} Hz · 共 {_mmss(timeline.duration)}</span>
<span lang="en" class="rank-en">{rank_en}, 黄钟 (huángzhōng) = {c.huangzhong_hz:g} Hz, {_mmss(timeline.duration)} in all</span>
<a href="glossary.html"><span lang="zh">词汇</span> <span lang="en">Glossary: the rite's words</span></a></p>
<label class="lang"><span lang="zh">语言</span> <span lang="en">Language</span>
<select id="lang"><option value="both">中文 + English</option><option value="zh">中文</option><option value="en">English</option></select></label>
</header>
<main>
<section id="player" aria-label="播放 · Player">
{notice}{audio}
<div class="scrub"><label for="time"><span lang="zh">时间</span> <span lang="en">Time</span></label>
<input id="time" type="range" min="0" max="{timeline.duration:.3f}" step="0.1" value="0">
<output id="clock" for="time">0:00</output></div>
<div id="caption" class="caption" aria-live="polite" aria-atomic="true"></div>
<p id="sounding" class="sounding-list" aria-live="off"></p>
<p class="keys"><span lang="zh">键盘：[ 上一段，] 下一段，空格 播放/暂停（焦点在播放器时）。</span>
<span lang="en">Keys: [ previous cue, ] next cue; Space plays/pauses when the player has focus.</span></p>
</section>
<section id="map" aria-label="乐县图 · The courtyard">
<h2><span lang="zh">乐县图</span> <span lang="en">Where each sound comes from</span></h2>
<div class="svgwrap" role="group" aria-label="乐县图 · The courtyard drawing">{svg_body}</div>
<ul id="instrument-key" class="instrument-key" aria-label="乐器 · Instruments">
{_instrument_key(timeline)}
</ul>
</section>
<nav id="cue-list" aria-label="乐目 · Cues">
<h2><span lang="zh">乐目</span> <span lang="en">Cues</span></h2>
<ol>
{_cue_items(timeline, english)}
</ol>
</nav>
</main>
<footer><p><span lang="zh">由 yuexuan 生成；时间皆出自同一时间线（timeline.json）。</span>
<span lang="en">Made by yuexuan; every time on this page comes from one timeline (<a href="timeline.json">timeline.json</a>, captions: <a href="captions.vtt">captions.vtt</a>).</span></p>
<p><span lang="zh">歌者与呼者的字音按现代普通话合成，并非周代读音。</span>
<span lang="en">The singers and callers pronounce the words in modern Standard Mandarin, not as they were spoken under the Zhou.</span></p></footer>
<script type="application/json" id="timeline-data">{_json_for_script(to_dict(timeline))}</script>
<script type="application/json" id="captions-data">{_json_for_script(vtt)}</script>
<script src="app.js"></script>
</body>
</html>
"""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(target: Path, text: str | None = None, copy_from: Path | None = None) -> None:
    """Write ``text`` (or ``copy_from``: hard-linked where possible, else copied) to ``target``
    atomically, readable by a web server (mode 0644 less the umask; temporary files are 0600)."""
    with atomic.atomic_path(target) as tmp:
        if copy_from is not None:
            try:
                os.unlink(tmp)
                os.link(copy_from, tmp)
            except OSError:
                shutil.copyfile(copy_from, tmp)
        else:
            assert text is not None                 # one of text and copy_from is given
            tmp.write_bytes(text.encode("utf-8"))
        os.chmod(tmp, 0o644 & ~_umask())


def write_site(timeline: Timeline, out_dir: str | Path, audio: str | Path | None = None,
               vtt: str | None = None, court: courtyard.Courtyard | None = None,
               source: DataSource = DataSource()) -> list[Path]:
    """Write the guide into ``out_dir``; return the paths written.

    ``audio`` is copied beside the page (unless it is already there). ``vtt`` (the captions'
    text) defaults to the renderer's sidecar beside ``audio`` (``NAME.vtt``), else :func:`cue_vtt`.
    ``court`` is drawn in the layout (default: the packaged ``ceremony/courtyard.toml``); the
    glossary and the English names come from ``source``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if vtt is None and audio is not None and Path(audio).with_suffix(".vtt").is_file():
        vtt = Path(audio).with_suffix(".vtt").read_text(encoding="utf-8")
    if vtt is None:
        vtt = cue_vtt(timeline)
    svg = drawing.layout_svg(timeline.instruments, court or courtyard.load(),
                             f"{timeline.ceremony.name} 乐县与侯道 · the music suspension and the range")
    written = []
    audio_name = None
    if audio is not None:
        src = Path(audio)
        audio_name = src.name
        dst = out / audio_name
        if not (dst.exists() and dst.resolve() == src.resolve()):
            _publish(dst, copy_from=src)
        written.append(dst)
    files = {"captions.vtt": vtt, **{name: static_text(name) for name in STATIC_FILES}, "layout.svg": svg,
             "timeline.json": json.dumps(to_dict(timeline), ensure_ascii=False, indent=1) + "\n",
             "glossary.html": glossary_page.page_html(glossary.load(source), timeline.ceremony.huangzhong_hz),
             "index.html": index_html(timeline, svg, vtt, audio_name, english_names(source))}
    for name, text in files.items():
        _publish(out / name, text)
        written.append(out / name)
    return written

"""The audio guide: a self-contained static site (no network) built from one Timeline.

Files written into the output folder: ``index.html`` (with the courtyard SVG inline and the
timeline JSON embedded, so it works from ``file://``), ``app.js``, ``style.css``,
``timeline.json`` (the JSON contract, for download), ``captions.vtt`` and, when given, the
audio. The page lights the instruments sounding at the audio's current time, shows the
caption of the current cue and lists the cues as buttons that seek to them.
"""

from __future__ import annotations

import html
import json
import os
import shutil
from pathlib import Path

from yuexuan import atomic
from yuexuan.publish import drawing
from yuexuan.timeline import Timeline, to_dict

AUDIO_TYPES = {".flac": "audio/flac", ".wav": "audio/wav", ".ogg": "audio/ogg", ".oga": "audio/ogg",
               ".opus": "audio/ogg", ".mp3": "audio/mpeg", ".m4a": "audio/mp4"}
ACTION_EN = {"奏": "played", "歌": "sung", "管": "piped", "射": "shooting", "诺": "answer",
             "获": "hit call"}


def cue_vtt(timeline: Timeline) -> str:
    """WebVTT captions, one per cue, from the renderer's VTT writer (the one writer of captions)."""
    from yuexuan.audio import render

    rows = sorted(((c.start, c.end, c) for c in timeline.cues), key=lambda r: (r[0], r[1]))
    return render.vtt_text(rows)


def _json_for_script(obj) -> str:
    """JSON safe inside a <script> element (no ``<`` at all)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _mmss(t_s: float) -> str:
    t = int(t_s)
    return f"{t // 3600}:{t // 60 % 60:02d}:{t % 60:02d}" if t >= 3600 else f"{t // 60}:{t % 60:02d}"


def _cue_items(timeline: Timeline) -> str:
    e = html.escape
    items = []
    for c in sorted(timeline.cues, key=lambda c: (c.start, c.end)):
        act = ACTION_EN.get(c.action, "")
        badge = ('<span class="badge" title="a modern reconstruction">重构 '
                 '<span lang="en">reconstruction</span></span>' if c.reconstruction else "")
        moment = f'<span class="moment" lang="zh">{e(c.starts_when)}</span>' if c.starts_when else ""
        gloss = f'<span class="gloss" lang="en">{e(c.gloss)}</span>' if c.gloss else ""
        items.append(
            f'<li><button type="button" class="cue" data-cue="{e(c.id)}" data-start="{c.start:.6f}" '
            f'data-end="{c.end:.6f}"><span class="t">{_mmss(c.start)}</span> '
            f'<span class="piece" lang="zh">{e(c.piece)} · {e(c.action)}</span>'
            f'{f" <span lang=en>({act})</span>" if act else ""} {badge}{moment}{gloss}</button></li>')
    return "\n".join(items)


def index_html(timeline: Timeline, svg: str, vtt: str, audio_name: str | None) -> str:
    """The page. ``audio_name`` is the audio file beside it, or None for no audio."""
    e = html.escape
    c = timeline.ceremony
    if audio_name:
        typ = AUDIO_TYPES.get(Path(audio_name).suffix.lower(), "")
        audio = (f'<audio id="audio" controls preload="auto">'
                 f'<source src="{e(audio_name)}"{f" type={chr(34)}{typ}{chr(34)}" if typ else ""}>'
                 f'<track id="captions" kind="captions" srclang="zh" label="中文 / English" '
                 f'default></audio>')
        notice = ""
    else:
        audio = ('<audio id="audio" controls preload="none"><track id="captions" kind="captions" '
                 'srclang="zh" label="中文 / English" default></audio>')
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
<title>{e(c.name)} 乐县导览 · The Great Archery Rite — audio guide</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="style.css">
</head>
<body>
<a class="skip" href="#cue-list">跳到乐目 · Skip to the cue list</a>
<header>
<h1><span lang="zh">{e(c.name)} · 乐县导览</span> <span lang="en">The Great Archery Rite: an audio guide</span></h1>
<p class="meta"><span lang="zh">{e(c.rank)} · {e(c.suspension)} · 黄钟 = {c.huangzhong_hz:g} Hz · 共 {_mmss(timeline.duration)}</span>
<span lang="en">rank {e(c.rank)}, suspension {e(c.suspension)}, 黄钟 (huángzhōng) = {c.huangzhong_hz:g} Hz, {_mmss(timeline.duration)} in all</span></p>
<label class="lang">语言 <span lang="en">Language</span>
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
<div class="svgwrap" tabindex="0" role="group" aria-label="乐县图，可横向滚动 · The courtyard drawing (scrolls sideways on a small screen)">{svg_body}</div>
</section>
<nav id="cue-list" aria-label="乐目 · Cues">
<h2><span lang="zh">乐目</span> <span lang="en">Cues</span></h2>
<ol>
{_cue_items(timeline)}
</ol>
</nav>
</main>
<footer><p><span lang="zh">由 yuexuan 生成；时间皆出自同一时间线（timeline.json）。</span>
<span lang="en">Made by yuexuan; every time on this page comes from one timeline (<a href="timeline.json">timeline.json</a>, captions: <a href="captions.vtt">captions.vtt</a>).</span></p></footer>
<script type="application/json" id="timeline-data">{_json_for_script(to_dict(timeline))}</script>
<script type="application/json" id="captions-data">{_json_for_script(vtt)}</script>
<script src="app.js"></script>
</body>
</html>
"""


STYLE_CSS = """:root { --ink: #1d1a14; --paper: #fbf8f0; --accent: #a0402a; --lit: #ffd21f; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 'Noto Sans CJK SC','Source Han Sans SC','PingFang SC','Microsoft YaHei',
  system-ui, sans-serif; color: var(--ink); background: var(--paper); }
header, main, footer { max-width: 1200px; margin: 0 auto; padding: 0.5rem 1rem; }
h1 { font-size: 1.4rem; margin: 0.3rem 0; } h2 { font-size: 1.15rem; margin: 0.6rem 0 0.3rem; }
.meta { margin: 0; color: #444; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 0.5rem; top: 0.5rem; background: #fff; padding: 0.3rem; z-index: 9; }
html[data-lang="zh"] body [lang="en"] { display: none !important; }
html[data-lang="en"] body [lang="zh"] { display: none !important; }
main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 1rem;
  grid-template-areas: "player player" "map cues"; }
#player { grid-area: player; } #map { grid-area: map; } #cue-list { grid-area: cues; }
audio { width: 100%; }
.scrub { display: flex; align-items: center; gap: 0.5rem; } .scrub input { flex: 1; min-width: 0; }
.caption { min-height: 4.5em; background: #fff; border-left: 4px solid var(--accent); padding: 0.4rem 0.7rem;
  white-space: pre-line; }
.notice { background: #fff3cd; border: 1px solid #d9b300; padding: 0.5rem; }
.sounding-list { min-height: 1.5em; color: var(--accent); margin: 0.3rem 0; }
.svgwrap svg { width: 100%; height: auto; display: block; }
#cue-list ol { list-style: none; margin: 0; padding: 0; max-height: 80vh; overflow-y: auto; }
button.cue { display: block; width: 100%; text-align: left; font: inherit; padding: 0.45rem 0.6rem; margin: 0 0 0.3rem;
  border: 1px solid #c9b48a; border-radius: 6px; background: #fff; cursor: pointer; min-height: 44px; }
button.cue[aria-current="true"] { background: #fde9b0; border-color: var(--accent); }
button.cue .t { font-variant-numeric: tabular-nums; color: #555; margin-right: 0.3rem; }
button.cue .piece { font-weight: bold; }
button.cue .moment, button.cue .gloss { display: block; font-size: 0.88rem; color: #444; }
.badge { font-size: 0.75rem; border: 1px solid var(--accent); color: var(--accent); border-radius: 4px; padding: 0 0.25rem; }
:focus-visible { outline: 3px solid #1a66d2; outline-offset: 2px; }
.keys { font-size: 0.85rem; color: #555; }
@media (max-width: 800px) { main { grid-template-columns: minmax(0, 1fr); grid-template-areas: "player" "map" "cues"; }
  .svgwrap { overflow-x: auto; } .svgwrap svg { width: 820px; max-width: none; } }
"""

APP_JS = r"""'use strict';
// yuexuan guide: everything timed comes from the embedded timeline JSON (the Timeline contract).
(function () {
  const data = JSON.parse(document.getElementById('timeline-data').textContent);
  const audio = document.getElementById('audio');
  const slider = document.getElementById('time');
  const clock = document.getElementById('clock');
  const captionBox = document.getElementById('caption');
  const soundingBox = document.getElementById('sounding');
  const HOLD_S = 0.25;   // a stroke stays lit at least this long (s)
  const LEAD_S = 0.02;   // light a note this much before its onset (s), against rounding
  const hasAudio = !!(audio && audio.querySelector('source'));
  let virtualTime = 0;

  // Per instrument: onsets (ascending) and the running maximum of the note ends.
  const byInst = new Map();
  for (const n of data.notes) {
    if (!byInst.has(n.instrument)) byInst.set(n.instrument, []);
    byInst.get(n.instrument).push([n.time, n.time + Math.max(n.duration, HOLD_S)]);
  }
  const index = [];
  for (const [name, list] of byInst) {
    list.sort((a, b) => a[0] - b[0]);
    const on = new Float64Array(list.length), maxEnd = new Float64Array(list.length);
    let m = -Infinity;
    list.forEach((p, i) => { on[i] = p[0]; m = Math.max(m, p[1]); maxEnd[i] = m; });
    const el = document.getElementById('inst-' + name.replace(/ /g, '_'));
    index.push({ name, on, maxEnd, el });
  }
  function lastAtOrBefore(arr, t) {      // index of the last element <= t, or -1
    let lo = 0, hi = arr.length - 1, ans = -1;
    while (lo <= hi) { const mid = (lo + hi) >> 1; if (arr[mid] <= t) { ans = mid; lo = mid + 1; } else hi = mid - 1; }
    return ans;
  }
  function soundingAt(t) {
    const out = [];
    for (const it of index) {
      const i = lastAtOrBefore(it.on, t + LEAD_S);
      if (i >= 0 && it.maxEnd[i] > t) out.push(it);
    }
    return out;
  }

  const cues = data.cues.slice().sort((a, b) => a.start - b.start);
  const buttons = Array.from(document.querySelectorAll('button.cue'));
  function fmt(t) {
    t = Math.max(0, Math.floor(t));
    const h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, s = t % 60;
    return (h ? h + ':' + String(m).padStart(2, '0') : m) + ':' + String(s).padStart(2, '0');
  }
  function now() { return hasAudio ? audio.currentTime : virtualTime; }

  // Captions: the <track> loads captions.vtt; from file:// browsers refuse it (file: URLs are
  // unique origins), so there the same VTT text, embedded in the page, is given as a data: URL.
  const track = document.getElementById('captions');
  function captionFromTrack() {
    const tt = track && track.track;
    if (!tt || !tt.activeCues) return null;
    return Array.from(tt.activeCues).map(c => c.text).join('\n');
  }
  if (track) {
    track.track.mode = 'hidden';
    if (location.protocol === 'file:') {
      const vtt = JSON.parse(document.getElementById('captions-data').textContent);
      track.src = 'data:text/vtt;charset=utf-8,' + encodeURIComponent(vtt);
    } else {
      track.src = 'captions.vtt';
    }
    track.track.addEventListener('cuechange', () => update());
  }

  let lastKey = '';
  function update() {
    const t = now();
    const on = soundingAt(t);
    const lit = new Set(on.map(it => it.name));
    for (const it of index) if (it.el) it.el.classList.toggle('sounding', lit.has(it.name));
    const key = Array.from(lit).sort().join(' ');
    if (key !== lastKey) { soundingBox.textContent = key ? '♪ ' + Array.from(lit).join('、') : ''; lastKey = key; }
    let current = null;
    for (const c of cues) if (c.start <= t && t < c.end) current = c;
    for (const b of buttons) {
      if (current && b.dataset.cue === current.id) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
    const cap = captionFromTrack();
    if (cap !== null && captionBox.textContent !== cap) captionBox.textContent = cap;
    if (document.activeElement !== slider) slider.value = t.toFixed(1);
    clock.textContent = fmt(t);
    document.body.dataset.time = t.toFixed(3);
  }
  function seek(t) {
    t = Math.max(0, Math.min(t, Number(slider.max)));
    if (hasAudio) { audio.currentTime = t; }
    else {
      virtualTime = t;
      if (track && track.track && track.track.cues) {   // no media clock: pick the cue by hand
        const active = Array.from(track.track.cues).filter(c => c.startTime <= t && t < c.endTime);
        captionBox.textContent = active.map(c => c.text).join('\n');
      }
    }
    update();
  }
  window.yuexuanSeek = seek;
  window.yuexuanSounding = t => soundingAt(t).map(it => it.name);

  if (hasAudio) {
    for (const ev of ['timeupdate', 'seeked', 'seeking', 'play', 'pause', 'loadedmetadata']) audio.addEventListener(ev, update);
    let raf = 0;
    const loop = () => { update(); raf = audio.paused ? 0 : requestAnimationFrame(loop); };
    audio.addEventListener('play', () => { if (!raf) raf = requestAnimationFrame(loop); });
  }
  slider.addEventListener('input', () => seek(Number(slider.value)));
  buttons.forEach(b => b.addEventListener('click', () => { seek(Number(b.dataset.start)); }));
  document.addEventListener('keydown', ev => {
    if (ev.target && /^(INPUT|SELECT|TEXTAREA)$/.test(ev.target.tagName)) return;
    if (ev.key !== '[' && ev.key !== ']') return;
    const t = now();
    let i = cues.findIndex(c => c.start > t + 0.05);
    if (i < 0) i = cues.length;
    const target = ev.key === ']' ? cues[i] : cues[Math.max(0, i - 2)];
    if (target) { seek(target.start); ev.preventDefault(); }
  });
  const lang = document.getElementById('lang');
  lang.addEventListener('change', () => { document.documentElement.dataset.lang = lang.value; });
  document.documentElement.dataset.ready = '1';
  update();
})();
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
            tmp.write_bytes(text.encode("utf-8"))
        os.chmod(tmp, 0o644 & ~_umask())


def write_site(timeline: Timeline, out_dir: str | Path, audio: str | Path | None = None,
               vtt: str | None = None) -> list:
    """Write the guide into ``out_dir``; return the paths written.

    ``audio`` is copied beside the page (unless it is already there). ``vtt`` (the captions'
    text) defaults to the renderer's sidecar beside ``audio`` (``NAME.vtt``), else :func:`cue_vtt`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if vtt is None and audio is not None and Path(audio).with_suffix(".vtt").is_file():
        vtt = Path(audio).with_suffix(".vtt").read_text(encoding="utf-8")
    if vtt is None:
        vtt = cue_vtt(timeline)
    svg = drawing.layout_svg(timeline.instruments, drawing.load_courtyard(),
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
    files = {"captions.vtt": vtt, "style.css": STYLE_CSS, "app.js": APP_JS, "layout.svg": svg,
             "timeline.json": json.dumps(to_dict(timeline), ensure_ascii=False, indent=1) + "\n",
             "index.html": index_html(timeline, svg, vtt, audio_name)}
    for name, text in files.items():
        _publish(out / name, text)
        written.append(out / name)
    return written

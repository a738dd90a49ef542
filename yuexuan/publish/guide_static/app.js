'use strict';
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
    const keyEl = document.querySelector('.key-item[data-instrument="' + CSS.escape(name) + '"]');
    index.push({ name, on, maxEnd, el, keyEl });
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

  // Captions: the <track> loads captions.vtt (its src in the page); from file:// browsers refuse
  // it (file: URLs are unique origins), so there the same VTT text, embedded in the page, is given
  // as a data: URL. The caption shown is picked by the current time from the track's cues (not
  // activeCues: those stay empty at 0:00 until the media clock moves or seeks).
  const track = document.getElementById('captions');
  // A caption's lines are Chinese (the piece and the quoted text) or English (the gloss, which may
  // quote a word or two): in one language the page shows that language's lines only.
  const count = (line, re) => (line.match(re) || []).length;
  const isEnglish = line => count(line, /[A-Za-z]/g) > count(line, /[\u3400-\u9fff]/g);
  function captionFromTrack() {
    const tt = track && track.track;
    if (!tt || !tt.cues) return null;
    const t = now();
    const mode = document.documentElement.dataset.lang;
    const text = Array.from(tt.cues).filter(c => c.startTime <= t && t < c.endTime).map(c => c.text).join('\n');
    if (mode === 'both') return text;
    return text.split('\n').filter(line => isEnglish(line) === (mode === 'en')).join('\n');
  }
  if (track) {
    track.track.mode = 'hidden';
    if (location.protocol === 'file:') {
      const vtt = JSON.parse(document.getElementById('captions-data').textContent);
      track.src = 'data:text/vtt;charset=utf-8,' + encodeURIComponent(vtt);
    }
    track.addEventListener('load', () => update());
    track.track.addEventListener('cuechange', () => update());
  }

  // Performers who move: the drawing's other places of theirs (class yx-place, and the officials
  // by them, yx-attendant) are marked 'here' during the cues of their data-cues.
  const placeEls = Array.from(document.querySelectorAll('.yx-place, .yx-attendant'))
    .map(el => [el, new Set((el.dataset.cues || '').split(' '))]);
  let lastKey = '';
  function update() {
    const t = now();
    const on = soundingAt(t);
    const lit = new Set(on.map(it => it.name));
    for (const it of index) {
      if (it.el) it.el.classList.toggle('sounding', lit.has(it.name));
      if (it.keyEl) it.keyEl.classList.toggle('sounding', lit.has(it.name));
    }
    const key = Array.from(lit).sort().join(' ');
    const english = document.documentElement.dataset.lang === 'en';
    if (key + english !== lastKey) {
      const names = Array.from(lit).map(n => english ? ((data.instruments[n] || {}).pinyin || n) : n);
      soundingBox.textContent = names.length ? '♪ ' + names.join(english ? ', ' : '、') : '';
      lastKey = key + english;
    }
    let current = null;
    for (const c of cues) if (c.start <= t && t < c.end) current = c;
    for (const b of buttons) {
      if (current && b.dataset.cue === current.id) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
    for (const [el, ids] of placeEls) el.classList.toggle('here', !!current && ids.has(current.id));
    const cap = captionFromTrack();
    if (cap !== null && captionBox.textContent !== cap) captionBox.textContent = cap;
    if (document.activeElement !== slider) slider.value = t.toFixed(1);
    clock.textContent = fmt(t);
    document.body.dataset.time = t.toFixed(3);
  }
  function seek(t) {
    t = Math.max(0, Math.min(t, Number(slider.max)));
    if (hasAudio) { audio.currentTime = t; }
    else { virtualTime = t; }
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
  // A phone (style.css's narrow layout): the drawing without its words and its legend (the key
  // below names the instruments), so its view ends above the legend; wider, the whole drawing.
  const svg = document.querySelector('.svgwrap svg'), legend = document.getElementById('yx-legend');
  const fullView = svg && svg.getAttribute('viewBox'), fullHeight = svg && svg.getAttribute('height');
  const narrow = window.matchMedia('(max-width: 800px)');
  function fitDrawing() {
    if (!svg || !legend || !fullView) return;
    const [x, y, w] = fullView.split(/\s+/).map(Number);
    const top = Number(legend.querySelector('[y]') ? legend.querySelector('[y]').getAttribute('y') : NaN);
    const cut = narrow.matches && top > y;        // the height attribute sets the drawn aspect ratio
    svg.setAttribute('viewBox', cut ? [x, y, w, top - 30 - y].join(' ') : fullView);
    svg.setAttribute('height', cut ? String(top - 30 - y) : fullHeight);
  }
  narrow.addEventListener('change', fitDrawing);
  fitDrawing();

  // The key (shown on a phone, where the drawing has no words): a tap marks the instrument in it.
  for (const b of document.querySelectorAll('.key-item')) {
    b.addEventListener('click', () => {
      const on = b.getAttribute('aria-pressed') !== 'true';
      for (const other of document.querySelectorAll('.key-item')) other.setAttribute('aria-pressed', 'false');
      for (const g of document.querySelectorAll('.yx-inst.picked')) g.classList.remove('picked');
      const g = document.getElementById('inst-' + b.dataset.instrument.replace(/ /g, '_'));
      b.setAttribute('aria-pressed', String(on));
      if (g && on) g.classList.add('picked');
    });
  }

  // Language: ?lang=en|zh|both (a kiosk's link), else the reader's last choice, else both.
  const LANGS = ['both', 'zh', 'en'], KEY = 'yuexuan-guide-lang';
  const lang = document.getElementById('lang');
  function stored() { try { return localStorage.getItem(KEY); } catch (e) { return null; } }
  function setLang(value, keep) {
    if (!LANGS.includes(value)) return;
    document.documentElement.dataset.lang = value;
    document.documentElement.lang = value === 'en' ? 'en' : 'zh-Hans';
    lang.value = value;
    if (keep) { try { localStorage.setItem(KEY, value); } catch (e) { /* storage off: not kept */ } }
  }
  const asked = new URLSearchParams(location.search).get('lang');
  if (LANGS.includes(asked)) setLang(asked, true);
  else if (LANGS.includes(stored())) setLang(stored(), false);
  lang.addEventListener('change', () => { setLang(lang.value, true); update(); });
  document.documentElement.dataset.ready = '1';
  update();
})();

"""Each synthesised instrument side by side with its nearest sampled neighbour in FluidR3_GM.

Run: ``.venv/bin/python bench/bench_instruments.py [--img docs/img] [--markdown FILE]``.
Ours: one note from ``yuexuan note INSTRUMENT 律 -o x.wav`` (a child process, dry, 44.1 kHz).
Theirs: the same note (nearest MIDI key, velocity 100) rendered by ``fluidsynth -ni -R 0 -C 0 -F``
(reverb and chorus off: dry like ours) from a MIDI file written with mido; small drums from the GM
drum kit on channel 10. Both are measured by the same functions:

- onsets: ``librosa.onset.onset_detect`` with its default settings, on the whole file (one stroke)
  after 0.5 s of silence (as in a render: an onset at the file's first frame is never detected,
  and the detector's normalisation then takes a later ripple for the peak);
- attack: 10 % → 90 % of the peak of the amplitude envelope (peak |x| over the last 10 ms), ms;
- spectral centroid of the windows 0–50 ms, 50–300 ms and 0.3–1 s after the attack starts, Hz;
- T60: Schroeder backward integration, a line fitted to the decay curve from −5 to −25 dB,
  extrapolated to −60 dB (ISO 3382's T20), s; for held notes (pipe, voice) from the note's end;
  none (—) where the sound does not fall 35 dB before its file ends.

Prints a table (Markdown with ``--markdown FILE``) and writes one spectrogram picture per pair into
``--img`` (needs matplotlib: the ``plots`` extra).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import soundfile as sf
from scipy.ndimage import maximum_filter1d, uniform_filter1d

ROOT = Path(__file__).resolve().parent.parent
SF2 = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
SAMPLE_RATE = 44100
VELOCITY = 100
HELD_S = 1.5                          # held length of pipe and voice notes, both sides, s
CENTROID_WINDOWS_S = ((0.0, 0.05), (0.05, 0.3), (0.3, 1.0))
DRUM_CHANNEL = 9                      # GM channel 10, counted from 0


class Pair(NamedTuple):
    """One of ours and its nearest GM neighbour."""
    ours: str            # instrument name as in instruments/*.toml
    slug: str            # ASCII file name of the picture
    english: str
    gm: str              # the GM instrument's name
    program: int | None  # GM program, 1..128; None: the drum kit on channel 10
    key: int | None      # fixed MIDI key (drums); None: the key nearest our note's Hz
    held: bool           # a held note (pipe, voice): T60 measured from its end
    why: str             # why this neighbour


PAIRS = (
    Pair("笙钟", "shengzhong", "bell, minor third", "Tubular Bells", 15, None, False,
         "struck bronze, long ring; GM has no two-tone bell"),
    Pair("颂钟", "songzhong", "bell, major third", "Tubular Bells", 15, None, False, "as 笙钟"),
    Pair("鑮·东", "bo", "large bell", "Tubular Bells", 15, None, False, "as 笙钟, an octave lower"),
    Pair("笙磬", "shengqing", "stone chime", "Xylophone", 14, None, False,
         "a struck hard bar; GM has no lithophone"),
    Pair("颂磬", "songqing", "stone chime", "Agogo", 114, None, False, "a struck idiophone with a click"),
    Pair("建鼓·东", "jiangu", "barrel drum", "Taiko Drum", 117, 37, False,
         "a large barrel drum struck with sticks; key 37 ≈ 69 Hz (ours 70 Hz)"),
    Pair("应鼙", "yingpi", "small drum", "Low-Mid Tom", None, 47, False, "a small stick-struck drum"),
    Pair("朔鼙", "shuopi", "small drum", "Hi-Mid Tom", None, 48, False, "a small stick-struck drum"),
    Pair("鼗", "tao", "pellet drum", "High Bongo", None, 60, False,
         "a small head; one GM stroke against our twirl"),
    Pair("瑟", "se", "zither", "Koto", 108, None, False, "a plucked long zither"),
    Pair("簜", "dang", "bamboo pipe", "Pan Flute", 76, None, True, "簜 = 箫 (郑玄), the panpipe"),
    Pair("歌", "ge", "singers", "Choir Aahs", 53, None, True, "sung vowel"),
)


class Descriptors(NamedTuple):
    onsets: int                       # onsets found in the file (one stroke)
    attack_ms: float                  # 10 % → 90 % of the envelope peak, ms
    centroids_hz: tuple               # one per CENTROID_WINDOWS_S, Hz (nan: silent window)
    t60_s: float                      # nan where the decay does not reach −25 dB


# ------------------------------------------------------------------------------------------------
# descriptors: pure functions of a mono float signal and its sample rate

def envelope(x: np.ndarray, sample_rate: int) -> np.ndarray:
    """Amplitude envelope: the peak of |x| over the last 10 ms (causal, so nothing before the sound;
    hand-written from scipy's running maximum because librosa has no attack measure). A rise is read
    to within half a period of the lowest partial (7 ms at 70 Hz, 1 ms at 440 Hz)."""
    width = 2 * (sample_rate // 200) + 1
    return maximum_filter1d(np.abs(x), width, origin=width // 2)


def attack(x: np.ndarray, sample_rate: int) -> tuple[float, float]:
    """(start s, attack s): where the envelope first reaches 10 % of its peak, and the time from there
    to where it first reaches 90 % (0 for a file that starts at full level)."""
    env = envelope(x, sample_rate)
    peak = env.max()
    i10 = int(np.argmax(env >= 0.1 * peak))
    i90 = int(np.argmax(env >= 0.9 * peak))
    return i10 / sample_rate, (i90 - i10) / sample_rate


def centroid_hz(x: np.ndarray, sample_rate: int, t0_s: float, t1_s: float) -> float:
    """Spectral centroid of x[t0_s:t1_s] (Hann window, one FFT), Hz; nan if that part is silent
    (below −80 dB of the whole signal's energy) or beyond the end."""
    seg = x[int(t0_s * sample_rate):int(t1_s * sample_rate)]
    if len(seg) < 16 or np.sum(seg ** 2) < 1e-8 * np.sum(x ** 2):
        return math.nan
    mag = np.abs(np.fft.rfft(seg * np.hanning(len(seg))))
    freqs = np.fft.rfftfreq(len(seg), 1 / sample_rate)
    return float(np.sum(freqs * mag) / np.sum(mag))


def t60_s(x: np.ndarray, sample_rate: int, from_s: float = 0.0) -> float:
    """T60 from Schroeder's backward integral of x[from_s:]: a least-squares line through the decay
    curve between −5 and −25 dB, extrapolated to −60 dB (T20); nan unless the sound itself (10 ms
    frames) falls 35 dB below its loudest frame before the file ends (ISO 3382's 10 dB below the fit
    range: a sound cut off while still loud would otherwise read as a decay)."""
    e = x[int(from_s * sample_rate):].astype(np.float64) ** 2
    hop = sample_rate // 100
    frames = e[:len(e) // hop * hop].reshape(-1, hop).sum(axis=1) if len(e) >= hop else np.zeros(1)
    loudest = int(np.argmax(frames))
    if frames[loudest] <= 0 or frames[loudest:].min() > frames[loudest] * 10 ** -3.5:
        return math.nan
    edc = np.cumsum(e[::-1])[::-1]
    db = 10 * np.log10(np.maximum(edc / edc[0], 1e-30))
    sel = np.flatnonzero((db <= -5) & (db >= -25))
    slope_db_per_s = np.polyfit(sel / sample_rate, db[sel], 1)[0]
    return float(-60 / slope_db_per_s)


LEAD_IN_S = 0.5             # silence put before a file for the onset count, s


def onset_count(x: np.ndarray, sample_rate: int) -> int:
    """Onsets librosa's default detector finds in ``x`` after ``LEAD_IN_S`` of silence: the
    stroke heard as it is in a render, after quiet (a file that starts with the attack has no
    flux at its first frame, and the detector, which normalises its envelope to the peak, would
    count the ripples of the decay instead)."""
    import librosa

    y = np.concatenate([np.zeros(int(LEAD_IN_S * sample_rate), np.float32), x.astype(np.float32)])
    return len(librosa.onset.onset_detect(y=y, sr=sample_rate))


def describe(x: np.ndarray, sample_rate: int, held_s: float | None = None) -> Descriptors:
    """All descriptors of one stroke; centroid windows and T60 count from the attack's start
    (T60 of a held note from ``held_s`` after it)."""
    start, rise = attack(x, sample_rate)
    cents = tuple(centroid_hz(x, sample_rate, start + a, start + b) for a, b in CENTROID_WINDOWS_S)
    return Descriptors(onset_count(x, sample_rate), rise * 1000, cents,
                       t60_s(x, sample_rate, start + (held_s or 0.0)))


# ------------------------------------------------------------------------------------------------
# the two sources (I/O)

def read_mono(path: Path) -> np.ndarray:
    x, _ = sf.read(path, dtype="float32", always_2d=True)
    return x.mean(axis=1)


def render_ours(pair: Pair, out: Path) -> float | None:
    """``yuexuan note`` into ``out``; returns the note's Hz (None: unpitched)."""
    cmd = [sys.executable, "-m", "yuexuan", "note", pair.ours, "黄", "-o", str(out),
           "--velocity", str(VELOCITY), "--duration", str(HELD_S), "--sample-rate", str(SAMPLE_RATE)]
    done = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    m = re.search(r"([\d.]+) Hz", done.stdout)
    return float(m.group(1)) if m else None


def gm_key(pair: Pair, hz: float | None) -> int:
    if pair.key is not None:
        return pair.key
    return int(round(69 + 12 * math.log2(hz / 440.0)))


def render_gm(pair: Pair, key: int, hold_s: float, out: Path) -> None:
    """One GM note (key held ``hold_s``, then 2 s of release) by FluidSynth into ``out``."""
    import mido

    mid = mido.MidiFile(ticks_per_beat=480)          # 120 bpm: 960 ticks a second
    track = mido.MidiTrack()
    mid.tracks.append(track)
    channel = DRUM_CHANNEL if pair.program is None else 0
    if pair.program is not None:
        track.append(mido.Message("program_change", channel=channel, program=pair.program - 1, time=0))
    track.append(mido.Message("note_on", channel=channel, note=key, velocity=VELOCITY, time=10))
    track.append(mido.Message("note_off", channel=channel, note=key, velocity=0, time=int(hold_s * 960)))
    track.append(mido.MetaMessage("end_of_track", time=2 * 960))
    mid_path = out.with_suffix(".mid")
    mid.save(mid_path)
    subprocess.run(["fluidsynth", "-ni", "-R", "0", "-C", "0", "-F", str(out), "-r", str(SAMPLE_RATE),
                    SF2, str(mid_path)], check=True, capture_output=True)


class Measured(NamedTuple):
    pair: Pair
    hz: float | None
    key: int
    ours: np.ndarray
    gm: np.ndarray
    ours_d: Descriptors
    gm_d: Descriptors


def measure(pair: Pair, work: Path) -> Measured:
    ours_path, gm_path = work / f"{pair.slug}-ours.wav", work / f"{pair.slug}-gm.wav"
    hz = render_ours(pair, ours_path)
    ours = read_mono(ours_path)
    key = gm_key(pair, hz)
    render_gm(pair, key, HELD_S if pair.held else len(ours) / SAMPLE_RATE, gm_path)
    gm = read_mono(gm_path)
    held = HELD_S if pair.held else None
    return Measured(pair, hz, key, ours, gm, describe(ours, SAMPLE_RATE, held), describe(gm, SAMPLE_RATE, held))


# ------------------------------------------------------------------------------------------------
# output

def _f(v: float, fmt: str) -> str:
    return "—" if math.isnan(v) else format(v, fmt)


def _gm_where(pair: Pair) -> str:
    return "drum kit, " if pair.program is None else f"program {pair.program}, "


def table_rows(results) -> list[list[str]]:
    head = ["instrument", "GM neighbour", "onsets per stroke", "attack ms", "centroid 0–50 ms Hz",
            "50–300 ms Hz", "0.3–1 s Hz", "T60 s"]
    rows = [head]
    for r in results:
        o, g = r.ours_d, r.gm_d
        pitch = f" {r.hz:.0f} Hz" if r.hz else ""
        rows.append([f"{r.pair.ours} ({r.pair.english}{pitch})", f"{r.pair.gm} ({_gm_where(r.pair)}key {r.key})",
                     f"{o.onsets} / {g.onsets}", f"{_f(o.attack_ms, '.1f')} / {_f(g.attack_ms, '.1f')}",
                     *(f"{_f(a, '.0f')} / {_f(b, '.0f')}" for a, b in zip(o.centroids_hz, g.centroids_hz)),
                     f"{_f(o.t60_s, '.2f')} / {_f(g.t60_s, '.2f')}"])
    return rows


def markdown(rows, results, version: str, img_prefix: str = "img/") -> str:
    """The table, then one picture line per pair (paths as docs/render.md sees docs/img/)."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"Measured {when}, {version}. Each cell: ours / FluidR3_GM.", "",
             "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    lines.append("")
    lines += [f"![{r.pair.ours} beside {r.pair.gm}: spectrograms and envelopes]({img_prefix}side-{r.pair.slug}.png)"
              for r in results]
    return "\n".join(lines) + "\n"


def plain(rows) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows) + "\n"


def _audible_s(x: np.ndarray, floor_db: float = -70.0) -> float:
    """Seconds from the attack's start until the envelope last exceeds ``floor_db`` re its peak."""
    env = envelope(x, SAMPLE_RATE)
    loud = np.flatnonzero(env > env.max() * 10 ** (floor_db / 20))
    return (loud[-1] if len(loud) else 0) / SAMPLE_RATE - attack(x, SAMPLE_RATE)[0]


def spectrogram_png(r: Measured, path: Path) -> None:
    """Two spectrograms (ours, GM) from 50 ms before each attack, and both envelopes in dB, over
    the time the longer of the two takes to fall by 70 dB (0.5 to 3 s)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image
    from scipy.signal import stft

    span_s = float(np.clip(max(_audible_s(r.ours), _audible_s(r.gm)) + 0.1, 0.5, 3.0))
    plt.rcParams["font.family"] = ["Noto Sans CJK SC", "DejaVu Sans"]
    fig, axes = plt.subplots(1, 3, figsize=(10, 2.9), gridspec_kw={"width_ratios": [1, 1, 0.8]})
    envs = []
    for ax, x, title in ((axes[0], r.ours, f"ours: {r.pair.ours}"), (axes[1], r.gm, f"FluidR3_GM: {r.pair.gm}")):
        start = max(0.0, attack(x, SAMPLE_RATE)[0] - 0.05)
        n = int(span_s * SAMPLE_RATE)
        cut = slice(int(start * SAMPLE_RATE), int(start * SAMPLE_RATE) + n)
        seg = np.pad(x[cut], (0, n - len(x[cut])))     # silence after the file's end
        f, t, z = stft(seg, SAMPLE_RATE, nperseg=1024, noverlap=1024 - 256)
        db = 20 * np.log10(np.abs(z) / np.abs(z).max() + 1e-9)
        keep = (f >= 30) & (f <= 12000)
        ax.pcolormesh(t, f[keep], db[keep], vmin=-80, vmax=0, cmap="magma", shading="auto", rasterized=True)
        ax.set_yscale("log")
        ax.set_xlim(0, span_s)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("s", fontsize=8)
        ax.tick_params(labelsize=7)
        env = uniform_filter1d(envelope(x, SAMPLE_RATE), SAMPLE_RATE // 100)[cut]   # 10 ms more, to look at
        envs.append((title.split(":")[0], 20 * np.log10(env / env.max() + 1e-9)))
    axes[0].set_ylabel("Hz", fontsize=8)
    step = SAMPLE_RATE // 200                          # 5 ms a point
    for label, env_db in envs:
        axes[2].plot(np.arange(0, len(env_db), step) / SAMPLE_RATE, env_db[::step], lw=1, label=label)
    axes[2].set_xlim(0, span_s)
    axes[2].set_ylim(-70, 3)
    axes[2].set_title("envelope, dB", fontsize=9)
    axes[2].set_xlabel("s", fontsize=8)
    axes[2].tick_params(labelsize=7)
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.set_dpi(80)
    fig.canvas.draw()
    rgb = Image.fromarray(np.asarray(fig.canvas.buffer_rgba())).convert("RGB")
    plt.close(fig)
    rgb.quantize(colors=96).save(path, optimize=True)     # a palette PNG: about half the bytes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--img", default=str(ROOT / "docs" / "img"), help="folder for the pictures")
    ap.add_argument("--no-img", action="store_true", help="no pictures (no matplotlib needed)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    ap.add_argument("--only", metavar="NAME,NAME", help="only these instruments of ours")
    args = ap.parse_args()
    pairs = [p for p in PAIRS if not args.only or p.ours in args.only.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in pairs:
            r = measure(pair, Path(tmp))
            results.append(r)
            if not args.no_img:
                Path(args.img).mkdir(parents=True, exist_ok=True)
                spectrogram_png(r, Path(args.img) / f"side-{r.pair.slug}.png")
    rows = table_rows(results)
    print(f"synthesis: {synthesis_version()}; each cell: ours / FluidR3_GM")
    print(plain(rows), end="")
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows, results, synthesis_version()), encoding="utf-8")
    print("SUMMARY " + json.dumps({r.pair.ours: {"gm": r.pair.gm, "ours": _plain(r.ours_d), "fluidr3_gm": _plain(r.gm_d)}
                                   for r in results}, ensure_ascii=False))
    return 0


def _plain(d: Descriptors) -> dict:
    """Descriptors for JSON: rounded, nan as null."""
    def num(v):
        return None if math.isnan(v) else round(float(v), 3)
    return {"onsets": d.onsets, "attack_ms": num(d.attack_ms), "centroids_hz": [num(c) for c in d.centroids_hz],
            "t60_s": num(d.t60_s)}


def synthesis_version() -> str:
    """The commit measured, and whether the synthesis' files differ from it in the working tree."""
    def git(*a) -> str:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = git("status", "--porcelain", "--", "yuexuan/audio", "instruments")
    return f"commit {git('rev-parse', '--short', 'HEAD')}" + (" with uncommitted changes to the synthesis" if dirty else "")


if __name__ == "__main__":
    sys.exit(main())

"""A family of 射节 recordings drawn afresh from a seed, the truth of every 建鼓 stroke known: the drum
finder of ``check --beats-from`` is measured on members nobody tuned it on (issue 31).

**The truth of a stroke** is when its sound starts at the microphone: the drummer's stroke time
(the plan, drifted and jittered), plus the start of the one-shot's own sound (its first sample
reaching 1 % of its peak, :func:`sound_start`), plus the travel from the drum to the microphone
(the direct path of the room). The finder reports the attack's start; the error is that less this.

A member (:func:`draw`) is an excerpt of the default 射节 (the grid's planned strokes, its 鼙,
bells and song from the compiled timeline), at ``SR``:

- **the 建鼓** from one of three sources: FluidR3_GM's Taiko Drum (keys 35–70, three velocities,
  rendered by FluidSynth), a real recorded kit of Debian's ``hydrogen-drumkits`` (a dununba, floor
  toms, bass drums: circAfrique v4, ColomboAcousticDrumkit, ForzeeStereo, Millo), or the
  project's own render (the strokes of ``yuexuan render``'s 建鼓·北 stem, each one of them);
- **the drummer** up to 2 % fast or slow, with 0–20 ms of jitter, each stroke's level varied;
- **the 鼙**: the plan's 朔鼙 and 应鼙 strokes, and extra 鼙 strokes 60–250 ms from some 建鼓
  strokes, from the same source's toms (FluidR3's kit, Hydrogen's djembe, kenkeni and high toms,
  the project's 鼙 stems);
- **bells and song** from FluidR3 (Tubular Bells, Choir Aahs, on the timeline's pitches, following
  the drummer) or the project's render (its bell and song stems, on the plan);
- **a room**: image-source-like early reflections (6–10, 2–60 ms, 0.2–0.7 of the direct sound) and
  an exponential noise tail of RT60 0.3–1.2 s, the direct sound at the travel time of a drum 5–20 m
  away;
- **noise**: pink and babble (talkers: band-passed noise under syllable-rate envelopes) at 0–25 dB
  SNR, the drum's power against the noise's in the 40–200 Hz band;
- **a phone codec** for a third of them: AAC at 96–160 kbit/s in an MP4 written by ffmpeg (its
  priming samples dropped by the decoder through the MP4's edit list).

Hand-written (a room simulator or a crowd recording would be test dependencies; these are a few
numpy lines each).
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy import signal

SR = 16000
SF2 = Path("/usr/share/sounds/sf2/FluidR3_GM.sf2")
HYDROGEN = Path("/usr/share/hydrogen/data/drumkits")
SPEED_OF_SOUND_M_S = 343.0
SOURCES = ("fluidr3", "hydrogen", "project")
CALIBRATION_SEEDS = frozenset(range(9000, 9040))   # the finder was tuned on these: never drawn
# Hydrogen's recorded drums: 建鼓-like (low, long) and 鼙-like (higher, shorter)
HYDROGEN_DRUM = ("circAfrique v4/Dununba1 Head Hit.wav", "circAfrique v4/Sangban1 Head Hit.wav",
                 "ColomboAcousticDrumkit/tom-low-1.flac",
                 "ColomboAcousticDrumkit/bassdrum-4mics-br-stereo-normal3.flac",
                 *(f"ForzeeStereo/TomLow-{k}.wav" for k in range(5)),
                 "Millo_MultiLayered2/bd_04.flac")
HYDROGEN_BEI = ("circAfrique v4/Djembe1 Bass.wav", "circAfrique v4/Kenkeni1 Head Hit.wav",
                "circAfrique v4/Djembe2 Tone.wav", "ColomboAcousticDrumkit/tom-hi-1.flac",
                *(f"ForzeeStereo/TomHigh-{k}.wav" for k in range(3)))
TAIKO, TUBULAR_BELLS, CHOIR_AAHS = 116, 14, 52        # GM programs, 0-based
TAIKO_KEYS = tuple(range(35, 71, 5))
TAIKO_VELOCITIES = (70, 100, 127)
KIT_TOMS = (45, 47, 48, 50)                            # GM kit: low, low-mid, hi-mid, high tom
SHOT_S = 2.5                                           # one-shots are cut to this, s
LEAD_S = 0.005                                         # the project's one-shots start this before the stroke
BEI_NAMES = ("朔鼙", "应鼙")
BELLS = ("笙钟", "颂钟", "鑮·东", "鑮·西")
SONG = "歌"
CUE = "lishou"


def sound_start(y: np.ndarray) -> int:
    """The first sample of a one-shot reaching 1 % of its peak (its sound's start)."""
    a = np.abs(y)
    return int(np.flatnonzero(a >= 0.01 * a.max())[0])


def _mono16k(y: np.ndarray, sr: int) -> np.ndarray:
    if y.ndim > 1:
        y = y @ np.full(y.shape[1], 1 / y.shape[1], dtype=y.dtype)     # the channels' mean
    if sr != SR:
        g = math.gcd(sr, SR)
        y = signal.resample_poly(y, SR // g, sr // g)
    return y.astype(np.float32)


def _fluid_bank(work: Path, program: int | None, notes: list[tuple[int, int]], spacing_s: float
                ) -> list[np.ndarray]:
    """One-shots of FluidR3_GM (program, or the kit on channel 10), one a (key, velocity), each
    cut from its note-on: rendered by FluidSynth in one file, notes ``spacing_s`` apart."""
    import mido

    ch = 9 if program is None else 0
    mid = mido.MidiFile(ticks_per_beat=480)          # 120 bpm: a beat is 0.5 s
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    if program is not None:
        tr.append(mido.Message("program_change", channel=ch, program=program, time=0))
    step = int(spacing_s * 960)
    for k, (key, vel) in enumerate(notes):
        tr.append(mido.Message("note_on", channel=ch, note=key, velocity=vel, time=step if k else 0))
        tr.append(mido.Message("note_off", channel=ch, note=key, velocity=0, time=0))
    path = work / f"bank{program}.mid"
    mid.save(path)
    wav = work / f"bank{program}.wav"
    subprocess.run(["fluidsynth", "-ni", "-F", str(wav), "-r", "44100", str(SF2), str(path)],
                   check=True, capture_output=True, timeout=300)
    y, sr = sf.read(wav, dtype="float32", always_2d=True)
    wav.unlink()
    y = _mono16k(y, sr)
    n = int(spacing_s * SR)
    return [y[k * n:(k + 1) * n] for k in range(len(notes))]


def build_bank(work: Path) -> None:
    """FluidR3's and Hydrogen's one-shots into ``work`` (``bank.npz``), each trimmed to start a
    few ms before its sound and to ``SHOT_S``: what :func:`draw` mixes."""
    out: dict[str, np.ndarray] = {}
    taiko = _fluid_bank(work, TAIKO, [(k, v) for k in TAIKO_KEYS for v in TAIKO_VELOCITIES], 3.0)
    toms = _fluid_bank(work, None, [(k, v) for k in KIT_TOMS for v in (90, 120)], 2.0)
    pitches = list(range(48, 85))
    bells = _fluid_bank(work, TUBULAR_BELLS, [(p, 100) for p in pitches], 4.0)
    choir = _fluid_bank(work, CHOIR_AAHS, [(p, 90) for p in pitches], 2.0)
    for name, shots in (("fluidr3.drum", taiko), ("fluidr3.bei", toms)):
        for k, y in enumerate(shots):
            out[f"{name}.{k}"] = y
    for p, y in zip(pitches, bells):
        out[f"fluidr3.bell.{p}"] = y
    for p, y in zip(pitches, choir):
        out[f"fluidr3.song.{p}"] = y
    for name, files in (("hydrogen.drum", HYDROGEN_DRUM), ("hydrogen.bei", HYDROGEN_BEI)):
        for k, f in enumerate(files):
            y, sr = sf.read(HYDROGEN / f, dtype="float32", always_2d=True)
            out[f"{name}.{k}"] = _mono16k(y, sr)
    np.savez(work / "bank.npz", **{k: _trim(v) for k, v in out.items()})


def _trim(y: np.ndarray) -> np.ndarray:
    """From 5 ms before the sound's start, ``SHOT_S`` long at most, the last 50 ms faded out."""
    i = max(0, sound_start(y) - int(0.005 * SR))
    y = y[i:i + int(SHOT_S * SR)].astype(np.float32)
    fade = min(len(y), int(0.05 * SR))
    y[len(y) - fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    return y


def project_bank(stems: Path, timeline: dict, seat_m: tuple) -> dict[str, np.ndarray]:
    """The project's own one-shots, cut from ``yuexuan render --cues lishou --stems`` at SR (time
    0 = the cue's start, the stems heard at ``seat_m``): every 建鼓·北 stroke and every 鼙 stroke,
    each as rendered (strokes that vary stay varied), cut ``LEAD_S`` before its note-on plus its
    travel to the seat: the stroke's generator start is at ``LEAD_S`` in each (the stems hold the
    room's tail of the stroke before, so its first 1 % is no start)."""
    cue = next(c for c in timeline["cues"] if c["id"] == CUE)
    out: dict[str, np.ndarray] = {}
    for role, names in (("drum", ("建鼓·北",)), ("bei", BEI_NAMES)):
        k = 0
        for name in names:
            y, sr = sf.read(stems / f"{name}.wav", dtype="float32", always_2d=True)
            y = _mono16k(y, sr)
            travel = math.dist(timeline["instruments"][name]["position_m"], seat_m) / SPEED_OF_SOUND_M_S
            for n in timeline["notes"]:
                if n["instrument"] == name and n["cue"] == CUE:
                    i = int(round((n["time"] - cue["start"] + travel - LEAD_S) * SR))
                    seg = y[i:i + int(1.6 * SR)].copy()
                    if len(seg) > SR // 2 and np.abs(seg).max() > 0:
                        seg[-int(0.05 * SR):] *= np.linspace(1.0, 0.0, int(0.05 * SR), dtype=np.float32)
                        out[f"project.{role}.{k}"] = seg
                        k += 1
    return out


def onset_of(name: str, shot: np.ndarray) -> float:
    """Where a one-shot's stroke starts in it, s: ``LEAD_S`` for the project's, else its sound's
    start (:func:`sound_start`; FluidR3's and Hydrogen's are silent before the stroke)."""
    return LEAD_S if name.startswith("project.") else sound_start(shot) / SR


@dataclass(frozen=True)
class Member:
    """One drawn recording and its truth."""

    seed: int
    path: Path
    true_s: np.ndarray        # each 建鼓 stroke's sound at the microphone, recording clock, s
    start_s: float            # timeline time of the recording's first sample, s
    params: dict              # how it was drawn (printed with a failure)


def _band_power(y: np.ndarray, lo: float = 40.0, hi: float = 200.0) -> float:
    sos = signal.butter(4, (lo, hi), btype="bandpass", fs=SR, output="sos")
    z = signal.sosfilt(sos, y)
    return float(np.mean(z.astype(np.float64) ** 2))


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    spec = np.fft.rfft(rng.normal(size=n))
    f = np.arange(len(spec), dtype=np.float64)
    f[0] = 1.0
    y = np.fft.irfft(spec / np.sqrt(f), n)
    return y / np.sqrt(np.mean(y * y))


def _babble(n: int, rng: np.random.Generator) -> np.ndarray:
    """Talkers: noise band-passed around a voice's formants, under 3–6 Hz syllable envelopes."""
    out = np.zeros(n)
    t = np.arange(n) / SR
    for _ in range(int(rng.integers(6, 12))):
        lo = rng.uniform(90, 250)
        sos = signal.butter(2, (lo, rng.uniform(1500, 3500)), btype="bandpass", fs=SR, output="sos")
        env = np.maximum(0.0, np.sin(2 * np.pi * rng.uniform(3, 6) * t + rng.uniform(0, 6.3))) ** 2
        out += signal.sosfilt(sos, rng.normal(size=n)) * env * rng.uniform(0.3, 1.0)
    return out / np.sqrt(np.mean(out * out))


def _room(rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """An impulse response (1 at sample 0, the direct sound) and its RT60, s."""
    rt60 = float(rng.uniform(0.3, 1.2))
    n = int((0.02 + rt60) * SR)
    h = np.zeros(n)
    h[0] = 1.0
    for _ in range(int(rng.integers(6, 11))):
        h[int(rng.uniform(0.002, 0.060) * SR)] += rng.uniform(0.2, 0.7)
    i = int(0.02 * SR)
    tt = np.arange(n - i) / SR
    tail = rng.normal(size=n - i) * 10 ** (-3 * tt / rt60)
    h[i:] += tail * 10 ** (rng.uniform(-3, 6) / 20) / np.sqrt(np.sum(tail * tail))
    return h, rt60


def _add(mix: np.ndarray, shot: np.ndarray, at_s: float, gain: float) -> None:
    i = int(round(at_s * SR))
    if i >= len(mix) or i + len(shot) <= 0:
        return
    a, b = max(0, -i), min(len(shot), len(mix) - i)
    mix[i + a:i + b] += gain * shot[a:b]


def draw(seed: int, bank: dict[str, np.ndarray], timeline: dict, work: Path,
         excerpt_s: float | None = None, source: str | None = None) -> Member:
    """One member of the family, drawn from ``seed`` (never one of ``CALIBRATION_SEEDS`` unless
    asked), written into ``work``; ``source`` fixes the drum's source (else drawn too)."""
    rng = np.random.default_rng(seed)
    cue = next(c for c in timeline["cues"] if c["id"] == CUE)
    c0 = float(cue["start"])
    plan = np.array(sorted(b["time"] for b in timeline["beats"] if b["cue"] == CUE))
    length = float(excerpt_s or rng.uniform(24.0, 40.0))
    first = int(rng.integers(0, len(plan) - int(length / 2) - 1))
    lo = plan[first] - rng.uniform(0.6, 1.8)                      # planned s the excerpt starts at
    hi = lo + length
    drawn = SOURCES[int(rng.integers(len(SOURCES)))]
    source = source or drawn
    ratio = 1.0 + rng.uniform(-0.02, 0.02)                        # performed / planned seconds
    jitter = float(rng.uniform(0.0, 0.020))
    start = c0 + (lo - c0) * ratio                                # recording's first sample, timeline s

    def played(t: np.ndarray) -> np.ndarray:                      # planned → recording s
        return c0 + (t - c0) * ratio - start

    n = int(length * ratio * SR) + SR
    drum = np.zeros(n)
    rest = np.zeros(n)
    keys = sorted(k for k in bank if k.startswith(f"{source}.drum."))
    bei_keys = sorted(k for k in bank if k.startswith(f"{source}.bei."))
    if source == "fluidr3":                                       # one key a drummer
        key = int(rng.integers(len(TAIKO_KEYS)))
        keys = keys[3 * key:3 * key + 3]
    elif source == "hydrogen":
        keys = [keys[int(rng.integers(len(keys)))]]
    inside = plan[(plan >= lo) & (plan < hi - 0.5)]
    struck = played(inside) + rng.normal(0.0, jitter, len(inside))
    distance = float(rng.uniform(5.0, 20.0))
    travel = distance / SPEED_OF_SOUND_M_S
    true = []
    for t in struck:
        name = keys[int(rng.integers(len(keys)))]
        shot = bank[name]
        _add(drum, shot, t + travel, float(rng.uniform(0.6, 1.0)))
        true.append(t + travel + onset_of(name, shot))
    notes = [x for x in timeline["notes"] if x["cue"] == CUE and lo <= x["time"] < hi]
    bei_times = [played(np.array([x["time"]]))[0] for x in notes if x["instrument"] in BEI_NAMES]
    near = struck[rng.random(len(struck)) < 0.3]                   # 鼙 60–250 ms from a stroke
    bei_times += list(near + rng.choice([-1, 1], len(near)) * rng.uniform(0.06, 0.25, len(near)))
    for t in bei_times:
        _add(rest, bank[bei_keys[int(rng.integers(len(bei_keys)))]], t + rng.uniform(0.01, 0.04),
             float(rng.uniform(0.3, 0.9)))
    band = "fluidr3" if rng.random() < 0.5 else "project"
    if band == "fluidr3" or not any(k.startswith("project.stem.") for k in bank):
        band = "fluidr3"
        for x in notes:
            kind = "bell" if x["instrument"] in BELLS else "song" if x["instrument"] == SONG else None
            name = f"fluidr3.{kind}.{int(np.clip(x['midi'], 48, 84))}" if kind else None
            if name in bank:
                _add(rest, bank[name], float(played(np.array([x["time"]]))[0])
                     + rng.normal(0, 0.01), 0.25 * x["velocity"] / 127)
    else:                                     # the render's band, following the drummer's tempo
        for name in (*BELLS, SONG):
            y = bank.get(f"project.stem.{name}")
            if y is not None:
                i = int((lo - c0) * SR)
                seg = y[i:i + int(length * SR) + SR]
                if len(seg) < SR // 10:                           # the stem ends before the excerpt
                    continue
                seg = signal.resample(seg, int(round(len(seg) * ratio)))[:n]
                rest[:len(seg)] += seg
    h, rt60 = _room(rng)
    delay = np.zeros(int(travel * SR) + 1)
    delay[-1] = 1.0                                                # the band: about as far
    wet = signal.fftconvolve(drum, h)[:n] + signal.fftconvolve(rest, np.convolve(delay, h))[:n]
    drum_power = _band_power(signal.fftconvolve(drum, h)[:n])
    snr = float(rng.uniform(0.0, 25.0))
    noise = _pink(n, rng) + _babble(n, rng) * rng.uniform(0.3, 1.5)
    noise *= math.sqrt(drum_power / 10 ** (snr / 10) / max(_band_power(noise), 1e-20))
    mix = (wet + noise)
    mix = (0.5 * mix / np.abs(mix).max()).astype(np.float32)
    wav = work / f"member-{seed}.wav"
    sf.write(wav, mix, SR, subtype="FLOAT")
    path = wav
    codec = None
    if rng.random() < 1 / 3:
        codec = int(rng.integers(96, 161))
        path = work / f"member-{seed}.mp4"
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(wav), "-ar", "44100",
                        "-c:a", "aac", "-b:a", f"{codec}k", str(path)], check=True, timeout=120)
        wav.unlink()
    params = {"seed": seed, "source": source, "keys": keys if len(keys) < 4 else len(keys),
              "band": band, "tempo_ratio": round(ratio, 4), "jitter_ms": round(1000 * jitter, 1),
              "distance_m": round(distance, 1), "rt60_s": round(rt60, 2), "snr_db": round(snr, 1),
              "aac_kbps": codec, "excerpt_planned_s": [round(lo, 2), round(hi, 2)]}
    return Member(seed, path, np.array(true), float(start), params)


FOUND_WITHIN_S = 0.050        # a true stroke is found when a stroke is heard this near it


def score(member: Member, heard_rec_s: np.ndarray) -> dict:
    """The finder's strokes (recording clock, s) against the member's truth: strokes found (one
    heard within ``FOUND_WITHIN_S``), extra strokes (heard, no true stroke that near), and the
    error of each found stroke (heard − true): median and 95th percentile of |error|, ms."""
    true = member.true_s
    heard = np.sort(np.asarray(heard_rec_s, dtype=np.float64))
    if not len(heard):
        return {"found": 0, "strokes": len(true), "extra": 0, "median_ms": None, "p95_ms": None}
    d = heard[np.argmin(np.abs(np.subtract.outer(true, heard)), axis=1)] - true
    found = np.abs(d) <= FOUND_WITHIN_S
    extra = int((np.abs(np.subtract.outer(heard, true)).min(axis=1) > FOUND_WITHIN_S).sum())
    e = 1000 * d[found]
    return {"found": int(found.sum()), "strokes": len(true), "extra": extra,
            "median_ms": round(float(np.median(e)), 2) if len(e) else None,
            "p95_ms": round(float(np.percentile(np.abs(e), 95)), 2) if len(e) else None}


def meets(s: dict) -> bool:
    """Issue 31's target on a member: every stroke found, no extra, |median| ≤ 2 ms, p95 ≤ 5 ms."""
    return (s["found"] == s["strokes"] and s["extra"] == 0 and s["median_ms"] is not None
            and abs(s["median_ms"]) <= 2.0 and s["p95_ms"] <= 5.0)


def fresh_seeds(count: int) -> list[int]:
    """``count`` seeds drawn from the operating system's entropy, none a calibration seed."""
    out: list[int] = []
    while len(out) < count:
        s = int(np.random.SeedSequence().entropy % 2 ** 31)
        if s not in CALIBRATION_SEEDS:
            out.append(s)
    return out


def load_bank(folder: Path, stems: Path | None, timeline: dict, seat_m: tuple = (0.0, 0.0, 0.0)
              ) -> dict[str, np.ndarray]:
    """The bank of :func:`build_bank` in ``folder``, with the project's one-shots and band stems
    when the render's stems (heard at ``seat_m``) are given."""
    with np.load(folder / "bank.npz") as z:
        bank = {k: z[k] for k in z.files}
    if stems is not None:
        bank.update(project_bank(stems, timeline, seat_m))
        for name in (*BELLS, SONG):
            if (stems / f"{name}.wav").exists():
                y, sr = sf.read(stems / f"{name}.wav", dtype="float32", always_2d=True)
                bank[f"project.stem.{name}"] = _mono16k(y, sr)
    return bank


def timeline_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))

"""The 射节 (貍首) as one microphone at the 宾's seat hears it, rendered from the FluidR3_GM samples
by FluidSynth — recordings this project did not synthesise, for the drum finder's tests and bench.

The notes are the compiled timeline's (``yuexuan compile cues/dashe.toml --timeline``, read back as
JSON): the three 建鼓 as GM Taiko Drums (program 117, 0-based 116), the 朔鼙 and 应鼙 before each
节 as GM kit drums (their ``gm_drum_key``: 47 low-mid tom, 45 low tom), the bells (笙钟, 颂钟,
鑮) as Tubular Bells, the stones as the timeline's GM program (Marimba), the singers (歌) as Choir
Aahs. Each instrument is rendered alone (``fluidsynth -ni -F OUT.wav -r 44100 SF2 MID``) and put
at the seat as the render puts it: delayed by its travel time and scaled by its ``[synth]
gain_db`` and spherical spreading, 1/d beyond 1 m (``yuexuan/audio/room/space.py``'s law), d computed
here from the timeline's ``position_m`` and ``ceremony/courtyard.toml``'s seat; the notes' velocities
are the timeline's. Then pink noise 20 dB below the whole mix.

The players (MIXES): everyone 0.8 % slower than the plan (the band follows the drum); the
drummer's strokes with 8 ms of jitter, the others' notes with 10 ms (seeded). One drummer's timing
serves the three 建鼓 (struck together); the *true stroke* is when the first of them is heard at
the seat (建鼓·北, 8 m away), on the recording's clock: its note-on, plus the travel, plus the
Taiko's own start in its FluidSynth stem (:func:`sound_starts`) — the first direct arrival of the
attack. :class:`Playing` plays a mix otherwise (tempo, jitter, noise, the Taiko's key, a hall,
an excerpt): FRESH are three short ones; a hall's reflections and tail follow the direct sound, so
the truth stays the direct sound's.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy import signal

ROOT = Path(__file__).resolve().parent.parent
CUES = ROOT / "cues" / "dashe.toml"
SF2 = Path("/usr/share/sounds/sf2/FluidR3_GM.sf2")
SR = 44100
SEAT = "宾"
CUE = "lishou"
SPEED_OF_SOUND_M_S = 343.0        # yuexuan/audio/room/space.py's value
TEMPO_RATIO = 1.008               # performed seconds per planned second: 0.8 % slow
DRUM_JITTER_S = 0.008
BAND_JITTER_S = 0.010
LEAD_S = 4.0                      # the recorder starts this long before the cue, s
TAIL_S = 4.0                      # and stops this long after its last note, s
EXCERPT_PAD_S = 1.5               # an excerpt's recording starts and stops this far outside it, s
NOISE_BELOW_DB = 20.0
TAIKO = 116                       # GM program 117 Taiko Drum, 0-based
TUBULAR_BELLS = 14                # GM program 15, 0-based
CHOIR_AAHS = 52                   # GM program 53, 0-based
TICKS_PER_BEAT = 9600             # at 500000 µs a beat: 1 tick = 52 µs
DRUM_CHANNEL = 9


@dataclass(frozen=True)
class Playing:
    """How the players play a mix and where it is heard: the tempo (performed seconds per planned
    second; 1.017 is 1.7 % slow), the drummer's and the band's random jitter (s, s.d.), the pink
    noise (dB below the mix), a room or none (:func:`room_response`), the Taiko's key (its
    sample and pitch: FluidR3's Taiko above key ~55 sounds two humps ~20 ms apart), and which
    part of the 射节 is played: an excerpt ``(from, to)`` in planned seconds from the cue's
    start (None: all of it, with ``LEAD_S`` before and ``TAIL_S`` after; an excerpt has
    ``EXCERPT_PAD_S`` either side)."""

    tempo_ratio: float = TEMPO_RATIO
    drum_jitter_s: float = DRUM_JITTER_S
    band_jitter_s: float = BAND_JITTER_S
    noise_below_db: float = NOISE_BELOW_DB
    room: bool = False
    taiko_key: int | None = None       # the key every 建鼓 stroke plays (None: the timeline's)
    excerpt_s: tuple[float, float] | None = None


@dataclass(frozen=True)
class FluidMix:
    """One rendered mix and its truth."""

    path: Path                 # mono float WAV, SR Hz
    true_s: np.ndarray         # each 建鼓 stroke's first arrival at the seat, recording clock, s
    planned_s: np.ndarray      # the 112 planned strokes, timeline s
    start_s: float             # timeline time of the recording's first sample, s
    struck_s: np.ndarray       # when the drummer struck each stroke, timeline s
    heard_s: dict = field(default_factory=dict)   # instrument → its note-ons + travel time,
    #                               recording clock, s (FluidSynth sounds each a few ms later)


@dataclass(frozen=True)
class Part:
    """One instrument's notes as played: onset times (recording clock, s, before travel)."""

    instrument: str
    program: int | None        # None: the GM kit on channel 10
    times_s: np.ndarray
    durations_s: np.ndarray
    keys: np.ndarray
    velocities: np.ndarray


def compiled_timeline(work: Path) -> dict:
    """The default cue sheet compiled by the command line, its timeline JSON read back."""
    out = work / "timeline.json"
    if not out.exists():
        r = subprocess.run([sys.executable, "-m", "yuexuan", "compile", str(CUES),
                            "-o", str(work / "dashe.mid"), "--timeline", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def seat_position_m(name: str = SEAT) -> tuple:
    with open(ROOT / "ceremony" / "courtyard.toml", "rb") as f:
        data = tomllib.load(f)
    seat = next(x for x in data["listener"] if x["name"] == name)
    return tuple(float(v) for v in seat["position_m"])


def at_seat(info: dict, seat_m) -> tuple[float, float]:
    """(gain, delay s) of an instrument of the timeline heard at the seat, as the render puts it:
    its ``[synth] gain_db`` times 1/d spreading beyond 1 m, and d/c travel."""
    d = math.dist(info["position_m"], seat_m)
    level = 10 ** (float((info.get("synth") or {}).get("gain_db", 0.0)) / 20)
    return level / max(d, 1.0), d / SPEED_OF_SOUND_M_S


def program_of(info: dict) -> int | None:
    """The GM program this mix gives an instrument of the timeline (None: kit drum)."""
    if info["kind"] == "建鼓":
        return TAIKO
    if info["family"] == "drum":
        return None
    if info["family"] == "bell":
        return TUBULAR_BELLS
    if info["family"] == "voice":
        return CHOIR_AAHS
    return info["gm_program"]


def write_midi(part: Part, path: Path) -> None:
    """A one-track SMF of the part (mido), note times rounded to ticks of 52 µs."""
    import mido

    ch = DRUM_CHANNEL if part.program is None else 0
    sec_per_tick = 0.5 / TICKS_PER_BEAT
    events = []
    for t, d, k, v in zip(part.times_s, part.durations_s, part.keys, part.velocities):
        on = int(round(t / sec_per_tick))
        events.append((on, 1, mido.Message("note_on", channel=ch, note=int(k), velocity=int(v))))
        off = on + max(1, int(round(d / sec_per_tick)))
        events.append((off, 0, mido.Message("note_off", channel=ch, note=int(k), velocity=0)))
    events.sort(key=lambda e: (e[0], e[1]))
    track = mido.MidiTrack()
    if part.program is not None:
        track.append(mido.Message("program_change", channel=ch, program=part.program, time=0))
    track.append(mido.Message("control_change", channel=ch, control=7, value=127, time=0))
    last = 0
    for tick, _, msg in events:
        track.append(msg.copy(time=tick - last))
        last = tick
    mid = mido.MidiFile(ticks_per_beat=TICKS_PER_BEAT)
    mid.tracks.append(track)
    mid.save(path)


def render_part(part: Part, work: Path) -> np.ndarray:
    """FluidSynth's rendering of the part, mono (mean of its two channels)."""
    mid = work / f"{part.instrument}.mid"
    wav = work / f"{part.instrument}.wav"
    write_midi(part, mid)
    # synth.dynamic-sample-loading: only the samples of the presets the part plays are read (all
    # 140 MB of the SoundFont otherwise: a third of a short part's CPU); the same sound, to the
    # 16-bit dither's last bit
    r = subprocess.run(["fluidsynth", "-ni", "-o", "synth.dynamic-sample-loading=1", "-F", str(wav),
                        "-r", str(SR), str(SF2), str(mid)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and wav.exists(), r.stderr
    y, sr = sf.read(wav, dtype="float32", always_2d=True)
    wav.unlink()                          # 40 MB a stem: only the mix is kept
    assert sr == SR and y.shape[1] == 2
    return (y[:, 0] + y[:, 1]) / 2        # the mean of the two (numpy's mean over a row of two: 10× slower)


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-RMS pink (1/f power) noise: white noise shaped by 1/√f in the frequency domain, made
    at the next fast FFT length and cut to ``n`` (the mix's own length has large prime factors:
    its two transforms took 12 s of the fixture's CPU)."""
    from scipy.fft import next_fast_len

    m = next_fast_len(n, real=True)
    spec = np.fft.rfft(rng.normal(size=m))
    f = np.arange(len(spec), dtype=np.float64)
    f[0] = 1.0
    y = np.fft.irfft(spec / np.sqrt(f), m)[:n]
    return y / np.sqrt(np.mean(y * y))


def build_mix(work: Path, seed: int = 14, name: str = "mix.wav",
              whole: bool = False, drum: bool = True, playing: Playing = Playing()) -> FluidMix:
    """Render the mix into ``work`` (reused when already there) and return it with its truth.
    ``whole``: the whole ceremony (25 min, every cue's band and song, the 陔 and 骜's 建鼓
    strokes too) with the 射节 played as above and the rest on the plan; the truth is the 射节's
    strokes. ``drum=False``: everything but the 建鼓 (no truth: ``true_s`` is empty)."""
    return build_mixes(work, {name: drum}, seed, whole, playing)[name]


def build_mixes(work: Path, variants: dict, seed: int = 14, whole: bool = False,
                playing: Playing = Playing()) -> dict:
    """{name: FluidMix} for ``variants`` {file name: with the 建鼓?}, as :func:`build_mix` makes each,
    the parts rendered once for all of them. (The 射节's 建鼓 notes take no draws of the random
    generator, so every other part is played the same with or without them.)"""
    work.mkdir(parents=True, exist_ok=True)
    tl = compiled_timeline(work)
    cue = next(c for c in tl["cues"] if c["id"] == CUE)
    c0, c1 = float(cue["start"]), float(cue["end"])
    pl = playing
    ratio = pl.tempo_ratio
    start_tl = (0.0 if whole else c0) - LEAD_S
    rng = np.random.default_rng(seed)
    seat = seat_position_m()
    planned = np.array(sorted(b["time"] for b in tl["beats"] if b["cue"] == CUE))
    lo, hi = -np.inf, np.inf                 # the excerpt, timeline s (as planned)
    if pl.excerpt_s is not None:
        assert not whole, "an excerpt of the whole ceremony"
        lo, hi = c0 + pl.excerpt_s[0], c0 + pl.excerpt_s[1]
        planned = planned[(planned >= lo) & (planned < hi)]
        start_tl = c0 + (lo - c0) * ratio - EXCERPT_PAD_S
    struck = c0 + (planned - c0) * ratio + rng.normal(0.0, pl.drum_jitter_s, len(planned))
    notes_by: dict[str, list] = {}
    for n in tl["notes"]:
        if whole or (n["cue"] == CUE and n["instrument"] in cue["instruments"]
                     and lo <= n["time"] < hi):
            notes_by.setdefault(n["instrument"], []).append(n)
    arrivals = []
    parts = []
    for name_i, notes in sorted(notes_by.items()):
        info = tl["instruments"][name_i]
        if info["family"] == "voice" and name_i != "歌":
            continue                          # the 获者's and 大射正's calls are not the band
        if info["kind"] == "建鼓" and not any(variants.values()):
            continue
        t = np.array([n["time"] for n in notes])
        shejie = (t >= c0) & (t <= c1)
        if info["kind"] == "建鼓":            # the drummer's strokes, and any outside the 射节
            idx = np.clip(np.searchsorted(planned, t), 0, len(planned) - 1)
            assert np.allclose(planned[idx[shejie]], t[shejie]), "a 建鼓 note off the plan"
            played = t.copy()
            played[shejie] = struck[idx[shejie]]
            played[~shejie] += rng.normal(0.0, pl.band_jitter_s, int((~shejie).sum()))
        else:
            played = np.where(shejie, c0 + (t - c0) * ratio, t) \
                + rng.normal(0.0, pl.band_jitter_s, len(t))
        program = program_of(info)
        keys = np.array([info["gm_drum_key"] if program is None else
                         pl.taiko_key if program == TAIKO and pl.taiko_key is not None else
                         n["midi"] for n in notes])
        parts.append(Part(name_i, program, played - start_tl,
                          np.array([n["duration"] for n in notes]) * ratio,
                          keys, np.array([n["velocity"] for n in notes])))
        gain, delay = at_seat(info, seat)
        arrivals.append((name_i, gain, delay))
    is_drum = [tl["instruments"][p.instrument]["kind"] == "建鼓" for p in parts]
    paths = {name: work / name for name in variants}
    truths = {name: path.with_suffix(".truth.npy") for name, path in paths.items()}
    if not all(p.exists() and truths[name].exists() for name, p in paths.items()):
        assert shutil.which("fluidsynth"), "fluidsynth is needed (tests/system-deps.sh)"
        assert SF2.exists(), f"{SF2} is needed (fluid-soundfont-gm)"
        mixes, firsts = {}, {}
        for name, drum in variants.items():
            used = [p for p, d in zip(parts, is_drum) if drum or not d]
            tail = TAIL_S if pl.excerpt_s is None else EXCERPT_PAD_S
            length = int((max(p.times_s.max() + p.durations_s.max() for p in used) + tail) * SR)
            mixes[name] = np.zeros(length, dtype=np.float64)
            firsts[name] = None           # (delay s, stem) of the nearest 建鼓
        # one FluidSynth child per part, two at a time (the machine's two cores); each stem is
        # added as it comes, in order, so only the few rendered ahead are held
        with ThreadPoolExecutor(max_workers=2) as pool:
            stems = pool.map(lambda part: render_part(part, work), parts)
            for y, (_, gain, delay), drum_part in zip(stems, arrivals, is_drum):
                i = int(round(delay * SR))
                for name, drum in variants.items():
                    if drum_part and not drum:
                        continue
                    mix = mixes[name]
                    m = min(len(y), len(mix) - i)
                    mix[i:i + m] += gain * y[:m]
                    if drum_part and (firsts[name] is None or delay < firsts[name][0]):
                        firsts[name] = (i / SR, y)
        noises = {}                       # each mix's noise as if it alone had been made: the
        for name, mix in mixes.items():   # same for mixes of one length (a slow FFT length)
            if len(mix) not in noises:
                noises[len(mix)] = pink_noise(len(mix), copy.deepcopy(rng))
            if pl.room:
                mix[:] = signal.fftconvolve(mix, room_response(copy.deepcopy(rng)))[:len(mix)]
            rms = math.sqrt(float(np.mean(mix * mix)))
            mix += rms * 10 ** (-pl.noise_below_db / 20) * noises[len(mix)]
            mix *= 0.5 / float(np.abs(mix).max())
            sf.write(paths[name], mix.astype(np.float32), SR, subtype="FLOAT")
            first = firsts[name]
            np.save(truths[name], first[0] + sound_starts(first[1], struck - start_tl) if first else
                    np.zeros(0))
    out = {}
    for name, drum in variants.items():
        heard = {p.instrument: p.times_s + delay for p, (_, _, delay), d in zip(parts, arrivals, is_drum)
                 if drum or not d}
        out[name] = FluidMix(paths[name], np.load(truths[name]), planned, float(start_tl), struck, heard)
    return out


# A hall heard from the seat, relative to the direct sound (delay s, gain): the floor, the side
# walls, the ceiling, the back wall, then a diffuse tail. Hand-written (ten lines) rather than a
# room simulator as a test dependency: what matters to the finder is that echoes of each stroke
# follow its first arrival, some as loud as half of it, within the 60 ms of its attack.
REFLECTIONS = ((0.0021, 0.7), (0.0094, 0.5), (0.0137, 0.45), (0.0171, 0.45), (0.0262, 0.4),
               (0.0383, 0.35), (0.0517, 0.3))
TAIL_FROM_S = 0.02               # the diffuse tail starts this long after the direct sound
RT60_S = 1.2                     # and falls by 60 dB in this time
DIRECT_TO_TAIL_DB = -3.0         # the direct sound's energy against the tail's


def room_response(rng: np.random.Generator) -> np.ndarray:
    """The hall's impulse response at SR: 1 at the direct sound (sample 0), the REFLECTIONS, and
    an exponentially decaying Gaussian tail (RT60_S) from TAIL_FROM_S holding DIRECT_TO_TAIL_DB
    of energy against the direct sound's."""
    n = int((TAIL_FROM_S + RT60_S) * SR)
    h = np.zeros(n)
    h[0] = 1.0
    for delay_s, gain in REFLECTIONS:
        h[int(round(delay_s * SR))] += gain
    i = int(TAIL_FROM_S * SR)
    t = np.arange(n - i) / SR
    tail = rng.normal(size=n - i) * 10 ** (-3 * t / RT60_S)
    h[i:] += tail * 10 ** (-DIRECT_TO_TAIL_DB / 20) / np.sqrt(np.sum(tail * tail))
    return h


def sound_starts(stem: np.ndarray, note_on_s: np.ndarray) -> np.ndarray:
    """When each note's sound starts in its own stem (s): the first sample, from the note-on on,
    reaching 1 % of the note's peak within 60 ms. FluidSynth sounds a Taiko note 5–9 ms after its
    note-on (its 64-sample blocks and the sample's lead-in), so the stem, silent before each
    stroke, says when the drum is heard, not the MIDI file."""
    out = np.empty(len(note_on_s))
    for k, t in enumerate(note_on_s):
        i = int(t * SR)
        seg = np.abs(stem[i:i + int(0.06 * SR)])
        out[k] = (i + int(np.flatnonzero(seg >= 0.01 * seg.max())[0])) / SR
    return out


MIXES = {"mix.wav": True, "mix-without-drum.wav": False}

# Three short mixes (the first 28 s of the 射节: a recording from its start, the drift growing from
# nothing as in a whole one) played otherwise than
# MIXES: the drummers 1.7 % slow, 1.1 % fast, 0.3 % slow, with 14, 6 and 11 ms of jitter, pink
# noise 14, 17 and 19 dB below, another Taiko key each (its sample's two humps, or one), the last
# heard in a hall (room_response). {name: (seed, Playing)}; the drum finder was tuned on other
# seeds and keys (whole-射节 mixes of the same kinds, bench/bench_drum.py's).
FRESH = {
    "fresh-slow.wav": (21, Playing(tempo_ratio=1.017, drum_jitter_s=0.014, noise_below_db=14.0,
                                   taiko_key=62, excerpt_s=(0.0, 28.0))),
    "fresh-fast.wav": (22, Playing(tempo_ratio=0.989, drum_jitter_s=0.006, noise_below_db=17.0,
                                   taiko_key=57, excerpt_s=(0.0, 28.0))),
    "fresh-room.wav": (23, Playing(tempo_ratio=1.003, drum_jitter_s=0.011, noise_below_db=19.0,
                                   room=True, taiko_key=64, excerpt_s=(0.0, 28.0))),
}


def build_all(work: Path) -> dict:
    """{name: FluidMix} of MIXES and FRESH, rendered into ``work`` (reused when there)."""
    out = build_mixes(work, MIXES)
    for name, (seed, playing) in FRESH.items():
        out.update(build_mixes(work, {name: True}, seed, playing=playing))
    return out


def cached_mixes(root: Path) -> dict:
    """{name: FluidMix} of MIXES and FRESH (:func:`build_all`), made once into an artefact folder
    under ``root`` (tests/cache_support.py), keyed by this file, FluidSynth's version and the
    SoundFont too."""
    from cache_support import artefact, file_digest, tool_version
    from system_tools import require

    require("fluidsynth")
    assert SF2.exists(), f"{SF2} is needed (fluid-soundfont-gm)"
    parts = (sorted(MIXES.items()), sorted(FRESH), file_digest(Path(__file__)), file_digest(SF2),
             tool_version("fluidsynth", "--version"))
    folder = artefact(root, "fluid-mixes", parts, build_all)
    return build_all(folder)

"""The voices as people: one dry singer measured with pyin and Praat (vibrato varying cycle to cycle,
jitter, shimmer, diphthongs), the six 工 singing the first minute of 鹿鸣 from the 宾's seat (one
onset a syllable, energy above 5 kHz, harmonics-to-noise beside FluidR3's Choir Aahs on the same
notes, no two renditions alike), the spoken calls (voiced, each word its own formants).

Evidence: librosa (pyin, onset_detect), Praat through parselmouth (PointProcess jitter and
shimmer, Harmonicity (cc), Formant (burg)), FluidSynth rendering the GM Choir Aahs.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
from pathlib import Path

import librosa
import mido
import numpy as np
import parselmouth
import pytest
import soundfile as sf
from cli_support import run_cli
from parselmouth.praat import call

from yuexuan.audio.engine import render
from yuexuan.audio.engine.plan import Options
from yuexuan.audio.voice import glottal, singer, takes
from yuexuan.audio.voice.line_readings import readings
from yuexuan.compiler import compile_path
from yuexuan.rite import courtyard, instruments
from yuexuan.timeline import Timeline

ROOT = Path(__file__).resolve().parent.parent
SR = 48000
SF2 = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
EXCERPT_S = 60.0                       # the first minute of 鹿鸣 (about 50 syllables)
HNR_S = 20.0                           # of which the harmonics-to-noise is measured on the first 20 s
INSTS = instruments.load_all()


def _sound(x: np.ndarray, sr: int = SR) -> parselmouth.Sound:
    return parselmouth.Sound(np.asarray(x, dtype=np.float64), sr)


def _hnr_db(x: np.ndarray, sr: int) -> float:
    h = call(_sound(x, sr), "To Harmonicity (cc)", 0.01, 75, 0.1, 1.0)
    return float(call(h, "Get mean", 0, 0))


def _vibrato_cycles(cents: np.ndarray, hop_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(rate Hz, extent ± cents) of each whole vibrato cycle of a pitch track in cents."""
    w = int(round(0.4 / hop_s)) | 1
    c = cents - np.convolve(cents, np.ones(w) / w, mode="same")            # off the slow drift
    c = c[w // 2:-(w // 2)]
    up = np.flatnonzero((c[:-1] < 0) & (c[1:] >= 0))
    rates = 1.0 / (np.diff(up) * hop_s)
    extents = np.array([(c[a:b].max() - c[a:b].min()) / 2 for a, b in zip(up[:-1], up[1:])])
    return rates, extents


# ---- one dry singer --------------------------------------------------------------------------

def test_one_dry_singer_has_a_light_vibrato_varying_cycle_to_cycle(tmp_path):
    """`yuexuan note 歌 黄 --lyric 啊 --voices 1`: pyin's vibrato rate and extent inside the
    setting's ranges (4.5–6.5 Hz, ±15–50 cents), each varying from cycle to cycle (CV ≥ 10 %)."""
    out = tmp_path / "a.wav"
    r = run_cli("note", "歌", "黄", "-o", out, "--lyric", "啊", "--voices", "1", "--duration", "4")
    assert r.returncode == 0, r.stderr
    x, sr = sf.read(out, dtype="float32")
    y = librosa.resample(x, orig_sr=sr, target_sr=16000)
    hop = 160
    f0, voiced, _ = librosa.pyin(y, fmin=120, fmax=260, sr=16000, frame_length=1024, hop_length=hop)
    hz = 172.5
    keep = slice(int(0.6 * 16000 / hop), int(3.9 * 16000 / hop))      # after the vibrato's onset
    assert voiced[keep].mean() > 0.95
    cents = 1200 * np.log2(f0[keep] / hz)
    rates, extents = _vibrato_cycles(cents, hop / 16000)
    assert len(rates) >= 12
    assert 4.5 <= rates.mean() <= 6.5 and 15 <= extents.mean() <= 50, (rates.mean(), extents.mean())
    assert rates.std() / rates.mean() >= 0.10 and extents.std() / extents.mean() >= 0.10, \
        (rates.std() / rates.mean(), extents.std() / extents.mean())
    assert abs(np.median(cents)) < 15          # the note's pitch (pyin), give or take his intonation


def test_one_singer_without_vibrato_has_jitter_and_shimmer():
    """Praat's local jitter 0.2–0.6 % (the model's setting; healthy voices 0.2–1 %) and a shimmer."""
    v = singer.voice_of(INSTS["歌"].synth)
    v = dataclasses.replace(v, pitch=dataclasses.replace(v.pitch, vibrato_cents=0.0, glide_cents=0.0))
    x, lead = singer.render(takes.reading_of("啊"), 172.5, 1.5, 90, SR, seed=11, voice=v)
    snd = _sound(x[lead + int(0.1 * SR):lead + int(1.4 * SR)])
    pp = call(snd, "To PointProcess (periodic, cc)", 75, 500)
    jitter = call(pp, "Get jitter (local)", 0, 0, 0.0001, 0.02, 1.3) * 100
    shimmer = call([snd, pp], "Get shimmer (local)", 0, 0, 0.0001, 0.02, 1.3, 1.6) * 100
    assert 0.2 <= jitter <= 0.6, jitter
    assert 1.0 <= shimmer <= 8.0, shimmer


@pytest.mark.parametrize("word", ["好", "周", "呦"])
def test_diphthongs_glide_their_second_formant(word):
    """Within the syllable F2 (Praat, Burg) moves more than 100 Hz: hao, zhou, you glide."""
    x, lead = singer.render(takes.reading_of(word), 172.5, 0.9, 90, SR, seed=3,
                            voice=singer.voice_of(INSTS["歌"].synth))
    fm = _sound(x[:lead + int(0.9 * SR)]).to_formant_burg(0.01, 5, 5000, 0.025, 50)
    ts = np.arange(lead / SR + 0.03, lead / SR + 0.87, 0.01)
    f2 = np.array([fm.get_value_at_time(2, t) for t in ts])
    f2 = np.convolve(f2[np.isfinite(f2)], np.ones(5) / 5, mode="valid")      # off one-frame slips
    assert np.percentile(f2, 98) - np.percentile(f2, 2) > 100, word


# ---- the calls --------------------------------------------------------------------------------

def test_spoken_calls_are_voiced_and_each_word_its_own_formants():
    """留, 扬, 方 (the 大射正) and 诺 (a 负侯者, spoken in round 3): pyin finds at least half
    the loud frames voiced; their (F1, F2) tracks differ word from word."""
    tracks = {}
    for word, who in (("留", "大射正"), ("扬", "大射正"), ("方", "大射正"), ("诺", "负侯者")):
        x = takes.take(INSTS[who].synth, takes.reading_of(word), None, 90, 0.7, SR, seed=5)
        y = librosa.resample(x, orig_sr=SR, target_sr=16000)
        _, voiced, _ = librosa.pyin(y, fmin=70, fmax=600, sr=16000, frame_length=1024, hop_length=160)
        rms = librosa.feature.rms(y=y, frame_length=1024, hop_length=160)[0][:len(voiced)]
        assert voiced[rms > 0.1 * rms.max()].mean() >= 0.5, word
        fm = _sound(x).to_formant_burg(0.01, 5, 5000, 0.025, 50)
        ts = np.linspace(0.1, 0.7, 7)
        tracks[word] = np.array([[fm.get_value_at_time(k, t) for t in ts] for k in (1, 2)])
    words = list(tracks)
    for i, a in enumerate(words):
        for b in words[i + 1:]:
            gap = np.nanmax(np.abs(tracks[a] - tracks[b]))
            assert gap > 150, (a, b, gap)


# ---- the ensemble: the first minute of 鹿鸣 from the 宾's seat ---------------------------------

def _excerpt(seconds: float) -> Timeline:
    tl = compile_path(ROOT / "cues" / "dashe.toml", cues=["luming"])[0]
    c = tl.cues[0]
    return dataclasses.replace(tl, cues=(dataclasses.replace(c, end=c.start + seconds, phrases=()),),
                               notes=tuple(n for n in tl.notes if n.time < c.start + seconds - 2.0),
                               beats=())


@pytest.fixture(scope="module")
def luming(tmp_path_factory):
    """(timeline, 歌 stem mono float32 at SR, syllable starts at the seat s, readings by note)."""
    d = tmp_path_factory.mktemp("luming")
    tl = _excerpt(EXCERPT_S)
    render.render(tl, d / "l.wav", Options(), stems_dir=d / "stems")
    x, sr = sf.read(d / "stems" / "歌.wav", dtype="float32")
    assert sr == SR
    sung = [n for n in tl.notes if n.instrument == "歌"]
    said = readings(tl.notes, {"歌": "voice"})
    seat = courtyard.listeners()["宾"].position_m
    travel = math.dist(tl.cues[0].places["歌"]["position_m"], seat) / 343.0
    starts = np.array([n.time - takes.lead_samples(said[tl.notes.index(n)], SR) / SR + travel for n in sung])
    return tl, x.mean(axis=1), starts, {id(n): said[tl.notes.index(n)] for n in sung}


def test_ensemble_one_onset_a_syllable(luming):
    """librosa's onsets within ±50 ms of each syllable's start (its consonant) plus the travel
    time: precision ≥ 0.85, recall ≥ 0.95."""
    _, x, starts, _ = luming
    pad = 0.5                          # silence before the cue's first note: an onset in the file's
    y = np.concatenate((np.zeros(int(pad * 22050), np.float32),      # first frames is not found
                        librosa.resample(x, orig_sr=SR, target_sr=22050)))
    on = librosa.onset.onset_detect(y=y, sr=22050, units="time") - pad
    precision = np.mean([np.any(np.abs(starts - o) <= 0.05) for o in on])
    recall = np.mean([np.any(np.abs(on - s) <= 0.05) for s in starts])
    assert precision >= 0.85 and recall >= 0.95, (precision, recall, len(on), len(starts))


def test_ensemble_energy_above_5khz(luming):
    """Energy above 5 kHz (a sung vowel's breath and consonants) between FluidR3's Choir Aahs on
    the same notes (−36.6 dB under the total) and espeak-ng saying the line (−25.3 dB)."""
    _, x, _, _ = luming
    power = np.abs(np.fft.rfft(x)) ** 2
    f = np.fft.rfftfreq(len(x), 1 / SR)
    db = 10 * math.log10(power[f > 5000].sum() / power.sum())
    assert -38 <= db <= -25, db


def test_no_two_renditions_of_a_syllable_alike(luming):
    """Same syllable, pitch and length sung again: max normalised cross-correlation over ±20 ms
    of the first 0.8 s stays under 0.9."""
    tl, x, starts, said = luming
    sung = [n for n in tl.notes if n.instrument == "歌"]
    groups: dict[tuple, list[float]] = {}
    for n, s in zip(sung, starts):
        r = said[id(n)]
        groups.setdefault((r.initial, r.final, n.hz, round(n.duration, 2)), []).append(s)
    lag = int(0.02 * SR)
    worst, pairs = 0.0, 0
    for ss in groups.values():
        segs = [x[int(s * SR):int(s * SR) + int(0.8 * SR)] for s in ss]
        for i in range(len(segs)):
            for j in range(i + 1, len(segs)):
                a, b = segs[i], segs[j]
                cc = np.correlate(np.pad(a, lag), b, mode="valid")          # lags −20…+20 ms
                worst = max(worst, float(cc.max() / math.sqrt(np.dot(a, a) * np.dot(b, b))))
                pairs += 1
    assert pairs >= 5 and worst < 0.9, (pairs, worst)


def test_voices_hnr_beside_the_choir_aahs(luming, tmp_path):
    """Praat's harmonics-to-noise of the stem within ±3 dB of FluidR3's Choir Aahs (GM 53)
    rendered by FluidSynth on the same notes, measured the same way."""
    tl, x, _, _ = luming
    mid = mido.MidiFile(ticks_per_beat=480)
    track = mido.MidiTrack()
    mid.tracks.append(track)
    track.append(mido.MetaMessage("set_tempo", tempo=500000))          # 960 ticks a second
    track.append(mido.Message("program_change", program=52))
    events = sorted([(n.time, 1, n.midi, n.velocity) for n in tl.notes if n.instrument == "歌"]
                    + [(n.time + n.duration, 0, n.midi, 0) for n in tl.notes if n.instrument == "歌"])
    tick = 0
    for t, on, key, vel in events:
        now = int(round(t * 960))
        track.append(mido.Message("note_on" if on else "note_off", note=key, velocity=vel,
                                  time=now - tick))
        tick = now
    mid.save(tmp_path / "choir.mid")
    subprocess.run(["fluidsynth", "-ni", "-F", str(tmp_path / "choir.wav"), "-r", str(SR), SF2,
                    str(tmp_path / "choir.mid")], check=True, capture_output=True, timeout=120)
    choir, sr = sf.read(tmp_path / "choir.wav", dtype="float32")
    span = slice(0, int(HNR_S * SR))       # Praat's cross-correlation HNR at 16 kHz, both alike
    ours = _hnr_db(librosa.resample(x[span], orig_sr=SR, target_sr=16000), 16000)
    theirs = _hnr_db(librosa.resample(choir.mean(axis=1)[span], orig_sr=sr, target_sr=16000), 16000)
    assert abs(ours - theirs) <= 3.0, (ours, theirs)


def test_glottal_source_tilts_with_velocity():
    """A louder voice has the flatter source spectrum (smaller Rd): more energy above 1 kHz."""
    def high_share(v: int) -> float:
        p = glottal.lf_period(round(glottal.rd_of(v), 2))
        spec = np.abs(np.fft.rfft(np.tile(p, 8))) ** 2          # 2048 points a period: bin 8k = harmonic k
        return float(spec[8 * 10:].sum() / spec.sum())          # harmonics 10 and up
    assert high_share(120) > 2 * high_share(40)

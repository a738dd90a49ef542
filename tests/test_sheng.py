"""The 笙 and the 和 (family free_reed, yuexuan/audio/synthesis/free_reed.py), measured in the files
``yuexuan note`` writes, with librosa and Praat (parselmouth), not with the project's code:

* partials at the harmonics of the note, odd and even (a free reed's flow pulses on both sides of
  its slot; a clarinet-like closed pipe would keep the even ones weak), the nominal pitch the
  strongest, the 和音's fifth beside it;
* an attack (10–90 % of the held level) of 30–120 ms, a release that ends below −60 dB;
* the 和 sounds an octave above the 笙 (Praat's pitch).

Each run also plays a 律 and a velocity drawn afresh (the seed is printed on failure). A cue sheet
that gives the 笙 a melody has it in its timeline; the default 大射 (no 笙) leaves it out.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
import soundfile as sf
from cli_support import run_cli

from yuexuan.audio.synthesis.primitives import RELEASE_S
from yuexuan.compiler import compile_path
from yuexuan.rite import instruments

SEED = random.randrange(2 ** 32)
HZ0 = 345.0                                    # the note command's 黄钟
INSTS = instruments.load_all()


def _note(tmp_path, name: str, lv: str, velocity: int, duration: float = 1.5):
    """(samples, sample rate, the nominal Hz the command printed) of ``yuexuan note``."""
    out = tmp_path / f"{name}-{lv}-{velocity}.wav"
    r = run_cli("note", name, lv, "--velocity", velocity, "--duration", duration, "-o", out, timeout=60)
    assert r.returncode == 0, r.stderr
    hz = float(re.search(r"([\d.]+) Hz", r.stdout).group(1))
    x, sr = sf.read(out, dtype="float32")
    return x, sr, hz


def _measure(x, sr: int, hz: float) -> dict:
    """librosa: the harmonics' levels (dB re the fundamental, over the held part), the strongest
    partial's frequency, the attack (10→90 % of the held RMS), the last 10 ms re the held RMS."""
    import librosa
    hop = 64
    rms = librosa.feature.rms(y=x, frame_length=256, hop_length=hop)[0]
    t = librosa.frames_to_time(np.arange(len(rms)), sr=sr, hop_length=hop)
    held = float(np.median(rms[(t > 0.3) & (t < len(x) / sr - 0.3)]))
    attack_ms = 1000 * (t[np.argmax(rms >= 0.9 * held)] - t[np.argmax(rms >= 0.1 * held)])
    n_fft = 16384
    spec = np.abs(librosa.stft(x, n_fft=n_fft, hop_length=2048))
    ft = librosa.frames_to_time(np.arange(spec.shape[1]), sr=sr, hop_length=2048)
    steady = spec[:, (ft > 0.3) & (ft < len(x) / sr - 0.3)]
    freqs = librosa.fft_frequencies(sr=sr, n_fft=n_fft)
    ks = [1, 1.5, 2, 3, 4, 5, 6, 7, 8]
    h = librosa.f0_harmonics(steady, f0=np.full(steady.shape[1], hz), harmonics=ks, freqs=freqs)
    level = 20 * np.log10(np.mean(h, axis=1) + 1e-12)
    mean = steady.mean(axis=1)
    peak = int(np.argmax(mean))
    a, b, c = 20 * np.log10(mean[peak - 1:peak + 2])
    strongest = freqs[peak] + 0.5 * (a - c) / (a - 2 * b + c) * (freqs[1] - freqs[0])
    tail = x[-int(0.01 * sr):]
    return {"harmonics": dict(zip(ks, level - level[0])), "strongest_hz": float(strongest),
            "attack_ms": float(attack_ms),
            "tail_db": float(20 * np.log10(np.sqrt(np.mean(tail ** 2)) / held + 1e-12))}


def _cases():
    rng = random.Random(SEED)
    drawn = rng.choice([p.name for p in INSTS["笙"].pitch_set])
    return [("黄", 100), (drawn, rng.randint(64, 127))]


@pytest.mark.parametrize("case", range(2), ids=["黄", "drawn"])
def test_sheng_partials_attack_and_release(tmp_path, case):
    lv, velocity = _cases()[case]
    where = f"seed {SEED}: note 笙 {lv} --velocity {velocity}"
    x, sr, hz = _note(tmp_path, "笙", lv, velocity)
    assert len(x) == int(1.5 * sr) + int(RELEASE_S * sr), where       # held 1.5 s, then released
    m = _measure(x, sr, hz)
    h = m["harmonics"]
    # the note's own harmonics (the fifth's partials fall on 3, 6, … of it): even 2 and 4, odd 5 and 7
    assert h[2] > -30 and h[4] > -30, (where, m)
    assert h[5] > -40 and h[7] > -40, (where, m)
    assert (h[2] + h[4]) / 2 > (h[5] + h[7]) / 2, (where, m)           # the even ones not suppressed
    assert -12 < h[1.5] < -3, (where, m)                              # the 和音's fifth, softer
    assert abs(1200 * np.log2(m["strongest_hz"] / hz)) < 5, (where, m)
    assert 30 <= m["attack_ms"] <= 120, (where, m)
    assert m["tail_db"] < -60, (where, m)


def test_he_sounds_an_octave_above_the_sheng(tmp_path):
    """Praat's pitch of the 和's 黄 is the 笙's 黄 an octave up (it has no fifth: one periodicity)."""
    import parselmouth
    x, sr, hz = _note(tmp_path, "和", "黄", 100, duration=1.0)
    assert hz == pytest.approx(2 * HZ0)
    pitch = parselmouth.Sound(x.astype(np.float64), sr).to_pitch(pitch_floor=200, pitch_ceiling=1500)
    f0 = pitch.selected_array["frequency"]
    assert abs(1200 * np.log2(np.median(f0[f0 > 0]) / (2 * HZ0))) < 5
    m = _measure(x, sr, hz)
    assert m["harmonics"][2] > -30 and m["harmonics"][3] > -30, m       # odd and even: one reed
    assert 30 <= m["attack_ms"] <= 120 and m["tail_db"] < -60, m


def test_a_sheet_giving_the_sheng_a_melody_has_it(tmp_path, default_cues, default_timeline):
    """The 大射 has no 笙: the default timeline leaves it out. A copy whose 鹿鸣 adds the 笙 and the
    和 sounds them on the tune, the 和 an octave above, as free reeds."""
    assert "笙" not in default_timeline.instruments and "和" not in default_timeline.instruments
    text = default_cues.read_text(encoding="utf-8")
    block = re.search(r'(?ms)^id = "luming"$.*?^melody = \[([^\]]*)\]', text)
    assert block, "cues/dashe.toml's luming cue has no melody"
    start, end = block.span(1)
    sheet = tmp_path / "with_sheng.toml"
    sheet.write_text(text[:start] + block.group(1) + ', "笙", "和"' + text[end:], encoding="utf-8")
    tl, _ = compile_path(sheet, ["luming"])
    sheng = [n for n in tl.notes if n.instrument == "笙"]
    he = [n for n in tl.notes if n.instrument == "和"]
    assert sheng and len(sheng) == len(he)
    assert tl.instruments["笙"]["family"] == tl.instruments["和"]["family"] == "free_reed"
    for a, b in zip(sheng, he):
        assert b.hz == pytest.approx(2 * a.hz) and a.time == b.time

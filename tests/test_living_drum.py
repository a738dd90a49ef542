"""The drum that lives (issue 29, item 2), measured from the files the renderer writes: the 建鼓 stems
of 貍首 from the 宾's seat (the session's ``lishou_render``, tests/conftest.py) and a dry stroke from
``yuexuan note``. Numpy and scipy measure; the travel times come from the TOML positions.

- strokes of one drum and velocity vary in level (fast-weighted maximum, SD 1–3 dB), louder ones are
  brighter (spectral centroid), successive strokes differ (maximum normalised
  cross-correlation of their first 300 ms, median ≤ 0.95);
- every attack begins at the timeline's time plus the travel time, ± 1 ms;
- the stem is ≥ 20 dB down before the next stroke 2 s later, and the dry stroke's T60 is the one its
  file cites (≤ 2.5 s);
- no DC: each stroke's first second, and the mix, ≤ −60 dB re their RMS.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib

import numpy as np
import pytest
import soundfile as sf
from cli_support import ROOT, run_cli
from scipy import signal

SPEED_OF_SOUND = 343.0
DRUMS = ("建鼓·东", "建鼓·西", "建鼓·北")
FAST_S = 0.125                 # a sound level meter's F weighting window


def _toml(path):
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _delay_s(drum: str) -> float:
    court = _toml(ROOT / "ceremony" / "courtyard.toml")
    seat = next(li["position_m"] for li in court["listener"] if li["name"] == "宾")
    return math.dist(seat, _toml(ROOT / "instruments" / f"{drum}.toml")["position_m"]) / SPEED_OF_SOUND


@pytest.fixture(scope="module")
def strokes(lishou_render, default_timeline):
    """{drum: (stem (n, 2), sample rate, [(arrival s, velocity), …])} of 貍首's 建鼓."""
    d = lishou_render()
    cue = default_timeline.cue("lishou")
    out = {}
    for drum in DRUMS:
        x, sr = sf.read(d / "stems" / f"{drum}.wav", dtype="float64")
        times = [(n.time - cue.start + _delay_s(drum), n.velocity) for n in default_timeline.notes
                 if n.cue == "lishou" and n.instrument == drum]
        assert len(times) > 50
        out[drum] = (x, sr, times)
    return out


def _fast_level_db(x: np.ndarray, sr: int) -> float:
    """The largest mean square over FAST_S (both channels' energy summed), dB."""
    w = int(FAST_S * sr)
    c = np.concatenate([[0.0], np.cumsum((x ** 2).sum(axis=1) if x.ndim > 1 else x ** 2)])
    return 10 * math.log10(float((c[w:] - c[:-w]).max()) / w)


def _centroid_hz(x: np.ndarray, sr: int) -> float:
    """Spectral centroid of ``x`` (Hann window, one FFT)."""
    mag = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float((np.fft.rfftfreq(len(x), 1 / sr) * mag).sum() / mag.sum())


@pytest.mark.parametrize("drum", DRUMS)
def test_strokes_vary_in_level_and_brightness_and_differ_from_the_last(strokes, drum):
    x, sr, times = strokes[drum]
    mono = x.mean(axis=1)
    level, bright, heads = [], [], []
    for t, _ in times:
        s = int(round(t * sr))
        head = mono[s:s + int(0.3 * sr)]
        heads.append(head)
        level.append(_fast_level_db(x[s:s + int(0.5 * sr)], sr))
        bright.append(_centroid_hz(head, sr))
    level, bright = np.array(level), np.array(bright)
    velocity = np.array([v for _, v in times])
    for v in np.unique(velocity):
        same = velocity == v
        if same.sum() >= 10:
            assert 1.0 <= level[same].std() <= 3.0, (v, level[same].std())
    # the louder strokes are the brighter, within a velocity (Spearman's rank correlation)
    for v in np.unique(velocity):
        same = velocity == v
        if same.sum() >= 10:
            rho = np.corrcoef(np.argsort(np.argsort(level[same])), np.argsort(np.argsort(bright[same])))[0, 1]
            assert rho > 0.3, (v, rho)
    corr = [np.abs(signal.correlate(a, b, method="fft")).max() / np.sqrt((a @ a) * (b @ b))
            for a, b in itertools.pairwise(heads)]
    assert np.median(corr) <= 0.95, np.median(corr)
    assert max(corr) < 0.999                # never one waveform twice running


@pytest.mark.parametrize("drum", DRUMS)
def test_attacks_begin_at_the_timeline_time_plus_travel(strokes, drum):
    """The first sample within 5 ms of the expected arrival that reaches 1 % of the stroke's peak
    (−40 dB) lies within ±1 ms of timeline time + distance / 343 m/s."""
    x, sr, times = strokes[drum]
    mono = np.abs(x).max(axis=1)
    errors = []
    for t, _ in times:
        a = int(round((t - 0.005) * sr))
        seg = mono[a:a + int(0.1 * sr)]
        first = int(np.argmax(seg >= 0.01 * seg.max()))
        errors.append((a + first) / sr - t)
    assert np.max(np.abs(errors)) <= 0.001, np.max(np.abs(errors))


@pytest.mark.parametrize("drum", DRUMS)
def test_stem_falls_20_db_before_the_next_stroke_and_has_no_dc(strokes, drum):
    x, sr, times = strokes[drum]
    gaps = 0
    for (t, _), (t_next, _) in itertools.pairwise(times):
        s = int(round(t * sr))
        peak = _fast_level_db(x[s:s + int(0.5 * sr)], sr)
        if t_next - t >= 1.9:
            before = x[int((t_next - 0.05) * sr):int(round(t_next * sr))]
            energy = float((before ** 2).sum(axis=1).mean())
            assert energy == 0 or 10 * math.log10(energy) <= peak - 20, (t, 10 * math.log10(energy) - peak)
            gaps += 1
        first = x[s:s + sr]
        for c in range(2):
            rms = math.sqrt(float((first[:, c] ** 2).mean()))
            assert abs(first[:, c].mean()) <= 1e-3 * rms, (t, c, first[:, c].mean() / rms)
    assert gaps > 50


def test_mix_has_no_dc(lishou_render):
    x, _ = sf.read(lishou_render() / "lishou.wav", dtype="float64")
    for c in range(2):
        assert abs(x[:, c].mean()) <= 1e-3 * math.sqrt(float((x[:, c] ** 2).mean()))


def test_dry_stroke_decays_as_its_cited_measurement(tmp_path):
    """``yuexuan note 建鼓·东``: T60 (Schroeder backward integration, a line through −5…−25 dB) within
    15 % of the figure the file cites for the measured barrel drum, and ≤ 2.5 s."""
    text = (ROOT / "instruments" / "建鼓·东.toml").read_text(encoding="utf-8")
    cited = float(re.search(r"Its \(0,1\) here: T60 ([\d.]+) s", text).group(1))
    assert cited <= 2.5 and "Taiko Drum" in text
    out = tmp_path / "gu.wav"
    r = run_cli("note", "建鼓·东", "黄", "-o", out, "--velocity", "100")
    assert r.returncode == 0, r.stderr
    x, sr = sf.read(out)
    e = x ** 2
    edc = np.cumsum(e[::-1])[::-1]
    db = 10 * np.log10(np.maximum(edc / edc[0], 1e-30))
    sel = np.flatnonzero((db <= -5) & (db >= -25))
    t60 = -60 / np.polyfit(sel / sr, db[sel], 1)[0]
    assert t60 == pytest.approx(cited, rel=0.15) and t60 <= 2.5

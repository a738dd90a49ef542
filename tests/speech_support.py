"""Measures of a voice with generic tools (Praat through parselmouth, scipy, librosa), for
tests/test_speech.py, tests/test_prosody.py and bench/bench_speech.py: the breath in a held vowel
(band levels, its modulation at F0), shimmer, formants, the F2 transition after a stop, and the
match of syllables against espeak-ng templates by MFCC and dynamic time warping."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import numpy as np
import parselmouth
import soundfile as sf
from parselmouth.praat import call
from scipy import signal

ESPEAK = shutil.which("espeak-ng")
ESPEAK_VOICE = "cmn-latn-pinyin"


def sound(x: np.ndarray, sr: int) -> parselmouth.Sound:
    return parselmouth.Sound(np.asarray(x, dtype=np.float64), sr)


def band_db(x: np.ndarray, sr: int, lo: float, hi: float) -> float:
    """Energy of ``x`` between ``lo`` and ``hi`` Hz, dB (Welch's PSD, 4096-point segments)."""
    f, p = signal.welch(x, sr, nperseg=4096)
    return float(10 * np.log10(p[(f >= lo) & (f < hi)].sum() + 1e-30))


def air_gap_db(x: np.ndarray, sr: int) -> float:
    """(1–3 kHz) − (5–8 kHz), dB: how far the breath and upper harmonics lie under the voice."""
    return band_db(x, sr, 1000, 3000) - band_db(x, sr, 5000, 8000)


def glottal_periods(x: np.ndarray, sr: int, floor: float = 60.0, ceiling: float = 500.0) -> np.ndarray:
    """Times (s) of the glottal pulses Praat finds (PointProcess, periodic cc)."""
    pp = call(sound(x, sr), "To PointProcess (periodic, cc)", floor, ceiling)
    return np.array([call(pp, "Get time from index", i + 1) for i in range(call(pp, "Get number of points"))])


def high_band_modulation_db(x: np.ndarray, sr: int, lo: float = 5000.0, hi: float = 8000.0) -> float:
    """How much the ``lo``–``hi`` Hz band's envelope swings within a glottal cycle, dB: the band's
    Hilbert envelope folded on Praat's glottal pulses (20 bins a period), max over min of the mean."""
    sos = signal.butter(6, (lo, hi), btype="bandpass", fs=sr, output="sos")
    env = np.abs(signal.hilbert(signal.sosfiltfilt(sos, x)))
    pulses = glottal_periods(x, sr)
    bins = np.zeros(20)
    for a, b in itertools.pairwise(pulses):
        i = np.arange(int(a * sr), int(b * sr))
        if len(i) < 20:
            continue
        bins += np.interp(np.linspace(0, len(i) - 1, 20), np.arange(len(i)), env[i])
    return float(20 * np.log10(bins.max() / max(bins.min(), 1e-30)))


def shimmer_jitter(x: np.ndarray, sr: int) -> tuple[float, float]:
    """Praat's local shimmer and local jitter (fractions) of ``x``."""
    s = sound(x, sr)
    pp = call(s, "To PointProcess (periodic, cc)", 60, 500)
    shimmer = call([s, pp], "Get shimmer (local)", 0, 0, 0.0001, 0.02, 1.3, 1.6)
    jitter = call(pp, "Get jitter (local)", 0, 0, 0.0001, 0.02, 1.3)
    return float(shimmer), float(jitter)


def formant_track(x: np.ndarray, sr: int, step_s: float = 0.005, max_hz: float = 5000.0,
                  n: float = 5.0) -> parselmouth.Formant:
    return call(sound(x, sr), "To Formant (burg)", step_s, n, max_hz, 0.025, 50)


def median_formant(x: np.ndarray, sr: int, which: int, t0: float, t1: float) -> float:
    """Median of formant ``which`` (1-based, Praat Burg, men's 5000 Hz ceiling) over [t0, t1) s."""
    fm = formant_track(x, sr)
    ts = np.arange(t0, t1, 0.005)
    v = np.array([call(fm, "Get value at time", which, t, "Hertz", "Linear") for t in ts])
    return float(np.nanmedian(v))


def voicing_onset_s(x: np.ndarray, sr: int, after_s: float = 0.0) -> float:
    """The first time after ``after_s`` from which Praat's pitch finds voicing for 30 ms on end."""
    p = sound(x, sr).to_pitch_ac(time_step=0.002, pitch_floor=60.0, pitch_ceiling=500.0)
    t = p.xs()
    v = p.selected_array["frequency"] > 0
    run = np.convolve(v.astype(int), np.ones(15, dtype=int), mode="full")[14:]   # 15 frames = 30 ms ahead
    ok = np.flatnonzero((t >= after_s) & (run == 15))
    return float(t[ok[0]]) if len(ok) else float("nan")


def f2_movement_hz(x: np.ndarray, sr: int, window_s: float = 0.06) -> tuple[float, float, float]:
    """(F2 at the voicing onset, F2 ``window_s`` later, their difference) Hz: the transition out
    of a consonant, Praat Burg formants every 2 ms, the median of the first and of the last 10 ms."""
    t0 = voicing_onset_s(x, sr)
    fm = formant_track(x, sr, step_s=0.002)

    def f2(a: float) -> float:
        return float(np.nanmedian([call(fm, "Get value at time", 2, t, "Hertz", "Linear")
                                   for t in np.arange(a, a + 0.010, 0.002)]))
    a, b = f2(t0), f2(t0 + window_s - 0.010)
    return a, b, b - a


def espeak(pinyin: str, out: Path) -> Path:
    """espeak-ng's ``cmn-latn-pinyin`` voice saying ``pinyin`` (tone numbers), written to ``out``."""
    assert ESPEAK, "espeak-ng is not installed (tests/system-deps.sh)"
    subprocess.run([ESPEAK, "-v", ESPEAK_VOICE, "-w", str(out), pinyin], check=True, timeout=30,
                   capture_output=True)
    return out


#: the syllables matched: 鹿 呦 鸣 食 苹 (鹿鸣's first line) and ten of the formulas, with the
#: pinyin espeak-ng says for each (the test's own, not the package's reading)
SYLLABLES = dict(zip("鹿呦鸣食苹射获鼓左奏间毋猎用纯",
                     ["lu4", "you1", "ming2", "shi2", "ping2", "she4", "huo4", "gu3", "zuo3", "zou4",
                      "jian4", "wu2", "lie4", "yong4", "chun2"], strict=True))


def mfcc(x: np.ndarray, sr: int) -> np.ndarray:
    """MFCC 1–12 (librosa: 16 kHz, 25 ms windows, 10 ms hops, 40 mel bands) of ``x`` trimmed of
    its silence (35 dB under its peak)."""
    import librosa
    y = librosa.resample(np.asarray(x, dtype=np.float32), orig_sr=sr, target_sr=16000)
    y, _ = librosa.effects.trim(y, top_db=35)
    return librosa.feature.mfcc(y=y, sr=16000, n_mfcc=13, n_fft=400, hop_length=160, n_mels=40)[1:]


def speaker_normalised(feats: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each coefficient less its mean over all of one speaker's syllables, over their SD: the
    speaker's (and the channel's) own colour taken out, as template matching across speakers does."""
    frames = np.concatenate(list(feats.values()), axis=1)
    mu, sd = frames.mean(axis=1, keepdims=True), frames.std(axis=1, keepdims=True)
    return {k: (v - mu) / sd for k, v in feats.items()}


def templates(folder: Path) -> dict[str, np.ndarray]:
    """espeak-ng's ``cmn-latn-pinyin`` saying each of :data:`SYLLABLES` (wav files in ``folder``),
    as speaker-normalised MFCCs."""
    feats = {}
    for ch, py in SYLLABLES.items():
        x, sr = read_wav(espeak(py, folder / f"{py}.wav"))
        feats[ch] = mfcc(x, sr)
    return speaker_normalised(feats)


def dtw_cost(a: np.ndarray, b: np.ndarray) -> float:
    """MFCC-DTW distance of two MFCC sequences (librosa's DTW, Euclidean, normalised by the path)."""
    import librosa
    d, path = librosa.sequence.dtw(X=a, Y=b, metric="euclidean")
    return float(d[-1, -1] / len(path))


def confusion(rendered: dict[str, np.ndarray], refs: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
    """Each rendered syllable matched to the nearest template (MFCC-DTW): (labels, matrix of
    counts, rows the syllable said, columns the template chosen)."""
    labels = list(refs)
    mat = np.zeros((len(labels), len(labels)), dtype=int)
    for name, feats in rendered.items():
        costs = [dtw_cost(feats, refs[t]) for t in labels]
        mat[labels.index(name), int(np.argmin(costs))] += 1
    return labels, mat


def said(mode: str, seed: int, singer: int = 0, sr: int = 48000) -> dict[str, np.ndarray]:
    """Each of :data:`SYLLABLES` rendered dry by the package: ``spoken`` by the 司射 as a call said
    alone (0.4 s, on its tone's contour), ``sung`` by one of the 歌's singers (``singer``) on 黄
    (172.5 Hz, 0.8 s); speaker-normalised MFCCs."""
    from yuexuan.audio.voice import takes
    from yuexuan.compiler import prosody
    from yuexuan.rite import instruments
    insts = instruments.load_all()
    feats = {}
    for ch, py in SYLLABLES.items():
        reading = takes.reading_of(py)
        if mode == "spoken":
            x = takes.take(insts["司射"].synth, reading, None, 90, 0.4, sr, seed, "司射",
                           f0_st=prosody.call(ch, 0.4))
        else:
            x = takes.take(insts["歌"].synth, reading, 172.5, 84, 0.8, sr, seed, "歌", singer)
        feats[ch] = mfcc(x, sr)
    return speaker_normalised(feats)


def matrix_markdown(labels: list[str], mat: np.ndarray) -> str:
    """A confusion matrix as a Markdown table (rows said, columns matched)."""
    head = "| said \\ matched | " + " | ".join(labels) + " |"
    rule = "|---" * (len(labels) + 1) + "|"
    rows = [f"| {a} | " + " | ".join(str(v) if v else "·" for v in row) + " |" for a, row in zip(labels, mat)]
    return "\n".join([head, rule, *rows])


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    x, sr = sf.read(path)
    return (x if x.ndim == 1 else x.mean(axis=1)), sr




def robust_formant(x: np.ndarray, sr: int, which: int, t0: float, t1: float) -> float:
    """Median of formant ``which`` over [t0, t1) s by Praat's robust LPC (Burg, then iteratively
    reweighted: less pulled toward the harmonics than plain Burg), men's 5000 Hz ceiling."""
    fm = call(sound(x, sr), "To Formant (robust)", 0.005, 5, 5000, 0.025, 50, 1.5, 5, 1e-6)
    return float(np.nanmedian([call(fm, "Get value at time", which, t, "Hertz", "Linear")
                               for t in np.arange(t0, t1, 0.005)]))

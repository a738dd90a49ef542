"""Synthesis of single notes, measured in the audio: pitch by spectral peak, the bells' two tones,
determinism; the ``yuexuan note`` command read back from its file; panning and loudness maths."""

from __future__ import annotations

import math

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from scipy import signal

from yuexuan.audio.engine import notecache
from yuexuan.audio.loudness import bs1770
from yuexuan.audio.room import space
from yuexuan.audio.synthesis import synth
from yuexuan.rite import instruments
from yuexuan.rite.tuning import parse_pitch

SR = 48000
HZ0 = 345.0          # 黄钟 of cues/dashe.toml
INSTS = instruments.load_all()


def _spectrum(x: np.ndarray, sr: int = SR, seconds: float = 1.0, pad: int = 8):
    """Magnitude spectrum of the first ``seconds`` (Hann window, zero-padded ×pad) and its freqs."""
    seg = np.zeros(int(seconds * sr))
    seg[:min(len(seg), len(x))] = x[:len(seg)]
    n = pad * len(seg)
    mag = np.abs(np.fft.rfft(seg * np.hanning(len(seg)), n))
    return mag, np.fft.rfftfreq(n, 1 / sr)


def _peak_hz(mag, freqs, lo=20.0, hi=None) -> float:
    """Frequency of the largest bin in [lo, hi], refined by parabolic interpolation on dB values."""
    band = (freqs >= lo) & (freqs <= (hi or freqs[-1]))
    idx = np.flatnonzero(band)
    k = idx[np.argmax(mag[band])]
    a, b, c = 20 * np.log10(mag[k - 1:k + 2] + 1e-30)
    shift = 0.5 * (a - c) / (a - 2 * b + c)
    return float(freqs[k] + shift * (freqs[1] - freqs[0]))


def _note(name: str, lv: str | None, velocity: int = 100, duration: float = 1.5, lyric=None):
    inst = INSTS[name]
    hz = parse_pitch(lv).hz(HZ0 * 2 ** inst.octave) if lv else None
    x = synth.note(inst.family, inst.synth, hz, velocity, duration, SR, seed=7, lyric=lyric)
    return x, hz


def _cents(a: float, b: float) -> float:
    return 1200 * math.log2(a / b)


# (a voice's pitch is its glottal period, not its strongest partial, which follows the formants:
# tests/test_voices.py measures it with pyin)
@pytest.mark.parametrize("name", ["笙钟", "颂钟", "鑮·东", "笙磬", "颂磬", "瑟", "簜"])
@pytest.mark.parametrize("lv", ["黄", "夷", "太清"])
def test_nominal_pitch_is_the_strongest_partial_of_the_first_second(name, lv):
    inst = INSTS[name]
    if parse_pitch(lv) not in inst.pitch_set:
        lv = inst.pitch_set[0].name
    x, hz = _note(name, lv, lyric="鸣" if inst.family == "voice" else None)
    mag, freqs = _spectrum(x)
    measured = _peak_hz(mag, freqs)
    assert abs(_cents(measured, hz)) < 3.0, (name, lv, measured, hz)


def test_yize_over_huangzhong_is_815_6_cents_not_800():
    """三分损益: 夷则 = 6561/4096 of 黄钟, 815.64 cents; equal temperament would give 800."""
    measured = {}
    for lv in ("黄", "夷"):
        x, _ = _note("笙钟", lv)
        measured[lv] = _peak_hz(*_spectrum(x))
    interval = _cents(measured["夷"], measured["黄"])
    assert abs(interval - 1200 * math.log2(6561 / 4096)) < 1.0
    assert interval > 810


@pytest.mark.parametrize("name,third_cents", [("笙钟", 315.6), ("颂钟", 386.3), ("鑮·东", 386.3)])
def test_bells_are_two_tone(name, third_cents):
    """Struck at the 正鼓, a bell also sounds its 侧鼓 tone a minor (6:5) or major (5:4) third up:
    the second-strongest peak of the low register is that third, well above the noise."""
    x, hz = _note(name, "黄")
    mag, freqs = _spectrum(x)
    f1 = _peak_hz(mag, freqs, 0.5 * hz, 1.1 * hz)
    f2 = _peak_hz(mag, freqs, 1.12 * hz, 1.4 * hz)
    assert abs(_cents(f1, hz)) < 2
    assert abs(_cents(f2, f1) - third_cents) < 3, (f1, f2)
    level = lambda f: mag[np.argmin(np.abs(freqs - f))]          # noqa: E731
    assert 20 * np.log10(level(f2) / level(f1)) > -12            # clearly heard
    # the 正鼓 tone leads
    assert level(f1) > level(f2)


def test_bell_partials_come_in_beating_pairs():
    """A bell's doublet (``doublets``: two modes a few per cent apart, Rossing et al. 1988) sounds as
    a beating pair: the envelope of the band holding both beats at their difference frequency."""
    p = INSTS["笙钟"].synth
    x, hz = _note("笙钟", "黄")
    lo, hi = p["doublets"][0]
    assert 0.03 <= hi / lo - 1 <= 0.10                            # a few per cent apart
    sos = signal.butter(4, [hz * lo * 0.99, hz * hi * 1.01], btype="band", fs=SR, output="sos")
    band = signal.sosfiltfilt(sos, x.astype(np.float64))
    env = np.abs(signal.hilbert(band))[SR // 20:SR]
    env = env / np.exp(np.polyval(np.polyfit(np.arange(len(env)), np.log(env + 1e-12), 1),
                                  np.arange(len(env))))
    spec = np.abs(np.fft.rfft(env - env.mean(), 8 * len(env)))
    f = np.fft.rfftfreq(8 * len(env), 1 / SR)
    beat = f[f > 1][np.argmax(spec[f > 1])]
    assert abs(beat - hz * (hi - lo)) < 1.0, (beat, hz * (hi - lo))


def test_higher_bell_partials_decay_faster():
    x, hz = _note("颂钟", "黄")
    p = INSTS["颂钟"].synth

    def band_level(f, t0, t1):
        mag, freqs = _spectrum(x[int(t0 * SR):], seconds=t1 - t0)
        return mag[np.argmin(np.abs(freqs - f))]

    low = band_level(hz, 0, 0.5) / band_level(hz, 2, 2.5)
    high = band_level(hz * p["partials"][3], 0, 0.5) / band_level(hz * p["partials"][3], 2, 2.5)
    assert high > 3 * low


def test_drum_sounds_at_its_membrane_fundamental_with_a_noise_attack():
    p = INSTS["建鼓·东"].synth
    x, _ = _note("建鼓·东", None, velocity=120)
    f = _peak_hz(*_spectrum(x), lo=30, hi=400)
    assert abs(_cents(f, p["fundamental_hz"])) < 30            # glide only at the very start
    mag, freqs = _spectrum(x, seconds=0.02, pad=32)
    hf = mag[freqs > 1000].sum() / mag.sum()                     # the stick's noise in the attack
    mag2, freqs2 = _spectrum(x[int(0.3 * SR):], seconds=0.02, pad=32)
    assert hf > 5 * mag2[freqs2 > 1000].sum() / mag2.sum()


def test_tao_rattles():
    """The 鼗: several pellet strokes at about ``rattle_rate_hz``."""
    import librosa
    p = INSTS["鼗"].synth
    x, _ = _note("鼗", None)
    onsets = librosa.onset.onset_detect(y=x.astype(np.float32), sr=SR, units="time", hop_length=256,
                                        backtrack=False)
    assert len(onsets) >= p["rattle_strokes"] - 2
    assert abs(np.median(np.diff(onsets)) - 1 / p["rattle_rate_hz"]) < 0.03


def test_voice_follows_the_syllable_vowel():
    """Different vowels have different spectral envelopes (formants); the same syllable repeats."""
    a, _ = _note("歌", "黄", lyric="嘉")      # a
    i, _ = _note("歌", "黄", lyric="鸣")      # i
    ma, f = _spectrum(a)
    mi, _ = _spectrum(i)
    band = lambda m, lo, hi: m[(f > lo) & (f < hi)].sum()        # noqa: E731
    # /i/ has F2 near 2.3 kHz and a low F1; /a/ has F1 near 800 Hz
    assert band(mi, 2000, 2600) / band(mi, 600, 1000) > 2 * band(ma, 2000, 2600) / band(ma, 600, 1000)


def test_same_arguments_same_samples_and_seed_matters():
    inst = INSTS["笙磬"]
    a = synth.note(inst.family, inst.synth, 400.0, 90, 1.0, SR, seed=1)
    b = synth.note(inst.family, inst.synth, 400.0, 90, 1.0, SR, seed=1)
    c = synth.note(inst.family, inst.synth, 400.0, 90, 1.0, SR, seed=2)
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()


def test_length_rule_matches_the_rendered_note():
    for name, inst in INSTS.items():
        hz = HZ0 * 2 ** inst.octave if inst.pitched else None
        x = synth.note(inst.family, inst.synth, hz, 100, 0.7, SR, seed=3)
        assert len(x) == synth.length(inst.family, inst.synth, 0.7, SR, hz), name
        assert np.isfinite(x).all() and np.abs(x).max() <= 1.0 + 1e-6


def test_note_cache_rebuilds_an_evicted_entry_identically():
    calls = []

    def make(key):
        calls.append(key)
        inst = INSTS[key.instrument]
        return notecache.note_from_key(key, inst.family, inst.synth, SR)

    cache = notecache.NoteCache(make, max_bytes=1)
    k1 = notecache.note_key("笙磬", "stone", 345.0, 100, 1.0, None)
    k2 = notecache.note_key("笙磬", "stone", 460.0, 100, 1.0, None)
    first = cache.get(k1).copy()
    cache.get(k2)
    again = cache.get(k1)
    assert calls == [k1, k2, k1]
    assert first.tobytes() == again.tobytes()


def test_note_keys_share_a_waveform_only_when_the_notes_sound_alike():
    """Velocities in one bucket and held lengths within 50 ms share a key (and so a waveform);
    another syllable's reading, another held length, another pitch or another singer does not;
    a sung syllable's key ignores its tone (the note gives the pitch). A key's waveform is the
    note synthesised at the key's bucketed velocity and length, seeded by the key."""
    key = notecache.note_key
    assert key("歌", "voice", 345.0, 100, 1.01, "鸣") == key("歌", "voice", 345.0, 110, 0.99, "鸣")
    assert key("歌", "voice", 345.0, 100, 1.0, "鸣") != key("歌", "voice", 345.0, 100, 1.0, "民")   # m-ing, m-in
    assert key("歌", "voice", 345.0, 100, 1.0, "以") == key("歌", "voice", 345.0, 100, 1.0, "已")   # yi3 both
    assert key("歌", "voice", 345.0, 100, 1.0, "衣") == key("歌", "voice", 345.0, 100, 1.0, "以")   # sung: tone aside
    assert key("大射正", "voice", None, 90, 0.7, "衣") != key("大射正", "voice", None, 90, 0.7, "以")  # spoken
    assert key("歌", "voice", 345.0, 100, 1.0, "鸣") != key("歌", "voice", 345.0, 100, 1.1, "鸣")
    assert key("歌", "voice", 345.0, 100, 1.0, "鸣", singer=0) != key("歌", "voice", 345.0, 100, 1.0, "鸣", singer=1)
    assert key("瑟", "string", 345.0, 100, 1.0, None) == key("瑟", "string", 345.0, 100, 3.0, None)
    assert key("瑟", "string", 345.0, 100, 1.0, None) != key("瑟", "string", 350.0, 100, 1.0, None)
    k = key("歌", "voice", 345.0, 100, 1.01, "鸣", singer=2)
    assert (k.instrument, k.hz, k.velocity, k.duration_s, k.syllable, k.singer) == \
        ("歌", 345.0, 112, 1.0, "m|ing|0", 2)
    inst = INSTS["歌"]
    direct = synth.note(inst.family, inst.synth, 345.0, 112, 1.0, SR, seed=k.seed(), lyric="鸣",
                        singer=2, name="歌")
    assert notecache.note_from_key(k, inst.family, inst.synth, SR).tobytes() == direct.tobytes()


# --- the note command ------------------------------------------------------------------------

def test_note_command_writes_the_requested_pitch(cli, tmp_path):
    out = tmp_path / "夷.wav"
    r = cli("note", "颂磬", "夷", "-o", out, "--octave", "1", "--velocity", "90")
    assert r.returncode == 0, r.stderr
    x, sr = sf.read(out)
    assert sr == SR and x.ndim == 1
    expected = parse_pitch("夷清").hz(HZ0)
    assert abs(_cents(_peak_hz(*_spectrum(x)), expected)) < 3
    assert np.abs(x).max() < 1.0


@pytest.mark.parametrize("args,words", [
    (["无此器", "黄"], "unknown instrument"),
    (["笙钟", "甲"], "unknown 律"),
    (["笙钟", "黄", "--velocity", "0"], "velocity"),
])
def test_note_command_user_errors(cli, tmp_path, args, words):
    r = cli("note", *args, "-o", tmp_path / "x.wav")
    assert r.returncode == 2
    assert words in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "x.wav").exists()


def test_note_command_rejects_other_file_types(cli, tmp_path):
    r = cli("note", "笙钟", "黄", "-o", tmp_path / "x.mp3")
    assert r.returncode == 2 and ".wav or .flac" in r.stderr


# --- space -----------------------------------------------------------------------------------

def test_panning_is_constant_power_and_sides_follow_the_facing():
    seats = space.listeners()
    bin_ = seats["宾"]                 # faces south: the east 县 is on the left
    east = INSTS["笙钟"].position_m
    west = INSTS["颂钟"].position_m
    for pos in (east, west):
        gl, gr = space.pan_gains(space.azimuth_deg(bin_, pos))
        assert abs(gl * gl + gr * gr - 1) < 1e-12
    gl, gr = space.pan_gains(space.azimuth_deg(bin_, east))
    assert gl > gr
    gl, gr = space.pan_gains(space.azimuth_deg(bin_, west))
    assert gr > gl
    gong = seats["公"]                 # faces west: the west 县 is ahead, the east 县 behind
    assert abs(space.azimuth_deg(gong, (-50.0, gong.position_m[1], 0))) < 1e-9


def test_distance_sets_gain_and_delay():
    seat = space.listeners()["宾"]
    near = space.placement(seat, INSTS["建鼓·东"].position_m, SR, "a")
    far_m = (0.0, -60.0, 1.5)           # a caller far down the 侯道 (the 获者 stand at their 乏)
    far = space.placement(seat, far_m, SR, "b")
    d_near = math.dist(seat.position_m, INSTS["建鼓·东"].position_m)
    d_far = math.dist(seat.position_m, far_m)
    assert near.delay_samples == round(d_near / 343.0 * SR)
    assert far.delay_samples == round(d_far / 343.0 * SR)
    direct = lambda p: math.hypot(*p.direct)     # noqa: E731
    assert direct(near) / direct(far) == pytest.approx(d_far / d_near, rel=1e-6)
    for p in (near, far):              # the impulse response starts with the direct sound
        assert tuple(space.impulse_response(p, SR)[0]) == pytest.approx(p.direct, rel=1e-3)


# --- loudness --------------------------------------------------------------------------------

def test_loudness_matches_pyloudnorm_and_streams():
    rng = np.random.default_rng(0)
    t = np.arange(SR * 12) / SR
    x = np.stack([0.3 * np.sin(2 * np.pi * 440 * t) * (t > 2), 0.05 * rng.standard_normal(len(t))], 1)
    ref = pyloudnorm.Meter(SR).integrated_loudness(x)
    whole = bs1770.integrated_loudness(x, SR)
    m = bs1770.LoudnessMeter(SR)
    for i in range(0, len(x), 7777):
        m.feed(x[i:i + 7777])
    assert abs(whole - ref) < 0.1
    assert abs(m.integrated() - whole) < 1e-6


def test_true_peak_sees_between_the_samples():
    t = np.arange(SR) / SR
    x = np.sin(2 * np.pi * SR / 4 * t + np.pi / 4)[:, None] * np.ones(2)     # samples at ±0.707
    assert 20 * np.log10(np.abs(x).max()) == pytest.approx(-3.01, abs=0.01)
    assert bs1770.true_peak_dbtp(x) == pytest.approx(0.0, abs=0.2)
    ref = np.abs(signal.resample_poly(x, 4, 1, axis=0)).max()
    assert bs1770.true_peak_dbtp(x) == pytest.approx(20 * np.log10(ref), abs=0.2)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=30000), min_size=1, max_size=12),
       seed=st.integers(min_value=0, max_value=2 ** 16))
def test_meters_do_not_depend_on_how_the_stream_is_cut(cuts, seed):
    """Streaming: any split into blocks gives the loudness and true peak of the whole signal."""
    rng = np.random.default_rng(seed)
    n = SR * 3
    x = (rng.standard_normal((n, 2)) * np.linspace(0.01, 0.3, n)[:, None]).astype(np.float32)
    x[SR // 2:SR] = 0.0                                   # a silent stretch mid-stream
    whole_l = bs1770.integrated_loudness(x, SR)
    whole_tp = bs1770.true_peak_dbtp(x)
    meter, tp = bs1770.LoudnessMeter(SR), bs1770.TruePeakMeter(exact=True)
    pos = 0
    for c in cuts + [n]:
        meter.feed(x[pos:pos + c])
        tp.feed(x[pos:pos + c])
        pos += c
        if pos >= n:
            break
    tp.flush()
    assert meter.integrated() == pytest.approx(whole_l, abs=1e-4)
    assert tp.dbtp() == pytest.approx(whole_tp, abs=1e-4)


def test_true_peak_envelopes_of_spans_are_the_whole_signals():
    """The limiter's envelopes, its spans gathered into one product, against the envelope of the
    whole signal (each sample's own magnitude and the 4x oversampled values either side of it,
    zeros beyond), for signals and spans drawn afresh (seed printed)."""
    seed = int(np.random.default_rng().integers(2 ** 32))
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(40, 5000))
        x = (rng.standard_normal((n, 2)) * rng.uniform(0.01, 1.0)).astype(np.float32)
        pad = np.zeros((bs1770.TAPS_PER_PHASE, 2), np.float32)
        # v[i]: between x[i − 1] and x[i]
        v = bs1770.oversampled_peaks(np.concatenate([pad, x, pad]))[bs1770.TAPS_PER_PHASE // 2:]
        whole = np.maximum(np.maximum(v[:n], v[1:n + 1]), np.abs(x).max(axis=1))
        cuts = np.unique(rng.integers(0, n + 1, 2 * int(rng.integers(1, 6))))
        spans = [(int(a), int(b)) for a, b in zip(cuts[::2], cuts[1::2]) if b > a]
        got = bs1770.true_peak_envelopes(x, bs1770.abs_max_channels(x), spans)
        for (lo, hi), env in zip(spans, got):
            np.testing.assert_allclose(env, whole[lo:hi], rtol=1e-6, atol=1e-7, err_msg=f"seed {seed}")

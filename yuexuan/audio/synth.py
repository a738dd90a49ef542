"""Synthesis of one note by instrument family, in numpy.

Every function here is pure: :func:`note` depends only on the family, the instrument's ``[synth]``
table, the frequency (Hz), the velocity, the duration (s), the sample rate and the noise seed, and
returns a new array. Nothing is cached here; the renderer's cache of waveforms (filled on worker
threads) is :mod:`yuexuan.audio.notecache`.

Families (``instruments/*.toml`` ``family``):

- ``bell``   two-tone Zhou bell: the 正鼓 tone at the nominal pitch and the 侧鼓 tone
  ``second_tone_ratio`` above it; every partial sounds as a close pair (``pair_split``, a
  fraction: 0.04 = 4 % apart) so that it beats; exponential decays, shorter for higher partials.
- ``stone``  磬: inharmonic modes (``partials``) with a bright noise click at the attack.
- ``drum``   membrane modes (``modes`` × ``fundamental_hz``), a noise transient, a downward pitch
  glide of up to ``glide_cents`` on strong strokes; ``rattle_strokes`` makes the 鼗's pellet rattle.
- ``string`` 瑟: modal plucked string (harmonics with slight stiffness, higher ones decaying faster,
  pluck-position spectrum, body resonances ``body_hz``).
- ``pipe``   簜: harmonics (``harmonics``), breath noise, vibrato.
- ``voice``  歌 and the calls: formant synthesis of a sung vowel, chosen from the syllable.

A pitched note's nominal frequency is always its strongest partial over the first second. Noise
comes from ``seed`` (derive it from the note's identity: :func:`seed_of`). Output: float32 mono,
peak about 1 at velocity 127.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
from scipy.signal import lfilter

#: the longest a struck body rings, s (its tail is faded out over the last 10 %).
RING_CAP_S = {"bell": 9.0, "stone": 5.0, "drum": 3.0, "string": 6.0}
#: a mode is computed until it has decayed by this many time constants (−50 dB).
DECAY_SPAN = 5.75
RELEASE_S = 0.12          # release of sustained notes (pipe, voice), s
SUSTAINED = ("pipe", "voice")   # families held for the note's duration; the others ring out

#: formants (Hz) and bandwidths (Hz) of sung vowels, a low male voice.
VOWELS = {
    "a": ((800, 80), (1150, 90), (2800, 120)),
    "o": ((450, 70), (800, 80), (2830, 100)),
    "e": ((500, 70), (1100, 90), (2500, 110)),
    "i": ((270, 60), (2290, 100), (3010, 120)),
    "u": ((300, 60), (870, 80), (2240, 100)),
}
#: vowels of syllables that the rite calls or sings often; any other syllable gets a vowel chosen
#: from its code point (no pronunciation dictionary is shipped).
SYLLABLE_VOWEL = {"诺": "o", "获": "o", "呦": "o", "鹿": "u", "鸣": "i", "我": "o", "有": "o",
                  "嘉": "a", "宾": "i", "鼓": "u", "瑟": "e", "吹": "u", "笙": "e", "之": "i",
                  "食": "i", "野": "e", "苹": "i", "人": "e", "好": "a", "示": "i", "周": "o",
                  "行": "a", "曾": "e", "孙": "u", "侯": "o", "氏": "i", "以": "i", "燕": "a",
                  "射": "e", "君": "u", "子": "i", "大": "a", "夫": "u", "乐": "e", "琴": "i"}


def vowel_of(syllable: str | None) -> str:
    """The sung vowel (a key of :data:`VOWELS`) for a syllable; ``a`` when there are no words."""
    if not syllable:
        return "a"
    ch = syllable[0]
    return SYLLABLE_VOWEL.get(ch) or "aoeiu"[ord(ch) % 5]


def seed_of(*identity) -> int:
    """A 32-bit noise seed from a note's identity (instrument, Hz, velocity bucket, …)."""
    return zlib.crc32(repr(identity).encode("utf-8"))


def velocity_gain(velocity: int) -> float:
    """Amplitude for a MIDI velocity (1..127): 127 → 1, 64 → about −10 dB."""
    return (max(1, min(127, int(velocity))) / 127.0) ** 1.6


# ---------------------------------------------------------------------------------------------
# building blocks


def _decaying_sines(out: np.ndarray, start: int, freqs, amps, taus, sample_rate: int,
                    phases=None) -> None:
    """Add Σ amp·e^(−t/τ)·sin(2πft + φ) into ``out[start:]``, each mode only while it lasts.

    Uses a complex power series built by doubling (≈ 2 flops a sample), float64 ratios cast to
    complex64: frequency error far below a cent.
    """
    n_out = len(out) - start
    nyq = 0.45 * sample_rate
    work = None
    for k, (f, a, tau) in enumerate(zip(freqs, amps, taus)):
        if f <= 0 or f >= nyq or a == 0 or tau <= 0:
            continue
        n = min(n_out, int(math.ceil(DECAY_SPAN * tau * sample_rate)))
        if n <= 0:
            continue
        if work is None or len(work) < n:
            work = np.empty(n_out, dtype=np.complex64)
        w = work[:n]
        z = complex(np.exp(complex(-1.0 / (tau * sample_rate), 2 * math.pi * f / sample_rate)))
        ph = 0.0 if phases is None else phases[k]
        w[0] = a * complex(math.cos(ph), math.sin(ph))
        filled = 1
        while filled < n:
            m = min(filled, n - filled)
            np.multiply(w[:m], np.complex64(z ** filled), out=w[filled:filled + m])
            filled += m
        out[start:start + n] += w.imag


def _noise(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal(n).astype(np.float32)


def _onepole_lowpass(x: np.ndarray, cutoff_hz: float, sample_rate: int) -> np.ndarray:
    a = math.exp(-2 * math.pi * min(cutoff_hz, 0.49 * sample_rate) / sample_rate)
    return lfilter([1 - a], [1, -a], x).astype(np.float32)


def _burst(rng, n_total: int, tau_s: float, sample_rate: int, cutoff_hz: float | None = None,
           highpass: bool = False) -> np.ndarray:
    """Exponentially decaying noise burst (a strike), length ≤ ``n_total``."""
    n = min(n_total, int(DECAY_SPAN * tau_s * sample_rate) + 1)
    x = _noise(rng, n)
    if cutoff_hz:
        low = _onepole_lowpass(x, cutoff_hz, sample_rate)
        x = x - low if highpass else low
    env = np.exp(-np.arange(n, dtype=np.float32) / np.float32(tau_s * sample_rate))
    return x * env


def _fade_tail(x: np.ndarray, fraction: float = 0.1) -> np.ndarray:
    n = max(1, int(len(x) * fraction))
    x[-n:] *= np.linspace(1.0, 0.0, n, dtype=np.float32)
    return x


def _ring_samples(family: str, taus, sample_rate: int) -> int:
    return int(min(RING_CAP_S[family], DECAY_SPAN * max(taus)) * sample_rate)


def _normalise(x: np.ndarray, level: float) -> np.ndarray:
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    if peak > 0:
        x *= np.float32(level / peak)
    return x


# ---------------------------------------------------------------------------------------------
# families


def bell(p: dict, hz: float, velocity: int, sample_rate: int, seed: int) -> np.ndarray:
    """Two-tone bell struck at the 正鼓: nominal tone leads, 侧鼓 tone ``second_tone_ratio`` above."""
    partials = list(p.get("partials", [1.0, 2.42, 2.92, 4.15, 5.4]))
    split = list(p.get("pair_split", [0.05] * len(partials)))
    amps = list(p.get("amplitudes", [1.0] + [0.3] * (len(partials) - 1)))
    taus = list(p.get("decay_s", [3.0] * len(partials)))
    ratio = float(p.get("second_tone_ratio", 1.2))
    g2 = float(p.get("second_tone_gain", 0.5))
    pair_gain = float(p.get("pair_gain", 0.5))
    bright = 0.55 + 0.45 * velocity / 127.0
    n = _ring_samples("bell", taus, sample_rate)
    out = np.zeros(n, dtype=np.float32)
    freqs, a_, t_ = [], [], []
    for tone, tone_gain, tone_decay in ((1.0, 1.0, 1.0), (ratio, g2, 0.8)):
        for k, (m, s, a, tau) in enumerate(zip(partials, split, amps, taus)):
            a = a * tone_gain * (bright ** k)
            freqs += [hz * tone * m, hz * tone * m * (1 + s)]
            a_ += [a, a * pair_gain]
            t_ += [tau * tone_decay, tau * tone_decay * 0.85]
    _decaying_sines(out, 0, freqs, a_, t_, sample_rate)
    rng = np.random.default_rng(seed)
    thump = _burst(rng, n, 0.004, sample_rate, cutoff_hz=2.5 * hz)
    out[:len(thump)] += 0.25 * bright * thump
    return _normalise(_fade_tail(out), 1.0)


def stone(p: dict, hz: float, velocity: int, sample_rate: int, seed: int) -> np.ndarray:
    """磬: inharmonic modes, bright attack click, shorter decay."""
    partials = list(p.get("partials", [1.0, 2.76, 5.4, 8.93]))
    amps = list(p.get("amplitudes", [1.0, 0.5, 0.25, 0.12]))
    taus = list(p.get("decay_s", [1.6, 0.7, 0.35, 0.2]))
    bright = 0.6 + 0.4 * velocity / 127.0
    n = _ring_samples("stone", taus, sample_rate)
    out = np.zeros(n, dtype=np.float32)
    _decaying_sines(out, 0, [hz * m for m in partials], [a * bright ** k for k, a in enumerate(amps)],
                    taus, sample_rate)
    rng = np.random.default_rng(seed)
    click = _burst(rng, n, 0.003, sample_rate, cutoff_hz=3000.0, highpass=True)
    out[:len(click)] += float(p.get("attack_noise", 0.15)) * 2.0 * bright * click
    return _normalise(_fade_tail(out), 1.0)


def _drum_stroke(p: dict, velocity: int, sample_rate: int, rng, n: int) -> np.ndarray:
    f0 = float(p.get("fundamental_hz", 100.0))
    modes = list(p.get("modes", [1.0, 1.59, 2.14, 2.3]))
    amps = list(p.get("amplitudes", [1.0] * len(modes)))
    taus = list(p.get("decay_s", [0.5] * len(modes)))
    v = velocity / 127.0
    glide = float(p.get("glide_cents", 0.0)) * v * v        # strong strokes glide most
    g = 2.0 ** (glide / 1200.0) - 1.0
    tau_g = 0.04
    out = np.zeros(n, dtype=np.float32)
    n_g = min(n, int(5 * tau_g * sample_rate)) if g > 0 else 0
    t = np.arange(n_g, dtype=np.float64) / sample_rate
    freqs, a_, t_, ph = [], [], [], []
    for m, a, tau in zip(modes, amps, taus):
        f = f0 * m
        a = a * (0.5 + 0.5 * v) ** (m - 1)                  # harder strokes are brighter
        if f >= 0.45 * sample_rate:
            continue
        if n_g:
            phase = 2 * np.pi * f * (t + g * tau_g * (1 - np.exp(-t / tau_g)))
            out[:n_g] += (a * np.exp(-t / tau) * np.sin(phase)).astype(np.float32)
            end_phase = 2 * math.pi * f * (n_g / sample_rate + g * tau_g * (1 - math.exp(-5)))
            a = a * math.exp(-n_g / sample_rate / tau)
        else:
            end_phase = 0.0
        freqs.append(f)
        a_.append(a)
        t_.append(tau)
        ph.append(end_phase)
    _decaying_sines(out, n_g, freqs, a_, t_, sample_rate, ph)
    hit = _burst(rng, n, 0.012, sample_rate, cutoff_hz=1200.0 + 3000.0 * v)
    out[:len(hit)] += float(p.get("noise", 0.25)) * 2.5 * v * hit
    return out


def drum(p: dict, hz: float | None, velocity: int, sample_rate: int, seed: int) -> np.ndarray:
    """Membrane drum stroke; with ``rattle_strokes`` the 鼗's pellets strike both heads in turn."""
    rng = np.random.default_rng(seed)
    taus = list(p.get("decay_s", [0.5]))
    strokes = int(p.get("rattle_strokes", 1))
    rate = float(p.get("rattle_rate_hz", 12.0))
    one = _ring_samples("drum", taus, sample_rate)
    if strokes <= 1:
        return _normalise(_fade_tail(_drum_stroke(p, velocity, sample_rate, rng, one)), 1.0)
    span = int(strokes / rate * sample_rate) + one
    out = np.zeros(span, dtype=np.float32)
    for i in range(strokes):
        jitter = 1.0 + 0.15 * (rng.random() - 0.5)
        start = int(i / rate * jitter * sample_rate)
        vel = max(1, int(velocity * (0.85 ** i)))
        s = _drum_stroke(p, vel, sample_rate, rng, one)
        out[start:start + len(s)] += s[:span - start]
    return _normalise(_fade_tail(out), 1.0)


def string(p: dict, hz: float, velocity: int, sample_rate: int, seed: int) -> np.ndarray:
    """瑟: modal plucked string (harmonics, stiffness, faster decay for higher harmonics)."""
    tau1 = float(p.get("decay_s", 2.5))
    bright = float(p.get("brightness", 0.6)) * (0.6 + 0.4 * velocity / 127.0)
    body = list(p.get("body_hz", []))
    pluck = 0.22
    stiff = 1.5e-4
    k = np.arange(1, 41)
    fk = k * hz * np.sqrt(1 + stiff * k * k) / math.sqrt(1 + stiff)
    keep = fk < min(0.45 * sample_rate, 9000.0)
    k, fk = k[keep], fk[keep]
    amps = np.abs(np.sin(k * math.pi * pluck)) / k ** (2.0 - bright)
    for b in body:                                         # body resonances lift nearby harmonics
        amps = amps * (1 + 0.6 / (1 + ((fk - b) / (0.25 * b)) ** 2))
    amps = np.minimum(amps, 0.9 * amps[0])
    amps[0] = amps[0] / 0.9
    taus = tau1 / (1 + 0.12 * (k - 1) + 0.002 * (k - 1) ** 2)
    n = _ring_samples("string", [tau1], sample_rate)
    out = np.zeros(n, dtype=np.float32)
    _decaying_sines(out, 0, fk, amps, taus, sample_rate)
    rng = np.random.default_rng(seed)
    pick = _burst(rng, n, 0.002, sample_rate, cutoff_hz=4000.0)
    out[:len(pick)] += 0.1 * amps[0] * pick
    return _normalise(_fade_tail(out), 1.0)


def _wavetable(harm_amps, size: int = 4096) -> np.ndarray:
    """One period from harmonic amplitudes (sine phase), with a wrap-around sample."""
    t = np.arange(size) / size
    table = np.zeros(size + 1)
    for h, a in enumerate(harm_amps, start=1):
        if a:
            table[:size] += a * np.sin(2 * np.pi * h * t)
    table[size] = table[0]
    return table.astype(np.float32)


def _sustained(table: np.ndarray, hz: float, n: int, sample_rate: int, vib_cents: float,
               vib_hz: float, vib_phase: float) -> np.ndarray:
    """Read a wavetable at ``hz`` with vibrato (depth ``vib_cents``, rate ``vib_hz``)."""
    t = np.arange(n, dtype=np.float64) / sample_rate
    d = vib_cents * math.log(2) / 1200.0
    cycles = hz * t
    if d and vib_hz:
        cycles += hz * d * (np.cos(vib_phase) - np.cos(2 * np.pi * vib_hz * t + vib_phase)) \
            / (2 * np.pi * vib_hz)
    size = len(table) - 1
    pos = (cycles % 1.0) * size
    i = pos.astype(np.int64)
    frac = (pos - i).astype(np.float32)
    return table[i] + (table[i + 1] - table[i]) * frac


def _envelope(n: int, n_on: int, attack_s: float, sample_rate: int) -> np.ndarray:
    env = np.ones(n, dtype=np.float32)
    na = max(1, min(n_on, int(attack_s * sample_rate)))
    env[:na] = np.linspace(0, 1, na, dtype=np.float32) ** 2
    nr = n - n_on
    if nr > 0:
        env[n_on:] = np.linspace(1, 0, nr, dtype=np.float32) ** 2
    return env


def pipe(p: dict, hz: float, velocity: int, duration_s: float, sample_rate: int,
         seed: int) -> np.ndarray:
    """簜: harmonics plus band-limited breath noise, soft attack, light vibrato."""
    harm = list(p.get("harmonics", [1.0, 0.35, 0.5, 0.12, 0.15]))
    harm = [a for h, a in enumerate(harm, start=1) if h * hz < 0.45 * sample_rate]
    n_on = max(1, int(duration_s * sample_rate))
    n = n_on + int(RELEASE_S * sample_rate)
    rng = np.random.default_rng(seed)
    tone = _sustained(_wavetable(harm), hz, n, sample_rate, float(p.get("vibrato_cents", 6.0)),
                      float(p.get("vibrato_hz", 4.5)), rng.random() * 2 * math.pi)
    breath = _onepole_lowpass(_noise(rng, n), 2.5 * hz, sample_rate)
    breath -= _onepole_lowpass(breath, 0.7 * hz, sample_rate)
    nb = float(p.get("breath_noise", 0.12)) * (0.7 + 0.6 * velocity / 127.0)
    out = tone + nb * 3.0 * breath
    out *= _envelope(n, n_on, float(p.get("attack_s", 0.06)), sample_rate)
    return _normalise(out, 1.0)


def voice(p: dict, hz: float, velocity: int, duration_s: float, sample_rate: int, seed: int,
          vowel: str = "a", consonant: bool = False) -> np.ndarray:
    """Sung vowel by formant synthesis: a glottal harmonic source shaped by the vowel's formants.

    The fundamental is kept the strongest harmonic (the nominal pitch leads).
    """
    formants = VOWELS.get(vowel, VOWELS["a"])
    kmax = int(min(0.45 * sample_rate, 5000.0) / hz)
    h = np.arange(1, max(2, kmax + 1))
    f = h * hz
    env = np.zeros(len(h))
    for i, (fc, bw) in enumerate(formants):
        env += (0.7 ** i) / np.sqrt((1 - (f / fc) ** 2) ** 2 + (f * bw / fc ** 2) ** 2)
    amps = env / h                                        # −6 dB/octave source incl. radiation
    amps = amps / amps.max()
    amps[1:] = np.minimum(amps[1:], 0.9 * max(amps[0], 0.05))
    amps[0] = max(amps[0], amps[1:].max(initial=0) / 0.9)
    n_on = max(1, int(duration_s * sample_rate))
    n = n_on + int(RELEASE_S * sample_rate)
    rng = np.random.default_rng(seed)
    out = _sustained(_wavetable(amps), hz, n, sample_rate, float(p.get("vibrato_cents", 12.0)),
                     float(p.get("vibrato_hz", 5.0)), rng.random() * 2 * math.pi)
    out *= _envelope(n, n_on, float(p.get("attack_s", 0.06)), sample_rate)
    if consonant:                                         # a short fricative onset for the syllable
        c = _burst(rng, n, 0.012, sample_rate, cutoff_hz=2500.0, highpass=True)
        out[:len(c)] += 0.25 * c
    return _normalise(out, 1.0)


# ---------------------------------------------------------------------------------------------
# the entry point


def note(family: str, params: dict, hz: float | None, velocity: int, duration_s: float,
         sample_rate: int, seed: int = 0, lyric: str | None = None,
         vowel: str | None = None) -> np.ndarray:
    """One note as float32 mono samples (peak 1). ``hz`` None for unpitched drums.

    Struck families ring out (up to :data:`RING_CAP_S`) whatever the duration; pipe and voice
    sustain for ``duration_s`` and release over :data:`RELEASE_S`.
    """
    velocity = max(1, min(127, int(velocity)))
    if family == "drum":
        return drum(params, hz, velocity, sample_rate, seed)
    if hz is None or not hz > 0:
        raise ValueError(f"a {family} note needs a positive frequency, got {hz!r}")
    if family == "bell":
        return bell(params, hz, velocity, sample_rate, seed)
    if family == "stone":
        return stone(params, hz, velocity, sample_rate, seed)
    if family == "string":
        return string(params, hz, velocity, sample_rate, seed)
    if family == "pipe":
        return pipe(params, hz, velocity, duration_s, sample_rate, seed)
    if family == "voice":
        return voice(params, hz, velocity, duration_s, sample_rate, seed,
                     vowel or vowel_of(lyric), consonant=bool(lyric))
    raise ValueError(f"unknown instrument family {family!r}")


def length(family: str, params: dict, duration_s: float, sample_rate: int) -> int:
    """Samples :func:`note` returns for these arguments (without rendering)."""
    if family in SUSTAINED:
        return max(1, int(duration_s * sample_rate)) + int(RELEASE_S * sample_rate)
    if family == "string":
        return _ring_samples("string", [float(params.get("decay_s", 2.5))], sample_rate)
    n = _ring_samples(family, list(params.get("decay_s", [1.0])), sample_rate)
    strokes = int(params.get("rattle_strokes", 1)) if family == "drum" else 1
    if strokes > 1:
        n += int(strokes / float(params.get("rattle_rate_hz", 12.0)) * sample_rate)
    return n

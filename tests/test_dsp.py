"""yuexuan.audio.dsp against scipy.signal (the reference): its second-order-section kernel gives
scipy.signal.sosfilt's results bit for bit; and the render command's start-up without
scipy.signal (bench/bench_render.py times whole commands: its import cost ~0.7 s of CPU)."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from scipy import signal

from yuexuan.audio import dsp


def test_filters_match_scipy_signal():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3000, 2)).astype(np.float32)
    sos = signal.butter(2, [300.0, 600.0], btype="bandpass", fs=48000, output="sos")
    impulse = np.zeros(4000)
    impulse[0] = 1.0
    assert np.allclose(dsp.sosfilt(dsp.butter_bandpass_sos(2, 300.0, 600.0, 48000), impulse),
                       signal.sosfilt(sos, impulse), atol=1e-12)
    zi = rng.standard_normal((2, 2, 2))
    y, zf = dsp.sosfilt(sos.astype(np.float32), x, axis=0, zi=zi.astype(np.float32))
    ry, rzf = signal.sosfilt(sos.astype(np.float32), x, axis=0, zi=zi.astype(np.float32))
    assert y.dtype == ry.dtype and np.allclose(y, ry, atol=1e-6) and np.allclose(zf, rzf, atol=1e-6)
    b, a = [0.3], [1.0, -1.6, 0.81]
    mono = x[:, 0].astype(np.float64)
    assert np.allclose(dsp.lfilter(b, a, mono), signal.lfilter(b, a, mono), atol=1e-9)
    for taps, cut, fs, win in ((17, 5000.0, 48000.0, "hamming"), (64, 0.225, 2.0, ("kaiser", 8.0))):
        ours = dsp.firwin(taps, cut, fs, win)
        assert np.allclose(ours, signal.firwin(taps, cut, window=win, fs=fs), atol=1e-12)
    h = signal.firwin(17, 5000.0, fs=48000).astype(np.float32)
    for n in (2999, 3000, 3001, 3002):                 # every length modulo 4: the last output
        dec = dsp.decimate_fir(h, x[:n, 0], 4)
        assert dec.dtype == np.float32
        assert np.allclose(dec, signal.upfirdn(h, x[:n, 0], down=4), atol=1e-6)
    half = rng.standard_normal(16).astype(np.float32)
    assert np.allclose(dsp.convolve_short(x[:, 0], half), signal.convolve(x[:, 0], half, method="direct"),
                       atol=1e-5)
    assert np.allclose(dsp.interpolate_fir(h * 4, x[:700], 4), signal.upfirdn(h * 4, x[:700], up=4, axis=0),
                       atol=1e-5)
    ir = rng.standard_normal((500, 2)).astype(np.float32)
    assert np.allclose(dsp.fftconvolve_rows(x[:, :1], ir), signal.oaconvolve(x[:, :1], ir, axes=0), atol=1e-3)


def test_the_engines_kernel_is_in_force_in_its_scope_and_its_thread():
    """Outside a render the public scipy.signal.sosfilt filters; inside the engine's scope its
    own kernel does, on the engine's worker thread too; after it, the public one again."""
    from yuexuan.audio.engine import filter_kernel, output

    assert dsp.SOS_KERNEL.get() is dsp.public_rows
    with filter_kernel.in_force() as kernel:
        assert kernel is filter_kernel.load() and kernel is not dsp.public_rows
        seen: list = []
        with output.Pipe() as pipe:
            pipe.submit(lambda: seen.append(dsp.SOS_KERNEL.get()))
        assert seen == [kernel]
    assert dsp.SOS_KERNEL.get() is dsp.public_rows


@pytest.mark.parametrize("which", ["engine", "public"])
def test_the_sos_kernel_is_scipys_bit_for_bit(which):
    """Random stable sections, signals and states (seed printed), float32 and float64: the kernel
    the voices and the K-weighting use in a render (the engine's) and outside one (the public
    function's) leave the very samples and state scipy.signal.sosfilt gives."""
    from yuexuan.audio.engine import filter_kernel

    seed = random.randrange(2 ** 32)
    rng = np.random.default_rng(seed)
    kernel = filter_kernel.load() if which == "engine" else dsp.public_rows
    for dtype in (np.float32, np.float64):
        for _ in range(4):
            sections, rows, n = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 3000))
            r, theta = rng.uniform(0.5, 0.999, sections), rng.uniform(0.01, 3.1, sections)
            sos = np.column_stack([rng.standard_normal((sections, 3)), np.ones(sections),
                                   -2 * r * np.cos(theta), r * r]).astype(dtype)
            x = rng.standard_normal((rows, n)).astype(dtype)
            zi = rng.standard_normal((rows, sections, 2)).astype(dtype)
            ry, rzf = signal.sosfilt(sos, x, axis=-1, zi=np.moveaxis(zi, 0, 1))
            kernel(sos, x, zi)
            assert ry.dtype == x.dtype, seed
            assert np.array_equal(x, ry) and np.array_equal(zi, np.moveaxis(rzf, 1, 0)), seed


def test_limiter_smoothing_matches_scipy_ndimage():
    from scipy import ndimage

    from yuexuan.audio.engine import mix
    x = np.minimum(1, np.random.default_rng(2).random(4000).astype(np.float32) * 3)
    for w in (1, 3, 385):
        lo = mix._moving_min(x, w)
        assert np.array_equal(lo, ndimage.minimum_filter1d(x, w, mode="nearest"))
        mean = ndimage.uniform_filter1d(lo, w, mode="nearest")
        assert np.allclose(mix._moving_mean(lo, w), mean, atol=1e-6)


def test_render_command_starts_without_scipy_signal():
    code = ("import sys, yuexuan.commands.render; "
            "print(sorted(m for m in sys.modules if m.startswith('scipy.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "scipy.signal'" not in out and "scipy.stats" not in out, out
    assert "scipy.linalg" not in out and "scipy.ndimage" not in out, out


def test_sample_peak_limiter_holds_its_ceiling_and_leaves_the_rest():
    """The dialogue bus's limiter (mix.limiter_gain by sample peak), on signals drawn afresh: no
    sample of the middle over the ceiling once the gain is applied, the gain exactly 1 farther than
    two windows from every sample over it, and None where none is over."""
    from yuexuan.audio.engine import mix
    seed = random.randrange(2**32)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        n, w, lead = int(rng.integers(2000, 20000)), int(rng.integers(1, 200)), int(rng.integers(0, 600))
        x = (rng.standard_normal((n + 2 * lead, 2)) * 0.1).astype(np.float32)
        for at in rng.integers(0, len(x), int(rng.integers(0, 6))):
            x[at:at + int(rng.integers(1, 500))] *= np.float32(rng.uniform(2, 40))
        ceiling = float(rng.uniform(0.2, 0.9))
        g = mix.limiter_gain(x, ceiling, w, lead, true_peak=False)
        over = np.flatnonzero(np.abs(x).max(axis=1) > ceiling)
        if g is None:
            assert not len(over[(over >= lead - 2 * w) & (over < lead + n + 2 * w)]), seed
            continue
        mid = x[lead:lead + n]
        assert len(g) == n and float(np.abs(mid * g[:, None]).max()) <= ceiling * (1 + 1e-5), seed
        far = np.ones(len(x), dtype=bool)
        for o in over:
            far[max(0, o - 2 * w - 1):o + 2 * w + 2] = False
        assert np.all(g[far[lead:lead + n]] == 1.0), seed

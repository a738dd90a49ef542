"""The few filters the renderer needs, without importing ``scipy.signal`` where it can be helped.

Importing ``scipy.signal`` costs about 0.7 s of CPU (it imports ``scipy.stats``,
``scipy.interpolate`` and ``scipy.optimize``), a seventh of a whole-ceremony ``yuexuan render``
(bench/bench_render.py times whole commands). What numpy does is done in numpy (window-method FIR
design, FIR up/down-sampling, FFT convolution, the Butterworth band-pass design); the recursive
filters run in :func:`sos_rows`, by the kernel in force (:data:`SOS_KERNEL`): SciPy's public
``scipy.signal.sosfilt`` unless a caller has put a faster one of the same results in force for
its scope. The render engine does, for a render (:mod:`yuexuan.audio.engine.filter_kernel`):
the voices' formant filter makes a call for each stretch of a syllable where the formants hold
(some 5000 in the ceremony), and the public function spends 50–300 µs a call checking and moving
its arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
Kernel = Callable[[Array, Array, Array], None]


def public_rows(sos: Array, x: Array, zi: Array) -> None:
    """:func:`sos_rows`'s work by the public ``scipy.signal.sosfilt`` (imported on first use)."""
    from scipy.signal import sosfilt as reference

    y, zf = reference(sos, x, axis=-1, zi=np.moveaxis(zi, 0, 1))
    x[...] = y
    zi[...] = np.moveaxis(zf, 1, 0)


# The second-order-section kernel in force: set for a scope (``token = SOS_KERNEL.set(k)`` …
# ``SOS_KERNEL.reset(token)``) by a caller that has a faster one giving the same results.
SOS_KERNEL: ContextVar[Kernel] = ContextVar("yuexuan_sos_kernel", default=public_rows)


def sos_rows(sos: Array, x: Array, zi: Array) -> None:
    """Each row of ``x`` (signals, samples; C-contiguous) through the second-order sections
    ``sos`` in place, from the state ``zi`` (signals, sections, 2), which is left as the state after
    them; all three float32 or all float64. By the kernel in force (:data:`SOS_KERNEL`)."""
    SOS_KERNEL.get()(sos, x, zi)


def sosfilt(sos: npt.ArrayLike, x: npt.ArrayLike, axis: int = -1,
            zi: npt.ArrayLike | None = None) -> Any:
    """``scipy.signal.sosfilt``: ``x`` through the second-order sections ``sos`` along ``axis``;
    with ``zi`` (sections, …, 2 in place of ``axis``, …) returns (y, final state)."""
    sos = np.asarray(sos)
    x = np.asarray(x)
    n_sections = sos.shape[0]
    axis = axis % x.ndim
    zi_shape = (n_sections, *x.shape[:axis], 2, *x.shape[axis + 1:])
    dtype = np.result_type(sos, x, *(() if zi is None else (np.asarray(zi),)))
    state = np.zeros(zi_shape, dtype) if zi is None else np.array(zi, dtype)
    if state.shape != zi_shape:
        raise ValueError(f"zi has shape {state.shape}, expected {zi_shape}")
    moved = np.moveaxis(x, axis, -1)
    work = np.array(moved.reshape(-1, moved.shape[-1]), dtype, order="C")
    z = np.moveaxis(state, [0, axis + 1], [-2, -1])
    z_shape = z.shape
    z = np.ascontiguousarray(z.reshape(-1, n_sections, 2))
    sos_rows(np.ascontiguousarray(sos, dtype=dtype), work, z)
    y = np.moveaxis(work.reshape(moved.shape), -1, axis)
    if zi is None:
        return y
    return y, np.moveaxis(z.reshape(z_shape), [-2, -1], [0, axis + 1])


def lfilter(b: Sequence[float], a: Sequence[float], x: npt.ArrayLike) -> Any:
    """``scipy.signal.lfilter`` for a filter of order ≤ 2 along the last axis (one section)."""
    if not 1 <= len(a) <= 3 or not 1 <= len(b) <= 3:
        raise ValueError("lfilter here takes filters of order 2 at most")
    bb = np.zeros(3)
    aa = np.zeros(3)
    bb[:len(b)] = b
    aa[:len(a)] = a
    return sosfilt(np.concatenate([bb, aa])[None, :] / aa[0], x)


def butter_bandpass_sos(order: int, low_hz: float, high_hz: float, sample_rate: float) -> Array:
    """``scipy.signal.butter(order, [low_hz, high_hz], "bandpass", fs=sample_rate, output="sos")``:
    the analog Butterworth prototype moved to the band, prewarped, by the bilinear transform."""
    fs2 = 2.0 * sample_rate
    w1, w2 = (fs2 * math.tan(math.pi * f / sample_rate) for f in (low_hz, high_hz))
    wo, bw = math.sqrt(w1 * w2), w2 - w1
    m = np.arange(1 - order, order, 2)
    proto = -np.exp(1j * np.pi * m / (2 * order))        # the prototype's poles (left half-plane)
    lp = proto * bw / 2
    root = np.sqrt(lp * lp - wo * wo)
    poles_s = np.concatenate([lp + root, lp - root])
    poles_z = (fs2 + poles_s) / (fs2 - poles_s)
    gain = bw ** order * np.real(fs2 ** order / np.prod(fs2 - poles_s))
    upper = poles_z[np.imag(poles_z) > 0]
    upper = upper[np.argsort(np.abs(upper))]
    sos = np.zeros((len(upper), 6))
    sos[:, 0], sos[:, 2] = 1.0, -1.0                   # one zero at z = 1 and one at z = −1 each
    sos[:, 3], sos[:, 4], sos[:, 5] = 1.0, -2 * np.real(upper), np.abs(upper) ** 2
    sos[0, :3] *= gain
    return sos


def firwin(numtaps: int, cutoff: float, sample_rate: float = 2.0,
           window: str | tuple[str, float] = "hamming") -> Array:
    """``scipy.signal.firwin``, low-pass: a windowed sinc of ``numtaps`` taps cut at ``cutoff``
    (Hz of ``sample_rate``; the default 2.0 makes it a fraction of Nyquist), unit gain at DC;
    window "hamming" or ("kaiser", β)."""
    c = cutoff / (sample_rate / 2)
    m = np.arange(numtaps) - (numtaps - 1) / 2
    h = c * np.sinc(c * m)
    w = np.kaiser(numtaps, window[1]) if isinstance(window, tuple) and window[0] == "kaiser" \
        else np.hamming(numtaps)
    h = h * w
    return np.asarray(h / h.sum())


def fast_length(n: int) -> int:
    """The smallest 2^a·3^b·5^c ≥ n (a quick FFT size)."""
    best = 1 << max(0, (n - 1).bit_length())
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            p = p35 * (1 << max(0, (-(-n // p35) - 1).bit_length()))
            best = min(best, p)
            p35 *= 3
        p5 *= 5
    return best


def fftconvolve_rows(a: Array, b: Array) -> Array:
    """The full convolution along axis 0 of ``a`` (p, 1 or k) with ``b`` (q, k), by FFT, in
    ``a``'s float type (``scipy.signal.oaconvolve(a, b, axes=0)``)."""
    n = len(a) + len(b) - 1
    size = fast_length(n)
    out = np.fft.irfft(np.fft.rfft(a, size, axis=0) * np.fft.rfft(b, size, axis=0), size, axis=0)[:n]
    return out.astype(np.result_type(a.dtype, b.dtype), copy=False)


def convolve_short(x: Array, h: Array) -> Array:
    """``np.convolve(x, h)`` (full) of a 1-D ``x`` and a short ``h``, as ``len(h)`` shifted
    multiply-adds (numpy's convolve computes each output by its own dot product: 3–4× slower for a
    16-tap filter over a float32 second). Equal to it within float rounding."""
    x = np.asarray(x)
    dtype = np.result_type(x.dtype, h.dtype)
    m = len(x)
    out = np.zeros(m + len(h) - 1, dtype=dtype)
    tmp = np.empty(m, dtype=dtype)
    for k, c in enumerate(np.asarray(h, dtype)):
        np.multiply(x, c, out=tmp)
        out[k:k + m] += tmp
    return out


def decimate_fir(h: Array, x: Array, down: int) -> Array:
    """``scipy.signal.upfirdn(h, x, down=down)`` for 1-D ``x``: filtered, every ``down``-th kept
    (only the kept outputs computed: a shifted multiply-add of every ``down``-th input per tap)."""
    x = np.asarray(x)
    q = len(h)
    dtype = np.result_type(x.dtype, h.dtype)
    n_out = -(-(len(x) + q - 1) // down)
    xp = np.zeros(len(x) + 2 * (q - 1), dtype=dtype)
    xp[q - 1:q - 1 + len(x)] = x
    out = np.zeros(n_out, dtype=dtype)
    for k, c in enumerate(np.asarray(h, dtype)):
        out += c * xp[q - 1 - k::down][:n_out]
    return out


def interpolate_fir(h: Array, x: Array, up: int) -> Array:
    """``scipy.signal.upfirdn(h, x, up=up, axis=0)``: ``x`` (m, k) with up − 1 zeros after each
    sample but the last, filtered by ``h``: ((m − 1)·up + len(h), k)."""
    m = len(x)
    out = np.zeros(((m - 1) * up + len(h), x.shape[1]), dtype=np.result_type(h.dtype, x.dtype))
    for phase in range(min(up, len(h))):          # polyphase: the taps h[phase::up] make out[phase::up]
        taps = h[phase::up]
        for ch in range(x.shape[1]):
            y = convolve_short(x[:, ch], taps)
            out[phase::up, ch][:len(y)] = y[:len(out[phase::up])]
    return out

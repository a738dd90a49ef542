"""Stroke times by template fitting: the drum's own attack, learnt from its strokes in the
recording, laid over each stroke (a matched filter of the attack envelope).

A stroke's attack read off its own envelope (:func:`yuexuan.check.drum.band.rise_start`) is at the
mercy of the noise at that instant and of the drum's shape: a Taiko sounds two humps ~20 ms
apart, a hall adds reflections, and when the first hump is the lower, or noise lifts the floor,
the attack is read a hump late (12–30 ms on the family of tests/drum_family.py). Every stroke of
one drum has much the same attack, so:

1. the **template** is the median of the seeds' envelopes (:mod:`yuexuan.check.drum.finder`),
   each first aligned by cross-correlation with the template of the round before (two rounds):
   the noise of single strokes averages out;
2. its **attack** is read once, on the template (``ATTACK_RISE`` of its first hump, as
   :func:`yuexuan.check.drum.band.rise_start` reads a stroke);
3. each stroke's fit is where its envelope fits the template best (the cross-correlation of the
   envelopes in dB — the attack a step from the floor, the humps after it a ripple — over the
   template's rise and top, ± ``MAX_LAG_S``, refined by a parabola), plus that attack.

The finder (:func:`yuexuan.check.drum.finder.strokes`) keeps a stroke's own reading where it
agrees with its fit within ``finder.AGREE_S`` (the own reading is the sharper, at 16 kHz; the
fits are put on its clock by the seeds that agree), and takes the fit where it does not.
Measured on 24 members of the family (seeds 100–123, not drawn by the tests): the 95th
percentile of |error| within 5 ms on 10 members, on 6 without the template.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from yuexuan.check.drum import band

ENV_SR = band.SR / band.ENV_DECIMATE
MAX_LAG_S = 0.035        # a stroke is sought this far either side of its own attack reading, s
FIT_BEFORE_S = 0.02      # the template is fitted from this before its attack …
FIT_AFTER_PEAK_S = 0.02  # … to this after its first hump's top, s
ATTACK_RISE = 0.25       # the template's attack: this fraction of its first hump's rise
HUMP = 0.2               # its first hump: the first rise through this fraction of its peak
ROUNDS = 2
FLOOR_DB = -40.0         # envelopes are compared in dB of their peak, down to this
CHUNK = 32               # rows cross-correlated at a time (memory)


def _norm(rows: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """Each envelope less its level before the attack span (median of its first 20 ms), over its
    peak."""
    x = rows.astype(np.float64)
    pre = int(round(0.02 * ENV_SR))
    x = x - np.median(x[:, :pre], axis=1, keepdims=True)
    return x / np.maximum(x.max(axis=1, keepdims=True), 1e-12)


def _shift(rows: npt.NDArray[np.float64], lag: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each row read ``lag`` samples later (fractional; 0 beyond its ends)."""
    j = np.arange(rows.shape[1], dtype=np.float64)
    return np.array([np.interp(j + d, j, r, left=0.0, right=0.0) for r, d in zip(rows, lag)])


def _attack(tpl: npt.NDArray[np.float64]) -> tuple[float, int]:
    """(the template's attack, samples into it, fractional; its first hump's top). The template
    is clean enough to read its first hump directly: the first rise through ``HUMP`` of its
    peak, climbed to its own top; the attack is the last rise through ``ATTACK_RISE`` of that
    top before it (a later, higher hump — a Taiko's second, a hall's reflection — is not it)."""
    peak = float(tpl.max())
    if peak <= 0:
        return float(np.argmax(tpl)), int(np.argmax(tpl))
    top = int(np.argmax(tpl >= HUMP * peak))
    while top + 1 < len(tpl) and tpl[top + 1] >= tpl[top]:
        top += 1
    level = ATTACK_RISE * tpl[top]
    below = np.flatnonzero(tpl[:top] < level)
    if not len(below):
        return 0.0, top
    k = int(below[-1])
    return k + float((level - tpl[k]) / max(tpl[k + 1] - tpl[k], 1e-12)), top


def _lags(rows: npt.NDArray[np.float64], tpl: npt.NDArray[np.float64], lo: int, hi: int,
          fill: float = FLOOR_DB) -> npt.NDArray[np.float64]:
    """Per row, the lag (samples, fractional) at which ``tpl[lo:hi]`` fits it best: the peak of
    their cross-correlation (each window less its mean) within ± ``MAX_LAG_S``; ``fill`` beyond
    a row's ends."""
    m = int(round(MAX_LAG_S * ENV_SR))
    w = tpl[lo:hi] - tpl[lo:hi].mean()
    lags = np.arange(-m, m + 1)
    idx = np.arange(lo, hi)[None, :] + lags[:, None]              # (lags, window)
    ok = (idx >= 0) & (idx < rows.shape[1])
    cc = np.zeros((len(rows), len(lags)))
    for i in range(0, len(rows), CHUNK):                          # (chunk, lags, window) at a time
        win = np.where(ok[None], rows[i:i + CHUNK, np.clip(idx, 0, rows.shape[1] - 1)], fill)
        win = win - win.mean(axis=2, keepdims=True)
        cc[i:i + CHUNK] = (win * w).sum(axis=2) / np.maximum(np.linalg.norm(win, axis=2), 1e-12)
    k = np.argmax(cc, axis=1)
    kk = np.clip(k, 1, len(lags) - 2)
    y0, y1, y2 = (cc[np.arange(len(k)), kk + d] for d in (-1, 0, 1))
    den = y0 - 2 * y1 + y2
    frac = np.where((k == kk) & (den < 0), 0.5 * (y0 - y2) / np.where(den < 0, den, -1.0), 0.0)
    return lags[k] + frac


def _db(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The envelopes in dB of their peak, floored at ``FLOOR_DB``: the attack is a step from the
    floor, the humps after it a ripple (in amplitude a later hump fits nearly as well)."""
    return 20.0 * np.log10(np.maximum(x, 10 ** (FLOOR_DB / 20)))


def fit(envelopes: npt.NDArray[np.floating], seeds: npt.NDArray[np.intp],
        ) -> npt.NDArray[np.float64] | None:
    """The correction (s) to add to each candidate's attack time, by the template learnt from the
    ``seeds`` (rows of ``envelopes``, :attr:`yuexuan.check.drum.band.Candidates.envelope`); None
    when fewer than three seeds."""
    if len(seeds) < 3 or envelopes is None or not len(envelopes):
        return None
    x = _norm(envelopes)
    xd = _db(x)
    zero = -band.ENV_SPAN_S[0] * ENV_SR                  # sample of the attack reading in a row
    s, sd = x[seeds], xd[seeds]
    lag = np.zeros(len(seeds))
    for _ in range(ROUNDS + 1):
        tpl = np.median(_shift(s, lag), axis=0)
        tpl_db = np.median(_shift(sd, lag), axis=0)
        a, top = _attack(tpl)
        lo = max(0, int(a - FIT_BEFORE_S * ENV_SR))
        hi = min(len(tpl), int(top + FIT_AFTER_PEAK_S * ENV_SR) + 1)
        lag = _lags(sd, tpl_db, lo, hi)
        lag = lag - np.median(lag)                       # the template stays where the seeds are
    return (_lags(xd, tpl_db, lo, hi) + a - zero) / ENV_SR

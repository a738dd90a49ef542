"""The nearest stroke to each time: the one search the 释获 rules, ``check``'s drum evidence, the
drum finder and live judging share.

Hand-written (numpy's ``searchsorted``, a few lines): mir_eval's ``util.match_events`` answers a
different question, a one-to-one matching within a window, where here many times may share one
stroke and none is out of reach. The inputs are validated in mir_eval's manner: the strokes must
be a 1-D, finite, ascending array.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def validated_strokes(strokes_s: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``strokes_s`` as float64 seconds; ValueError unless it is 1-D, non-empty, finite and
    ascending (equal neighbours allowed)."""
    strokes = np.asarray(strokes_s, dtype=np.float64)
    if strokes.ndim != 1 or not len(strokes):
        raise ValueError(f"strokes must be a non-empty 1-D array, not shape {strokes.shape}")
    if not np.isfinite(strokes).all():
        raise ValueError("strokes must be finite seconds")
    if (np.diff(strokes) < 0).any():
        raise ValueError("strokes must be ascending")
    return strokes


def nearest(times_s: npt.ArrayLike,
            strokes_s: npt.ArrayLike) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """For each of ``times_s`` (seconds, any shape), the index of the nearest of ``strokes_s``
    (seconds, ascending, non-empty: :func:`validated_strokes`) and the offset time − stroke (s).

    A time halfway between two strokes goes to the earlier (of equal strokes, any one is
    taken). A NaN time gets offset NaN (its index is a valid one, not
    meaningful). O((n + m) log m) by binary search.
    """
    strokes = validated_strokes(strokes_s)
    times = np.asarray(times_s, dtype=np.float64)
    right = np.clip(np.searchsorted(strokes, times), 0, len(strokes) - 1)
    left = np.maximum(right - 1, 0)
    take_left = np.abs(times - strokes[left]) <= np.abs(strokes[right] - times)
    index = np.where(take_left, left, right)
    return index, times - strokes[index]


__all__ = ["nearest", "validated_strokes"]

"""How loud a note is: the source's sound power, its velocity, over waveforms of one loudness.

A cached waveform (:mod:`yuexuan.audio.notecache`) is synthesised at its velocity bucket and
normalised by :func:`fast_max_rms` to a fast-weighted maximum RMS of 1, so that notes of every
bucket start equally loud; :func:`velocity_gain` then sets the note's own level. A louder
velocity is therefore always louder, across the buckets too (the timbre changes with the bucket,
the level only with the velocity). Before, the waveforms were normalised to peak 1 and the gain
was velocity_gain(v) / velocity_gain(bucket): a note of velocity 60 (bucket 40) came out louder
than one of velocity 100 (bucket 112).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.synth import velocity_gain
from yuexuan.errors import UserError

#: the window of a sound level meter's F (fast) time weighting, s (IEC 61672-1: τ = 125 ms); peak
#: sound powers of instruments are given over such intervals (Sivian, Dunn & White 1931, 1/8 s)
FAST_S = 0.125
REFERENCE_SPL_DB = 94.0          # amplitude 1 = 1 Pa
SPHERE_1M_DB = 10 * math.log10(4 * math.pi)    # 10.99 dB: Lw − Lp of a point source at 1 m


def fast_max_rms(x: npt.NDArray[np.floating], sample_rate: int) -> float:
    """The largest RMS of ``x`` over any window of :data:`FAST_S` (the whole of a shorter ``x``,
    as if padded with silence to the window)."""
    w = max(1, int(round(FAST_S * sample_rate)))
    sq = np.cumsum(np.square(x, dtype=np.float64))
    if len(x) <= w:
        return float(np.sqrt(sq[-1] / w)) if len(x) else 0.0
    best = max(float(sq[w - 1]), float(np.max(sq[w:] - sq[:-w])))
    return float(np.sqrt(best / w))


def level_normalised(x: npt.NDArray[np.float32], sample_rate: int) -> npt.NDArray[np.float32]:
    """``x`` scaled (in place) to a :func:`fast_max_rms` of 1; silence is left as it is."""
    level = fast_max_rms(x, sample_rate)
    if level > 0:
        x *= np.float32(1.0 / level)
    return x


def source_level(name: str, synth: dict[str, Any]) -> float:
    """The amplitude (Pa) at 1 m of instrument ``name``'s note at velocity 127 with a waveform of
    level 1, from its ``[synth]`` ``sound_power_db`` at ``sound_power_velocity``, times its
    optional ``gain_db``."""
    values = []
    for key in ("sound_power_db", "sound_power_velocity", "gain_db"):
        v = synth.get(key, 0.0 if key == "gain_db" else None)
        if v is None:
            raise UserError(f"instruments[{name!r}].synth lacks {key} (its sound power); recompile the "
                            "cue sheet with the current instrument files")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise UserError(f"instruments[{name!r}].synth.{key}: expected a number")
        values.append(float(v))
    lw_db, at_velocity, gain_db = values
    if not 1 <= at_velocity <= 127:
        raise UserError(f"instruments[{name!r}].synth.sound_power_velocity: expected 1..127")
    lp_1m_db = lw_db - SPHERE_1M_DB + gain_db
    return 10 ** ((lp_1m_db - REFERENCE_SPL_DB) / 20) / velocity_gain(int(at_velocity))


__all__ = ["velocity_gain", "fast_max_rms", "level_normalised", "source_level"]

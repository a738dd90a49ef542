"""The singers of an ensemble (the 歌's six 工): each its own intonation, vibrato and seat in the
row; and how one rendition of a sung syllable spreads their onsets and levels.

Figures: intonation scatter of choir singers, SD 10–15 cents (Ternström & Sundberg 1988, JASA
84(1)): the setting ``pitch_scatter_cents`` (default 12); each singer's vibrato rate and extent
drawn around the instrument's, kept inside 4.5–6.5 Hz and ±15–50 cents (:mod:`yuexuan.audio.voice.glottal`);
the onset of a syllable spread over ``onset_spread_s`` (default 20 ms; the issue's 10–30 ms);
a rendition's level per singer ±1 dB (SD, INFERENCE); the seats ``seat_m`` apart (default 0.9 m:
a seated man's mat, INFERENCE) in a row across the direction the singers face.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from yuexuan.audio.voice import glottal

VIBRATO_HZ_RANGE = (4.5, 6.5)
VIBRATO_CENTS_RANGE = (15.0, 50.0)
#: facing (ceremony direction) → degrees from north, clockwise
FACING_DEG = {"北": 0.0, "东": 90.0, "南": 180.0, "西": 270.0}


@dataclass(frozen=True)
class Settings:
    """An ensemble's settings, from its instrument's ``[synth]`` table."""

    pitch_scatter_cents: float = 12.0
    onset_spread_s: float = 0.020
    level_sd_db: float = 1.0
    seat_m: float = 0.9


def settings_of(p: dict[str, Any]) -> Settings:
    d = Settings()
    return Settings(float(p.get("pitch_scatter_cents", d.pitch_scatter_cents)),
                    float(p.get("onset_spread_s", d.onset_spread_s)),
                    float(p.get("level_sd_db", d.level_sd_db)), float(p.get("seat_m", d.seat_m)))


def is_ensemble(family: str, params: dict[str, Any], count: int) -> bool:
    """Whether an instrument sounds as ``count`` voices (a voice with ``ensemble = true``)."""
    return family == "voice" and bool(params.get("ensemble", False)) and count > 1


def singer_pitch(base: glottal.Pitch, name: str, index: int, settings: Settings) -> glottal.Pitch:
    """Singer ``index`` of the instrument ``name``: own intonation and vibrato (seeded by both)."""
    rng = np.random.default_rng(zlib.crc32(f"singer|{name}|{index}".encode()))
    lo, hi = VIBRATO_HZ_RANGE
    clo, chi = VIBRATO_CENTS_RANGE
    return replace(base,
                   offset_cents=float(settings.pitch_scatter_cents * rng.standard_normal()),
                   vibrato_hz=float(np.clip(base.vibrato_hz * (1 + 0.07 * rng.standard_normal()), lo, hi)),
                   vibrato_cents=float(np.clip(base.vibrato_cents * (1 + 0.2 * rng.standard_normal()),
                                               clo, chi)),
                   vibrato_delay_s=float(rng.uniform(0.15, 0.30)))


def seats(center_m: Sequence[float], facing: str, count: int, seat_m: float) -> list[tuple[float, ...]]:
    """Positions of ``count`` singers in a row through ``center_m``, across the facing direction."""
    a = math.radians(FACING_DEG.get(facing, 0.0) + 90.0)      # the row runs at right angles
    dx, dy = math.sin(a), math.cos(a)
    out = []
    for i in range(count):
        u = (i - (count - 1) / 2) * seat_m
        out.append((center_m[0] + u * dx, center_m[1] + u * dy, *center_m[2:]))
    return out


def rendition(seed: int, count: int, settings: Settings) -> tuple[npt.NDArray[np.float64],
                                                                   npt.NDArray[np.float64]]:
    """(onset offsets s, amplitude factors) of each singer for one rendition of a syllable."""
    rng = np.random.default_rng(seed)
    half = settings.onset_spread_s / 2
    offsets = rng.uniform(-half, half, count)
    gains = 10 ** (settings.level_sd_db * rng.standard_normal(count) / 20)
    return offsets, gains

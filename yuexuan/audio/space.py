"""Where a sound is heard from: listener seats, azimuth, constant-power panning, distance gain and
delay, and a light open-air ambience (ground reflection and sparse diffuse scatter).

Frame: ``rite/courtyard.toml`` (metres; x east, y north, z up). Azimuth is in degrees relative to
the listener's facing, positive to the listener's right. Sounds behind the listener are folded to
the front (a stereo pair cannot tell front from back).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from yuexuan.rite.courtyard import Listener, listeners  # noqa: F401  (the seats: one reader, re-exported)

SPEED_OF_SOUND_M_S = 343.0
REFERENCE_DISTANCE_M = 1.0      # distance gain is 1 here, falling as 1/d beyond
GROUND_REFLECTION = 0.6         # pressure reflection coefficient of the packed-earth courtyard
SCATTER_TAPS = 8                # diffuse scatter taps of the ambience
SCATTER_SPAN_S = (0.035, 0.30)  # their delays after the direct sound, s
SCATTER_LEVEL = 0.22            # first tap's gain relative to the direct sound; they decay to −18 dB


def azimuth_deg(listener: Listener, source_m) -> float:
    """Direction of ``source_m`` from the listener, degrees from the facing, + to the right."""
    dx = source_m[0] - listener.position_m[0]
    dy = source_m[1] - listener.position_m[1]
    bearing = math.degrees(math.atan2(dx, dy))          # 0 north, 90 east
    return (bearing - listener.facing_deg + 180.0) % 360.0 - 180.0


def pan_gains(azimuth: float) -> tuple[float, float]:
    """Constant-power (sin/cos) left and right gains; ±90° is hard right/left, rear folds front."""
    a = azimuth
    if a > 90:
        a = 180 - a
    elif a < -90:
        a = -180 - a
    theta = (a / 90.0 + 1.0) * math.pi / 4            # 0 = left, π/2 = right
    return math.cos(theta), math.sin(theta)


def distance_m(a, b) -> float:
    return math.dist(a, b)


def distance_gain(d_m: float) -> float:
    """Spherical spreading: REFERENCE_DISTANCE_M / d (1 within the reference distance)."""
    return REFERENCE_DISTANCE_M / max(d_m, REFERENCE_DISTANCE_M)


def delay_s(d_m: float) -> float:
    """Travel time over ``d_m`` metres, s."""
    return d_m / SPEED_OF_SOUND_M_S


@dataclass(frozen=True)
class Placement:
    """How one fixed source is heard: overall delay (samples, the direct sound's travel time) and
    taps (delay after the direct sound in samples, left gain, right gain), direct tap first."""

    delay_samples: int
    taps: tuple
    azimuth_deg: float
    distance_m: float

    @property
    def length_extra(self) -> int:
        return max(t[0] for t in self.taps)


def placement(listener: Listener, source_m, sample_rate: int, seed_name: str = "") -> Placement:
    """Direct sound, the ground reflection (image source at −z) and diffuse scatter."""
    src = tuple(float(v) for v in source_m)
    d = distance_m(src, listener.position_m)
    az = azimuth_deg(listener, src)
    gl, gr = pan_gains(az)
    g = distance_gain(d)
    taps = [(0, g * gl, g * gr)]
    image = (src[0], src[1], -src[2])
    d2 = distance_m(image, listener.position_m)
    lag = int(round((delay_s(d2) - delay_s(d)) * sample_rate))
    g2 = distance_gain(d2) * GROUND_REFLECTION
    if lag > 0:
        taps.append((lag, g2 * gl, g2 * gr))
    else:
        taps[0] = (0, (g + g2) * gl, (g + g2) * gr)
    # diffuse scatter from the courtyard's walls, the hall and the crowd: sparse, decorrelated taps
    # (a velvet-noise-like tail), deterministic per source name; level follows the direct sound's
    # distance only weakly (the scatter field is diffuse).
    rng = np.random.default_rng(zlib.crc32(seed_name.encode("utf-8")))
    lo, hi = SCATTER_SPAN_S
    field = SCATTER_LEVEL * math.sqrt(g * distance_gain(10.0))
    for k in range(SCATTER_TAPS):
        t = lo + (hi - lo) * (k + rng.random()) / SCATTER_TAPS
        level = field * 10 ** (-18.0 * (t - lo) / (hi - lo) / 20.0)
        side = rng.random()
        sign = 1.0 if rng.random() < 0.5 else -1.0
        taps.append((int(round(t * sample_rate)), sign * level * math.sqrt(1 - side),
                     sign * level * math.sqrt(side)))
    return Placement(int(round(delay_s(d) * sample_rate)), tuple(taps), az, d)


def spatialise(mono: np.ndarray, place: Placement) -> np.ndarray:
    """Stereo (n + extra, 2) float32: the taps applied to ``mono`` (overall delay not included)."""
    n = len(mono)
    m = n + place.length_extra
    chans = []
    for c in (1, 2):
        ch = np.zeros(m, dtype=np.float32)
        for tap in place.taps:
            ch[tap[0]:tap[0] + n] += np.float32(tap[c]) * mono
        chans.append(ch)
    return np.stack(chans, axis=1)

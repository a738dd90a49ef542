"""Where a sound is heard from: listener seats, azimuth, constant-power panning, distance gain and
delay, and the ambience of the courtyard — the specular reflections of the surfaces the courtyard
data names (:mod:`yuexuan.audio.room.reflections`, image sources) and a smooth diffuse tail
(:mod:`yuexuan.audio.room.tail`). A placed source's arrivals are taps added at the full rate; its tail
is applied by FFT convolution at a quarter rate; both once per cached waveform.

Frame: ``ceremony/courtyard.toml`` (metres; x east, y north, z up). Azimuth is in degrees relative to
the listener's facing, positive to the listener's right. Sounds behind the listener are folded to
the front (a stereo pair cannot tell front from back).
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from yuexuan.audio.room import reflections as images
from yuexuan.audio.room import tail
from yuexuan.rite import venue
from yuexuan.rite.courtyard import Listener, listeners  # noqa: F401  (the seats: one reader, re-exported)

SPEED_OF_SOUND_M_S = 343.0
REFERENCE_DISTANCE_M = 1.0      # distance gain is 1 here, falling as 1/d beyond
DEFAULT_VENUE = "郊"            # O24's default (docs/sources.md) (郑玄): the open shooting ground
TAIL_START_S = 0.001            # the diffuse tail starts this long after the direct sound
TAIL_MIN_DRR_DB = 3.0           # far sources: the diffuse tail stays this far below the direct sound


def azimuth_deg(listener: Listener, source_m: Sequence[float]) -> float:
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


def distance_m(a: Sequence[float], b: Sequence[float]) -> float:
    return math.dist(a, b)


def distance_gain(d_m: float) -> float:
    """Spherical spreading: REFERENCE_DISTANCE_M / d (1 within the reference distance)."""
    return REFERENCE_DISTANCE_M / max(d_m, REFERENCE_DISTANCE_M)


def delay_s(d_m: float) -> float:
    """Travel time over ``d_m`` metres, s."""
    return d_m / SPEED_OF_SOUND_M_S


class Tap(NamedTuple):
    """One arrival: delay after the direct sound (samples) and its left and right gains."""

    lag: int
    left: float
    right: float


@dataclass(frozen=True)
class Placement:
    """How one fixed source is heard: the direct sound's travel time (samples); its arrivals from
    the direct sound on — the direct sound panned by its azimuth (``taps[0]``), then each
    reflection at its own delay, level and direction —; and the diffuse tail (made when first
    used: an ensemble's singers are heard through their taps alone, and the render's workers
    make the others in parallel)."""

    delay_samples: int
    taps: tuple[Tap, ...]       # the direct sound first
    tail_spec: tail.Spec
    azimuth_deg: float
    distance_m: float
    reflections: tuple[images.Reflection, ...]  # of taps[1:], in order

    @functools.cached_property
    def tail(self) -> tail.Tail:
        return tail.diffuse_tail(*self.tail_spec)

    @property
    def direct(self) -> tuple[float, float]:
        return self.taps[0].left, self.taps[0].right

    @property
    def length_extra(self) -> int:
        return max(max(t.lag for t in self.taps), tail.spec_length_samples(self.tail_spec))


def tail_energy(d_m: float, room: venue.Room) -> float:
    """Energy of the diffuse tail re the direct sound's at ``d_m`` metres: the room's
    direct-to-reverberant ratio at 10 m, 6 dB less per doubling of distance, at least
    TAIL_MIN_DRR_DB."""
    drr_db = room.tail_drr_db_at_10m - 20 * math.log10(max(d_m, REFERENCE_DISTANCE_M) / 10.0)
    return 10 ** (-max(drr_db, TAIL_MIN_DRR_DB) / 10)


def placement(listener: Listener, source_m: Sequence[float], sample_rate: int, seed_name: str = "",
              room: venue.Room | None = None) -> Placement:
    """Direct sound, the reflections of ``room``'s surfaces (default: the packaged courtyard's
    default venue) and the diffuse tail, heard at ``listener`` from ``source_m``."""
    room = room if room is not None else venue.load(DEFAULT_VENUE)
    src = tuple(float(v) for v in source_m)
    d = distance_m(src, listener.position_m)
    az = azimuth_deg(listener, src)
    g = distance_gain(d)
    gl, gr = pan_gains(az)
    taps = [Tap(0, g * gl, g * gr)]
    paths = tuple(images.reflections(src, listener.position_m, room.surfaces))
    for r in paths:
        rl, rr = pan_gains(azimuth_deg(listener, r.image_m))
        gain = distance_gain(r.path_m) * r.reflection
        taps.append(Tap(int(round((delay_s(r.path_m) - delay_s(d)) * sample_rate)),
                        gain * rl, gain * rr))
    seed = zlib.crc32(f"{seed_name}|{listener.name}|{src}".encode())
    diffuse = tail.Spec(sample_rate, room.tail_t60_s, TAIL_START_S, g * g * tail_energy(d, room), seed)
    return Placement(int(round(delay_s(d) * sample_rate)), tuple(taps), diffuse, az, d, paths)


def taps_extra(place: Placement) -> int:
    """Samples the taps alone add after a sound (its latest reflection's lag): an ensemble's
    singer, whose taps the mixer adds (:mod:`yuexuan.audio.engine.mix`)."""
    return max(t.lag for t in place.taps)


def spatialise(mono: npt.NDArray[np.float32], place: Placement, sample_rate: int) -> npt.NDArray[np.float32]:
    """Stereo (n + extra, 2) float32: ``mono`` heard through the placement (overall delay not
    included): its taps added at full rate, its tail by :func:`yuexuan.audio.room.tail.apply`."""
    mono = np.asarray(mono, dtype=np.float32)
    n = len(mono)
    out = tail.apply(place.tail, mono, sample_rate, n + place.length_extra)
    for t in place.taps:
        out[t.lag:t.lag + n, 0] += np.float32(t.left) * mono
        out[t.lag:t.lag + n, 1] += np.float32(t.right) * mono
    return out


def impulse_response(place: Placement, sample_rate: int) -> npt.NDArray[np.float32]:
    """(1 + extra, 2) float32: what a click (one sample of 1) at the source sounds like, from the
    direct sound's arrival on."""
    return spatialise(np.ones(1, dtype=np.float32), place, sample_rate)

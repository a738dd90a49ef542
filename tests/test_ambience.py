"""The courtyard's ambience heard as a click: a one-sample click at each instrument's place (its
``position_m`` and every cue's ``places``) heard from each listener seat, in both venues of variant
O24 (郊 open, 公宫 walled), through the renderer's own path (``space.placement`` +
``space.spatialise``, what ``plan`` does for every cached waveform).

The expected reflections are computed here, independently of ``yuexuan/audio/room/reflections.py``,
from ``ceremony/courtyard.toml`` read with tomllib: the planes of the named surfaces (ground, the 堂's
south/east/west faces and top, the stairs, the venue's walls), their images of order 1 and 2, and,
for the ground and the walls, whether the specular path is real (reflection point on the surface,
legs clear of the 堂's platform — tested by sampling points along them).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy import signal

from yuexuan.audio.engine import plan
from yuexuan.audio.engine.plan import cue_positions
from yuexuan.audio.room import space
from yuexuan.compiler import compile_file
from yuexuan.rite import venue as venues

ROOT = Path(__file__).resolve().parent.parent
SR = 48000
C_M_S = 343.0
COURT = tomllib.loads((ROOT / "ceremony" / "courtyard.toml").read_text(encoding="utf-8"))
VENUES = {"郊": "郑玄", "公宫": "敖继公"}          # O24 venue -> its houdao option
WINDOW_S = 0.0008                                 # a named reflection may spread this far (FIR, rounding)


@pytest.fixture(scope="module")
def places():
    tl = compile_file(ROOT / "cues" / "dashe.toml")
    out = {(name, tuple(f["position_m"])) for name, f in tl.instruments.items()}
    out |= {(name, pos) for (_, name), pos in cue_positions(tl).items()}
    return sorted(out), tl


def _planes(venue: str) -> list:
    """(point on plane, unit normal) of every named surface's plane."""
    tang = COURT["tang"]
    (x0, x1), (y0, _), h = tang["x_m"], tang["y_m"], tang["height_m"]
    planes = [((0, 0, 0), (0, 0, 1)), ((0, y0, 0), (0, 1, 0)), ((x0, 0, 0), (1, 0, 0)),
              ((x1, 0, 0), (1, 0, 0)), ((0, 0, h), (0, 0, 1))]
    feet = {lm["name"]: lm["position_m"] for lm in COURT["landmark"]}
    for name in COURT["stairs"]["names"]:
        _, fy, _ = feet[name]
        n = np.array([0.0, -h, y0 - fy])                      # normal of the slope foot → 堂's edge
        planes.append(((0, fy, 0), tuple(n / np.linalg.norm(n))))
    for w in COURT["wall"]:
        if w["venue"] == venue:
            (ax, ay), (bx, by) = w["from_m"], w["to_m"]
            n = np.array([by - ay, ax - bx, 0.0])
            planes.append(((ax, ay, 0), tuple(n / np.linalg.norm(n))))
    return planes


def _mirror(p, plane):
    q, n = (np.asarray(v, dtype=float) for v in plane)
    return p - 2 * np.dot(p - q, n) * n


def _candidate_delays(src, seat, venue) -> np.ndarray:
    """Delays after the direct sound (s) of every image of order 1 and 2 in the named planes."""
    src, seat = np.asarray(src, float), np.asarray(seat, float)
    d = np.linalg.norm(src - seat)
    planes = _planes(venue)
    out = []
    for a in planes:
        i1 = _mirror(src, a)
        out.append(np.linalg.norm(i1 - seat) - d)
        for b in planes:
            if b is not a:
                out.append(np.linalg.norm(_mirror(i1, b) - seat) - d)
    return np.asarray(out) / C_M_S


def _in_platform(p, margin: float = 0.0) -> bool:
    """Inside the 堂's platform grown by ``margin`` metres (shrunk when negative)."""
    tang = COURT["tang"]
    (x0, x1), (y0, y1), h = tang["x_m"], tang["y_m"], tang["height_m"]
    return (x0 - margin < p[0] < x1 + margin and y0 - margin < p[1] < y1 + margin
            and 0 < p[2] < h + margin)


def _clear(a, b, margin: float = 0.0) -> bool:
    """No point of the segment a→b (400 samples, ends excluded) inside the 堂's platform."""
    return not any(_in_platform(a + t * (b - a), margin) for t in np.linspace(0.003, 0.997, 400))


EDGE_M = 0.05        # paths grazing the 堂's edge closer than this are left undecided (diffraction)


def _ground_path(src, seat):
    """(path length m, real, hidden) of the ground reflection, found here by its own geometry:
    real — the reflection point off the 堂 and stairs, both legs clear of the platform by EDGE_M;
    hidden — the point under the 堂 or a leg through the platform deeper than EDGE_M."""
    src, seat = np.asarray(src, float), np.asarray(seat, float)
    image = src * (1, 1, -1)
    t = src[2] / (src[2] + seat[2])
    hit = image + t * (seat - image)
    hit[2] = 0.0
    tang = COURT["tang"]
    under = tang["x_m"][0] <= hit[0] <= tang["x_m"][1] and tang["y_m"][0] <= hit[1] <= tang["y_m"][1]
    stair = any(abs(hit[0] - lm["position_m"][0]) <= COURT["stairs"]["width_m"] / 2 + EDGE_M
                and lm["position_m"][1] - EDGE_M <= hit[1] <= tang["y_m"][0]
                for lm in COURT["landmark"] if lm["name"] in COURT["stairs"]["names"])
    real = not under and not stair and _clear(src, hit, EDGE_M) and _clear(hit, seat, EDGE_M)
    hidden = under or not (_clear(src, hit, -EDGE_M) and _clear(hit, seat, -EDGE_M))
    return float(np.linalg.norm(image - seat)), real, hidden


def _wall_paths(src, seat, venue):
    """[(wall name, path length m)] of the venue's walls' real first-order reflections."""
    src, seat = np.asarray(src, float), np.asarray(seat, float)
    out = []
    for w in COURT["wall"]:
        if w["venue"] != venue:
            continue
        (ax, ay), (bx, by) = w["from_m"], w["to_m"]
        n = np.array([by - ay, ax - bx, 0.0])
        n /= np.linalg.norm(n)
        q = np.array([ax, ay, 0.0])
        ds, dl = np.dot(src - q, n), np.dot(seat - q, n)
        if ds * dl <= 0:
            continue
        image = src - 2 * ds * n
        hit = image + ds / (ds + dl) * (seat - image)
        along = np.dot(hit - q, np.array([bx - ax, by - ay, 0.0])) / ((bx - ax) ** 2 + (by - ay) ** 2)
        if 0 <= along <= 1 and 0 <= hit[2] <= w["height_m"] and _clear(src, hit) and _clear(hit, seat):
            out.append((w["name"], float(np.linalg.norm(image - seat))))
    return out


def _click(seat, src, venue, name):
    p = space.placement(seat, src, SR, name, venues.load(venue))
    h = space.impulse_response(p, SR)
    return p, np.hypot(h[:, 0], h[:, 1]).astype(float)


OCTAVE_1K = signal.butter(4, [1000 / math.sqrt(2), 1000 * math.sqrt(2)], "bandpass", fs=SR, output="sos")
OCTAVE_500 = signal.butter(4, [500 / math.sqrt(2), 500 * math.sqrt(2)], "bandpass", fs=SR, output="sos")


def _drr_mid_db(p) -> float:
    """The direct sound's energy over the diffuse tail's in the 500 Hz and 1 kHz octaves (ISO
    3382-1's mid frequencies, their mean in dB; scipy's Butterworth band-passes): the tail is the
    impulse response less the placement's taps."""
    h = space.impulse_response(p, SR).astype(np.float64)
    for t in p.taps:
        h[t.lag, 0] -= t.left
        h[t.lag, 1] -= t.right
    click = np.zeros(len(h))
    click[0] = 1.0
    direct = p.taps[0].left ** 2 + p.taps[0].right ** 2
    return float(np.mean([10 * math.log10(direct * float(np.sum(signal.sosfilt(sos, click) ** 2))
                                          / float(np.sum(signal.sosfilt(sos, h, axis=0) ** 2)))
                          for sos in (OCTAVE_500, OCTAVE_1K)]))


def _reflection_coefficient(table: dict) -> float:
    return math.sqrt(1 - table["absorption"])


def _flutter_score(env: np.ndarray, skip: np.ndarray) -> float:
    """Largest normalised autocorrelation (lags 5 ms … half the span) of the detrended log energy
    envelope (2 ms frames); frames in ``skip`` (named reflections) are left out."""
    frame = int(0.002 * SR)
    n = len(env) // frame
    e = (env[:n * frame] ** 2).reshape(n, frame).sum(axis=1)
    keep = ~skip[:n * frame].reshape(n, frame).any(axis=1) & (e > 0)
    t = np.arange(n)
    y = np.log(np.where(keep, e, 1.0))
    fit = np.polyfit(t[keep], y[keep], 1)
    z = np.where(keep, y - np.polyval(fit, t), 0.0)
    z[keep] -= z[keep].mean()
    ac = np.correlate(z, z, mode="full")[n - 1:]
    ac /= ac[0]
    return float(ac[3:n // 2].max())


def test_flutter_detector_sees_a_flutter_echo():
    """The detector below fails the old ambience: 8 taps 35–300 ms after the direct sound."""
    rng = np.random.default_rng(1)
    env = np.zeros(int(0.4 * SR))
    env[0] = 1.0
    env[int(0.001 * SR):] = 0.01 * rng.random(len(env) - int(0.001 * SR)) * np.exp(
        -np.arange(len(env) - int(0.001 * SR)) / (0.08 * SR))
    for k in range(8):
        env[int((0.035 + 0.033 * k) * SR)] += 0.2 * 10 ** (-18 * k / 7 / 20)
    assert _flutter_score(env[int(0.02 * SR):], np.zeros(len(env), bool)) > 0.5


@pytest.mark.parametrize("venue", list(VENUES))
def test_click_has_only_the_named_reflections_and_a_smooth_tail(places, venue):
    seats = space.listeners()
    checked = 0
    for (name, src), seat in itertools.product(places[0], seats.values()):
        p, env = _click(seat, src, venue, name)
        direct = env[0]
        d = math.dist(src, seat.position_m)
        assert p.delay_samples == round(d / C_M_S * SR)
        assert direct == pytest.approx(1 / max(d, 1.0), rel=1e-6)        # 1/r, panned at constant power
        # every arrival after 20 ms above −20 dB re the direct sound is a named surface's reflection
        delays = _candidate_delays(src, seat.position_m, venue)
        t = np.arange(len(env)) / SR
        named = np.zeros(len(env), bool)
        for delay in delays:
            named |= np.abs(t - delay) <= WINDOW_S
        loud = (env > direct * 10 ** (-20 / 20)) & (t >= 0.020)
        assert not (loud & ~named).any(), \
            f"{name} at {src} from {seat.name} ({venue}): unnamed peaks at {t[loud & ~named][:5]} s"
        # the tail: as loud as the venue's direct-to-reverberant ratio says (6 dB less per doubling
        # of distance, at least 3 dB) at mid frequencies (ISO 3382-1 gives the ratio by octave
        # band; the tail holds nothing over 5 kHz), both ears together; peaks well under the
        # direct sound, no evenly spaced repeats
        room = next(v for v in COURT["venue"] if v["name"] == venue)
        drr = max(room["tail_drr_db_at_10m"] - 20 * math.log10(max(d, 1.0) / 10), 3.0)
        assert _drr_mid_db(p) == pytest.approx(drr, abs=1.0), (name, seat.name)
        # (autocorrelation of the tail's envelope)
        tail_end = int(0.3 * SR)
        score = _flutter_score(env[int(0.02 * SR):tail_end], named[int(0.02 * SR):tail_end])
        assert score < 0.35, f"{name} from {seat.name} ({venue}): periodic tail, autocorrelation {score:.2f}"
        # the ground reflection is there, at its delay and level, wherever its path is real
        path, real, hidden = _ground_path(src, seat.position_m)
        lag = round((path - d) / C_M_S * SR)
        ground = _reflection_coefficient(COURT["ground"]) / path
        if real and lag >= 2:
            got = env[lag - 1:lag + 2].max()
            assert 20 * math.log10(got / ground) == pytest.approx(0.0, abs=1.0), (name, seat.name)
            checked += 1
        if hidden and lag >= 2:        # none where the 堂 hides the ground
            assert env[lag - 1:lag + 2].max() < 0.5 * ground, (name, seat.name)
        for wall, wpath in _wall_paths(src, seat.position_m, venue):
            wlag = round((wpath - d) / C_M_S * SR)
            want = math.sqrt(1 - next(w for w in COURT["wall"] if w["name"] == wall)["absorption"]) / wpath
            assert env[wlag - 1:wlag + 2].max() >= want * 10 ** (-1 / 20), (name, seat.name, wall)
            checked += 1
    assert checked >= 10


def test_the_venue_follows_variant_o24(places):
    tl = places[1]
    assert venues.for_timeline(tl).venue == "郊"                  # the default, 郑玄
    names = {s.name for s in venues.for_timeline(tl).surfaces}
    assert not names & {w["name"] for w in COURT["wall"]}
    walled = dataclasses.replace(tl, ceremony=dataclasses.replace(
        tl.ceremony, variants={**tl.ceremony.variants, "houdao": VENUES["公宫"]}))
    room = venues.for_timeline(walled)
    assert room.venue == "公宫"
    assert {w["name"] for w in COURT["wall"] if w["venue"] == "公宫"} <= {s.name for s in room.surfaces}
    # and the render's plan hears it: in the 公宫 every note rings on through the longer tail, and
    # most until the 门's echo has come back (a path of over twice the 门's distance, 262 m)
    open_plan, walled_plan = (plan.plan(t, plan.Options(), space.listeners()) for t in (tl, walled))
    longer_s = ((walled_plan.ends - walled_plan.starts) - (open_plan.ends - open_plan.starts)) / SR
    t60 = {v["name"]: v["tail_t60_s"] for v in COURT["venue"]}
    open_tail_s = t60["郊"] * 36 / 60                              # cut 36 dB down
    assert (longer_s >= (t60["公宫"] - t60["郊"]) * 36 / 60 - 0.01).all()
    gate_y = min(w["to_m"][1] for w in COURT["wall"] if w["venue"] == "公宫")
    assert np.median(longer_s) > 2 * abs(gate_y) / C_M_S - 0.1 - open_tail_s


def test_drums_have_no_late_loud_echo_in_the_default_venue(places):
    """What an onset detector would take for a second stroke: no arrival ≥ −10 dB re the direct
    sound later than 30 ms, for every drum from every seat (郊, the default venue)."""
    for (name, src), seat in itertools.product(places[0], space.listeners().values()):
        if "鼓" not in name and "鼙" not in name:
            continue
        _, env = _click(seat, src, "郊", name)
        assert env[int(0.03 * SR):].max() < env[0] * 10 ** (-10 / 20), (name, seat.name)


def test_a_placements_tail_is_as_long_as_its_room_says_before_it_is_made():
    """A placement's length (what the plan reads, its tail not yet made) equals that of the tail
    when made, and the tail is the one ``diffuse_tail`` makes of the placement's arguments: for
    sources, seats, venues and sample rates drawn afresh each run (the seed printed)."""
    seed = int(np.random.SeedSequence().entropy % 2 ** 32)
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    seats = list(space.listeners().values())
    for _ in range(12):
        seat = seats[int(rng.integers(len(seats)))]
        room = venues.load(list(VENUES)[int(rng.integers(len(VENUES)))])
        sr = int(rng.choice([8000, 22050, 44100, 48000, 96000]))
        source = (float(rng.uniform(-40, 40)), float(rng.uniform(-80, 30)), float(rng.uniform(0, 4)))
        place = space.placement(seat, source, sr, seed_name="x", room=room)
        extra = place.length_extra                      # before the tail exists
        made = place.tail
        assert made.ir.shape[0] * made.factor > 0, seed
        assert extra == max(max(t.lag for t in place.taps), space.tail.length_samples(made)), seed
        again = space.tail.diffuse_tail(*place.tail_spec)
        assert np.array_equal(again.ir, made.ir) and place.tail is made, seed

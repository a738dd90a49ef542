"""``--beats-from``: 建鼓 strokes recovered from a recording by the drum finder, aligned to the
射节, drift reported.

Two recordings: one synthesised here from the compiled beats with a known drift and start (the
truth is the synthesis), and one rendered by ``yuexuan render`` (its strokes must arrive after
the plan by the sound's travel time from the drum to the listener — the distance between the
positions in the data files, read here with tomllib, over the speed of sound — and librosa's
onset detector must find the same strokes).
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from drum_support import SR, synth_drum

from yuexuan.check.drum import align, band, finder
from yuexuan.cli import main
from yuexuan.compiler import compile_file

ROOT = Path(__file__).resolve().parent.parent
CUES = str(ROOT / "cues" / "dashe.toml")
LISTENER = "宾"
# Speed of sound in dry air at θ = 20 °C: c = 331.3 m/s · √(1 + θ/273.15 °C) = 343.2 m/s (the
# ideal-gas formula of acoustics textbooks, e.g. Kinsler et al., Fundamentals of Acoustics).
SPEED_OF_SOUND_M_S = 331.3 * math.sqrt(1 + 20.0 / 273.15)


def data_position_m(path: Path, listener: str | None = None) -> tuple:
    """``position_m`` of an instrument file, or of the named ``[[listener]]`` of the courtyard
    file, read straight from the TOML."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    if listener is not None:
        data = next(x for x in data["listener"] if x["name"] == listener)
    return tuple(float(v) for v in data["position_m"])


@pytest.fixture(scope="module")
def timeline():
    return compile_file(CUES)


@pytest.fixture(scope="module")
def plan(timeline):
    return np.array([b.time for b in timeline.beats if b.cue == "lishou"])


@pytest.fixture(scope="module")
def live(tmp_path_factory, plan):
    """A live drummer 0.6 % slower than the plan with 6 ms of jitter, who began 40 ms late; the
    recorder was started 3.7 s before the planned first stroke."""
    rng = np.random.default_rng(11)
    first = plan[0] + 0.040
    truth_tl = first + (plan - plan[0]) * 1.006 + rng.normal(0, 0.006, len(plan))
    rec_start_tl = plan[0] - 3.7
    x = synth_drum(truth_tl - rec_start_tl, truth_tl[-1] - rec_start_tl + 2.0)
    path = tmp_path_factory.mktemp("drum") / "live.flac"
    sf.write(path, x, SR)
    return path, truth_tl, rec_start_tl


@pytest.fixture(scope="module")
def live_candidates(live):
    """The recording's candidate onsets (:func:`band.scan`), scanned once for the tests below."""
    return band.scan(live[0])


def test_strokes_are_recovered(live, live_candidates, plan):
    path, truth_tl, rec_start_tl = live
    al = finder.strokes(live_candidates, plan).alignment
    found = al.live_s - al.shift_s                      # the recording's clock, s
    assert len(found) == len(plan)
    assert np.abs(found - (truth_tl - rec_start_tl)).max() < 0.003     # s


def test_attack_is_the_direct_sound_not_its_reflection():
    """An envelope as a hall gives it (samples at 16 kHz, above the level before the stroke): a
    stone's onset that dies back to the floor, then the drum's direct sound rising to 3.5 over
    3 ms, a dip to 1.5, and its reflection rising to the hump's top, 8. The attack is the direct
    sound's rise through 25 % of the top (2.0, at 100 + 48 · 2/3.5 samples), not the
    reflection's after the dip, nor the stone's."""
    x = np.zeros(400)
    x[20:40] = np.linspace(0.0, 3.0, 20)                    # the stone: up to 3.0 …
    x[40:60] = np.linspace(3.0, -0.5, 20)                   # … and back under the floor
    x[100:149] = np.linspace(0.0, 3.5, 49)                  # the direct sound
    x[149:160] = np.linspace(3.5, 1.5, 11)
    x[160:261] = np.linspace(1.5, 8.0, 101)                 # the reflection, 9.4 ms later
    x[261:] = np.linspace(8.0, 2.0, 139)
    base = 0.01
    assert band.rise_start(x + base, base) == pytest.approx(100 + 48 * 2.0 / 3.5, abs=0.5)


def test_alignment_follows_a_drift_of_over_half_a_beat(live, live_candidates, plan):
    path, truth_tl, rec_start_tl = live
    al = finder.strokes(live_candidates, plan).alignment
    assert al.missed == 0 and al.extra == 0 and len(al.plan_index) == len(plan)
    assert np.array_equal(al.plan_index, al.live_index)       # k-th stroke ↔ k-th beat
    # the drift at the end (0.6 % of ~222 s ≈ 1.3 s) is over half a 2-s beat: still followed
    assert al.drift_s[-1] == pytest.approx(0.006 * (plan[-1] - plan[0]), abs=0.03)
    assert 1 / al.rate == pytest.approx(1.006, abs=3e-4)
    # without a given start, the drift is zero at the first stroke: the start is off by the
    # drummer's 40 ms late start, and no more
    assert al.shift_s == pytest.approx(rec_start_tl - 0.040, abs=0.012)
    # with the start given, the late start shows as drift
    given = finder.strokes(live_candidates, plan, start_s=rec_start_tl).alignment
    assert given.drift_s[0] == pytest.approx(0.040, abs=0.015)
    assert np.abs(given.live_s - truth_tl).max() < 0.003


def test_check_judges_by_the_live_drum(capsys, tmp_path, live, plan):
    path, truth_tl, rec_start_tl = live
    # Two shots loosed on the live drum late in the 射节, one 250 ms off it.
    k = len(plan) - 3
    rows = [f"{truth_tl[k] + 0.01:.4f},甲,士,上射,干,贯,众耦,3",
            f"{truth_tl[k + 1] - 0.02:.4f},乙,士,下射,干,贯,众耦,3",
            f"{truth_tl[k + 1] + 0.25:.4f},乙,士,下射,干,贯,众耦,3"]
    log = tmp_path / "shots.csv"
    log.write_text("time,archer,rank,role,target,result,pair,round\n" + "\n".join(rows) + "\n",
                   encoding="utf-8")
    assert main(["check", CUES, str(log), "--format", "json"]) == 0
    by_plan = json.loads(capsys.readouterr().out)
    # by the plan, the drummer's 1.3 s of drift puts them all off the drum
    assert [s["reason"] for s in by_plan["shots"]] == ["不鼓不释"] * 3
    assert main(["check", CUES, str(log), "--format", "json", "--beats-from", str(path),
                 "--audio-start", f"{rec_start_tl}"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["reason"] for s in doc["shots"]] == ["释", "释", "不鼓不释"]
    assert doc["shots"][0]["nearest_beat"] == pytest.approx(truth_tl[k], abs=0.003)
    drum = doc["drum"]
    assert drum["matched"] == len(plan) and drum["start_given"] is True
    assert drum["drift_last_s"] == pytest.approx(truth_tl[-1] - plan[-1], abs=0.003)
    assert doc["settings"]["beats_from"] == "recording"
    assert doc["tallies"] == [{"round": 3, "右": 1, "左": 1, "winner": None, "chun": 0, "qi": 0,
                               "announcement": "左右钧",
                               "announcement_en": "a tie: left and right are even",
                               "not_judged": 0}]
    # the table names the drift for people
    assert main(["check", CUES, str(log), "--beats-from", str(path)]) == 0
    out = capsys.readouterr().out
    assert "drum: 112 strokes" in out and "tempo ratio 0.99" in out


@pytest.fixture(scope="module")
def rendered(lishou_render):
    """``yuexuan render --cues lishou --stems`` from LISTENER's seat: the suite's shared render
    (tests/conftest.py; 48 kHz, which the finder reads at its own rate)."""
    return lishou_render("--listener", LISTENER)


@pytest.mark.parametrize("drum", ["建鼓·东", "建鼓·西"])
def test_drum_track_recovered_from_a_rendered_recording(rendered, timeline, plan, drum):
    stem = rendered / "stems" / f"{drum}.wav"
    start = timeline.cue("lishou").start        # the render's time 0 is the cue's start
    al = finder.find(stem, plan, start_s=start).alignment
    assert al.missed == 0 and al.extra == 0
    # every stroke arrives after the plan by the travel time from the drum to the 宾's seat
    seat = data_position_m(ROOT / "ceremony" / "courtyard.toml", listener=LISTENER)
    where = data_position_m(ROOT / "instruments" / f"{drum}.toml")
    travel = math.dist(where, seat) / SPEED_OF_SOUND_M_S
    assert 0.02 < travel < 0.06                   # s: 9 m and 18 m away (docs/check.md)
    assert np.abs(al.drift_s - travel).max() < 0.002
    assert al.rate == pytest.approx(1.0, abs=1e-5)
    # an independent detector (librosa's spectral flux) finds the same strokes, each within
    # mir_eval's 50 ms onset window
    import librosa

    y, sr = sf.read(stem, dtype="float32", always_2d=True)
    hop = round(0.008 * sr)                      # 8 ms frames
    ons = librosa.onset.onset_detect(y=y @ np.full(y.shape[1], 1 / y.shape[1], np.float32), sr=sr,
                                     hop_length=hop, units="time")
    ours = al.live_s - start
    assert np.abs(np.subtract.outer(ours, ons)).min(axis=1).max() < 0.050
    assert np.abs(np.subtract.outer(ons, ours)).min(axis=1).max() < 0.050


def _follow_written_out(plan, live, shift_s, window_s, fit_last=8, track_s=None):
    """align.follow's rule, plainly: the line refitted to the last matches before every beat."""
    import bisect
    pi, li, used = [], [], [False] * len(live)
    for i, p in enumerate(plan):
        if len(pi) >= 2:
            xs, ys = [plan[k] for k in pi[-fit_last:]], [live[k] for k in li[-fit_last:]]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            sxx = sum((x - mx) * (x - mx) for x in xs)
            pred = my + sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx * (p - mx) if sxx > 0 \
                else ys[-1] - xs[-1] + p
        else:
            pred = live[li[-1]] + (p - plan[pi[-1]]) if pi else p - shift_s
        j = bisect.bisect_left(live, pred)
        near = [k for k in (j - 1, j) if 0 <= k < len(live) and not used[k]]
        if not near:
            continue
        best = min(near, key=lambda k: (abs(live[k] - pred), k))
        reach = window_s if track_s is None or len(pi) < align.TRACKED_AFTER else min(window_s, track_s)
        if abs(live[best] - pred) <= reach:
            used[best] = True
            pi.append(i)
            li.append(best)
    return pi, li


def test_follow_matches_its_rule_written_out():
    """align.follow (its line refitted only when a match comes) against the rule written out, on
    plans, drifting and jittered strokes, strays and gaps drawn afresh (seed printed)."""
    seed = int(np.random.SeedSequence().entropy % 2 ** 32)
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(1, 80))
        plan = np.sort(rng.uniform(1000, 1300, n)) if rng.random() < 0.3 else 1000 + 2.0 * np.arange(n)
        live = np.concatenate([plan * rng.uniform(0.98, 1.02) + rng.normal(0, 0.02, n) - rng.uniform(-5, 5),
                               rng.uniform(990, 1310, int(rng.integers(0, 40)))])
        live = np.sort(live[rng.random(len(live)) > 0.2])
        args = (float(rng.uniform(-3, 3)), float(rng.uniform(0.1, 1.0)))
        kw = {"fit_last": int(rng.integers(2, 10)),
              "track_s": None if rng.random() < 0.3 else float(rng.uniform(0.05, 0.3))}
        pi, li = align.follow(plan, live, *args, **kw)
        assert (pi.tolist(), li.tolist()) == _follow_written_out(plan.tolist(), live.tolist(), *args, **kw), seed

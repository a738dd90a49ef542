"""Where a recording sits in the ceremony (issue 31): ``check --beats-from`` on recordings that start
part-way through the 射节, judged as a judge runs it.

The recording is ``yuexuan render --cues lishou`` (the physical render from the 宾's seat; its
drum is the timeline's) with pink noise 20 dB below it (a seed drawn afresh each run, printed on
failure), cut to start 10, 20 and 30 s in (WAV) and 20 s in as an MP4 with AAC (ffmpeg). Each
holds the 射节's last stroke and the silence after it: it must be placed to within 5 ms of the
cut's ceremony time less the sound's travel from the nearest 建鼓 to the seat (computed here from
the instruments' and the seat's ``position_m``; the placement takes the drum as heard to be on
the plan), and its shots judged as ``check`` without a recording judges them; shots before the
cut get ``no audio``. A cut that holds neither end of the grid (网格, periodic) is placed exactly
or said to be ambiguous, with no shot judged from it (exit 3). A 鲁鼓 render (a 投壶 score,
not periodic within a 节) cut 30 s in is placed too.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import tomllib

import numpy as np
import pytest
import soundfile as sf
from cache_support import artefact
from cli_support import DEFAULT_CUES, ROOT, run_cli
from fluid_mix import pink_noise
from system_tools import require

from yuexuan.cli import main
from yuexuan.compiler import compile_file

SEAT = "宾"
SPEED_OF_SOUND_M_S = 343.2        # dry air at 20 °C (tests/test_check_drum.py)
NOISE_BELOW_DB = 20.0
PLACED_WITHIN_S = 0.005
SR_CUT = 16000                    # the cuts are written at the finder's rate (they are resampled to it)
HEADER = "time,archer,rank,role,target,result,pair,round\n"


def _position(path, listener=None):
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if listener is not None:
        data = next(x for x in data["listener"] if x["name"] == listener)
    return tuple(float(v) for v in data["position_m"])


def travel_s() -> float:
    """The sound's travel from the nearest 建鼓 to the seat (s), from the data files."""
    seat = _position(ROOT / "ceremony" / "courtyard.toml", SEAT)
    hung = set(compile_file(DEFAULT_CUES).instruments)         # the 大射's, not another rite's
    drums = [p for p in (ROOT / "instruments").glob("*.toml") if p.stem in hung
             and tomllib.loads(p.read_text(encoding="utf-8")).get("kind") == "建鼓"]
    assert len(drums) == 3
    return min(math.dist(_position(p), seat) for p in drums) / SPEED_OF_SOUND_M_S


@pytest.fixture(scope="module")
def seed() -> int:
    return int(np.random.SeedSequence().entropy % 2 ** 32)


def noisy_mono(wav, seed: int) -> np.ndarray:
    """The render as one channel at SR_CUT, pink noise NOISE_BELOW_DB under it."""
    import librosa

    y, sr = sf.read(wav, dtype="float32", always_2d=True)
    y = librosa.resample(y.mean(axis=1), orig_sr=sr, target_sr=SR_CUT)
    rms = float(np.sqrt(np.mean(y.astype(np.float64) ** 2)))
    noise = pink_noise(len(y), np.random.default_rng(seed)) * rms * 10 ** (-NOISE_BELOW_DB / 20)
    return (y + noise).astype(np.float32)


@pytest.fixture(scope="module")
def grid(lishou_render, seed):
    """(the noisy render of the default 网格, the 射节 cue's start s)."""
    folder = lishou_render("--listener", SEAT)            # tests/conftest.py: shared, cached
    return noisy_mono(folder / "lishou.wav", seed), compile_file(DEFAULT_CUES).cue("lishou").start


@pytest.fixture(scope="module")
def timeline():
    return compile_file(DEFAULT_CUES)


def shots_around(plan: np.ndarray, k: list[int]) -> tuple[str, int]:
    """A log of 士 on their 干 (贯), each shot 10 ms inside or outside the ±70 ms tolerance of the
    planned strokes ``k``; returns the log and how many shots."""
    rows = []
    for n, i in enumerate(k):
        for d in (-0.060, 0.060, -0.080, 0.080):
            role = "上射" if (n + len(rows)) % 2 == 0 else "下射"
            rows.append(f"{plan[i] + d:.4f},士{len(rows)},士,{role},干,贯,耦{len(rows) // 2},3\n")
    return HEADER + "".join(rows), len(rows)


def judged(capsys, cues, log, *opts) -> tuple[int, dict, str]:
    code = main(["check", str(cues), str(log), "--format", "json", *map(str, opts)])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def write_cut(y: np.ndarray, cut_s: float, path, until_s: float | None = None) -> None:
    a = int(cut_s * SR_CUT)
    b = len(y) if until_s is None else int(until_s * SR_CUT)
    sf.write(path, y[a:b], SR_CUT, subtype="PCM_16")


@pytest.mark.parametrize("cut_s,container", [(10, "wav"), (20, "wav"), (30, "wav"), (20, "mp4")])
def test_a_cut_holding_the_end_is_placed_and_judged_as_the_plan(grid, timeline, tmp_path, capsys,
                                                                 seed, cut_s, container):
    y, c0 = grid
    path = tmp_path / "cut.wav"
    write_cut(y, cut_s, path)
    if container == "mp4":                          # a phone video: AAC beside a picture
        require("ffmpeg")
        mp4 = tmp_path / "phone.mp4"
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "color=c=gray:s=64x48:r=5", "-i", str(path), "-shortest", "-c:v", "mpeg4",
                        "-c:a", "aac", "-b:a", "128k", str(mp4)], check=True, timeout=120)
        path = mp4
    plan = np.array(sorted(b.time for b in timeline.beats if b.cue == "lishou"))
    start = c0 + cut_s
    inside = np.flatnonzero(plan > start + 0.5)
    before = np.flatnonzero(plan < start - 0.5)
    picks = [int(before[-1]), int(inside[0]), int(inside[len(inside) // 2]), int(inside[-1])]
    text, _ = shots_around(plan, picks)
    log = tmp_path / "shots.csv"
    log.write_text(text, encoding="utf-8")
    code, doc, err = judged(capsys, DEFAULT_CUES, log, "--beats-from", path)
    why = f"seed {seed}, cut {cut_s} s ({container}): {doc.get('drum', {}).get('placement')} {err}"
    p = doc["drum"]["placement"]
    assert not p["ambiguous"] and p["holds_shejie_end"], why
    placed = doc["drum"]["recording_starts_at_s"]
    assert abs(placed - (start - travel_s())) <= PLACED_WITHIN_S, (placed, start, why)
    # the shots on the recording are judged as by the plan; those before it are not judged
    code_plan, by_plan, _ = judged(capsys, DEFAULT_CUES, log)
    assert code_plan == 0
    got = [s["reason"] for s in doc["shots"]]
    want = [s["reason"] for s in by_plan["shots"]]
    assert want == ["释", "释", "不鼓不释", "不鼓不释"] * 4
    assert got[:4] == ["no audio"] * 4 and got[4:] == want[4:], why
    assert [s["released"] for s in doc["shots"][:4]] == [None] * 4
    assert code == 3 and doc["drum"]["not_judged_rows"] == [1, 2, 3, 4]
    t = doc["tallies"][0]
    assert t["not_judged"] == 4 and t["右"] + t["左"] == 6


def test_a_grid_cut_holding_neither_end_judges_nothing_from_it(grid, timeline, tmp_path, capsys,
                                                               seed):
    """20–80 s into the 网格: every start a whole period away fits as well; ambiguous (or, if some
    evidence tells them apart, placed exactly): no shot judged from a guess."""
    y, c0 = grid
    path = tmp_path / "middle.wav"
    write_cut(y, 20.0, path, until_s=80.0)
    plan = np.array(sorted(b.time for b in timeline.beats if b.cue == "lishou"))
    inside = np.flatnonzero((plan > c0 + 21) & (plan < c0 + 79))
    text, n = shots_around(plan, [int(inside[3]), int(inside[-3])])
    log = tmp_path / "shots.csv"
    log.write_text(text + "1100.0,士甲,士,上射,干,贯,耦九,2\n", encoding="utf-8")
    code, doc, err = judged(capsys, DEFAULT_CUES, log, "--beats-from", path)
    p = doc["drum"]["placement"]
    why = f"seed {seed}: {p} {err}"
    if p["ambiguous"]:
        assert code == 3, why
        (line,) = [x for x in err.splitlines() if "placement ambiguous" in x]   # one line
        assert "--audio-start" in line, err
        starts = [float(x) for x in re.findall(r"from (\d+\.\d+) s", line)]
        assert len(starts) == 2 and abs(starts[0] - starts[1]) >= 1.9, line   # a beat or more apart
        assert [s["reason"] for s in doc["shots"][:n]] == ["placement ambiguous"] * n
        assert all(s["released"] is None and s["nearest_beat"] is None for s in doc["shots"][:n])
        assert doc["shots"][n]["reason"] == "释"          # round 2 rests on no drum
        assert doc["tallies"][-1]["not_judged"] == n and doc["tallies"][-1]["右"] == 0
    else:
        placed = doc["drum"]["recording_starts_at_s"]
        assert abs(placed - (c0 + 20 - travel_s())) <= PLACED_WITHIN_S, why


@pytest.fixture(scope="module")
def lugu(artefact_root, tmp_path_factory, seed):
    """The 射节 under the 鲁鼓 score (variant shejie_pattern), rendered once (cached) from the
    宾's seat; the noisy mono signal, the cue sheet and the cue's start."""
    sheet = tmp_path_factory.mktemp("lugu") / "lugu.toml"
    text = DEFAULT_CUES.read_text(encoding="utf-8")
    assert re.search(r'^shejie_pattern = "', text, re.M)
    sheet.write_text(re.sub(r'^shejie_pattern = "[^"]*"', 'shejie_pattern = "鲁鼓"', text, count=1,
                            flags=re.M), encoding="utf-8")

    def build(d):
        r = run_cli("render", sheet, "--cues", "lishou", "-o", d / "lishou.wav", "--listener", SEAT,
                    timeout=600, fork=False)
        assert r.returncode == 0, r.stderr
    folder = artefact(artefact_root, "lishou-render-lugu", ("鲁鼓", SEAT), build)
    return noisy_mono(folder / "lishou.wav", seed), sheet, compile_file(sheet).cue("lishou").start


def test_a_lugu_cut_is_placed(lugu, tmp_path, capsys, seed):
    y, sheet, c0 = lugu
    path = tmp_path / "lugu.wav"
    write_cut(y, 30.0, path)
    log = tmp_path / "shots.csv"
    log.write_text(HEADER + f"{c0 + 100:.3f},士甲,士,上射,干,贯,耦,3\n", encoding="utf-8")
    code, doc, err = judged(capsys, sheet, log, "--beats-from", path)
    p = doc["drum"]["placement"]
    why = f"seed {seed}: {p} {err}"
    assert code == 0 and not p["ambiguous"], why
    assert abs(doc["drum"]["recording_starts_at_s"] - (c0 + 30 - travel_s())) <= PLACED_WITHIN_S, why
    plan = np.array([b.time for b in compile_file(sheet).beats if b.cue == "lishou"])
    # every □ after the cut; one struck at the cut itself sounds after it (the travel) and may
    # be heard, its attack at the recording's first samples
    assert (int(np.sum(plan > c0 + 30)) <= doc["drum"]["matched"]
            <= int(np.sum(plan + travel_s() > c0 + 30))), why
    assert doc["drum"]["extra"] == 0, why

"""The drum finder on recordings nobody tuned it on (issue 31 item 2): every run draws
``MEMBERS`` fresh members of tests/drum_family.py's family (seeds from the OS's entropy, the
finder's calibration seeds excluded), as many of each drum source (FluidR3's Taiko, Hydrogen's
recorded drums, the project's own render), and places and reads each as ``check --beats-from``
does without ``--audio-start``. Target on every member: every 建鼓 stroke found, no extra one,
|median error| ≤ 2 ms, p95 |error| ≤ 5 ms against the stroke's sound at the microphone.

A failing member is printed with its seed and how it was drawn; ``YX_FAMILY_SEEDS=s1,s2,…``
replays those seeds (bench/bench_drum.py ``--family N`` runs the larger family).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import drum_family as fam
import numpy as np
import pytest
from cache_support import artefact, file_digest, tool_version
from fluid_mix import seat_position_m
from system_tools import require

from yuexuan.check.drum import finder
from yuexuan.compiler import compile_file
from yuexuan.errors import UserError
from yuexuan.timeline import to_dict

ROOT = Path(__file__).resolve().parent.parent
MEMBERS = 12                   # a run's draws, MEMBERS / 3 of each source
EXCERPT_S = 24.0               # each member's length, s (planned): 11-12 strokes


@pytest.fixture(scope="module")
def family(artefact_root, lishou_render, tmp_path_factory):
    """(bank, timeline dict, plan, work folder): FluidR3's and Hydrogen's one-shots (an artefact),
    the project's from the suite's lishou render (at the default seat, 宾)."""
    require("fluidsynth", "ffmpeg")
    assert fam.SF2.exists(), f"{fam.SF2} is needed (fluid-soundfont-gm)"
    assert fam.HYDROGEN.is_dir(), f"{fam.HYDROGEN} is needed: run tests/system-deps.sh (hydrogen-drumkits)"
    parts = (file_digest(Path(fam.__file__)), file_digest(fam.SF2),
             tool_version("fluidsynth", "--version"),
             sorted(str(p.relative_to(fam.HYDROGEN)) for p in fam.HYDROGEN.glob("*/*")
                    if p.name in {Path(f).name for f in fam.HYDROGEN_DRUM + fam.HYDROGEN_BEI}))
    bank_dir = artefact(artefact_root, "drum-family-bank", parts, fam.build_bank)
    timeline = json.loads(json.dumps(to_dict(compile_file(ROOT / "cues" / "dashe.toml"))))
    bank = fam.load_bank(bank_dir, lishou_render() / "stems", timeline, seat_position_m("宾"))
    plan = np.array(sorted(b["time"] for b in timeline["beats"] if b["cue"] == fam.CUE))
    return bank, timeline, plan, tmp_path_factory.mktemp("family")


def seeds() -> list[int]:
    given = os.environ.get("YX_FAMILY_SEEDS")
    return [int(s) for s in given.split(",")] if given else fam.fresh_seeds(MEMBERS)


@pytest.fixture(scope="module")
def judged(family):
    """[(how each member was drawn, its score)]: ``MEMBERS`` fresh members, each read as
    ``check --beats-from`` reads it without ``--audio-start``."""
    bank, timeline, plan, work = family
    rows = []
    for k, seed in enumerate(seeds()):
        m = fam.draw(seed, bank, timeline, work, EXCERPT_S, fam.SOURCES[k % len(fam.SOURCES)])
        try:
            al = finder.find(m.path, plan).alignment
            r = fam.score(m, al.live_s - al.shift_s)          # on the recording's clock
        except UserError as exc:                               # refused: no drum found
            r = {"found": 0, "strokes": len(m.true_s), "extra": 0, "median_ms": None,
                 "p95_ms": None, "error": exc.message}
        rows.append((m.params, r))
        m.path.unlink()
    return rows


def report(rows) -> str:
    return "\n".join(f"  seed {p['seed']}: {json.dumps(r, ensure_ascii=False)} drawn "
                     f"{json.dumps(p, ensure_ascii=False)}" for p, r in rows)


#: issue 31 is open: the target is not met on most of the family. Until it is, a miss is reported
#: as an expected failure (pytest.xfail, with each missing member's seed: ``-rx`` shows them);
#: the drawing, placing and reading of every member must still run (a fixture or finder error
#: fails the test). Set False when the target is met.
TARGET_OPEN = ("issue 31, open: the drum finder misses the target on most of the family: "
               "bench_drum.py --family 8 on 2026-12-03, 6 of 24 fresh members meet it (FluidR3 0/8, "
               "Hydrogen 2/8, render 4/8), 10 refused, 215 of 374 strokes found (docs/check.md)")


def test_every_member_of_a_fresh_family_meets_the_target(judged):
    """Issue 31's target on every member; a miss lists each missing member and its seed."""
    assert sorted({p["source"] for p, _ in judged}) == sorted(fam.SOURCES)
    bad = [(p, r) for p, r in judged if "error" in r or not fam.meets(r)]
    why = (f"{len(bad)} of {len(judged)} members miss the target (every stroke found, no extra, "
           f"|median| ≤ 2 ms, p95 ≤ 5 ms); replay with YX_FAMILY_SEEDS="
           f"{','.join(str(p['seed']) for p, _ in bad)}\n{report(bad)}")
    if bad and TARGET_OPEN:
        pytest.xfail(f"{TARGET_OPEN}\n{why}")
    assert not bad, why

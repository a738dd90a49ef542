"""Shared fixtures: the repository paths, the compiled default ceremony, running the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CUES = ROOT / "cues" / "dashe.toml"

# The tests that need the Debian tools of tests/system-deps.sh, marked ``system`` here (not in each
# file) so that a developer without root runs the rest with ``pytest -m "not system"``; CI runs all.
# Whole modules, by file name:
SYSTEM_MODULES = {"test_fluidsynth_mts.py": "fluidsynth", "test_live_jack.py": "jackd",
                  "test_live_judge_jack.py": "jackd", "test_drum_mix.py": "fluidsynth"}
# Tests that use one of these fixtures (directly or through another fixture):
SYSTEM_FIXTURES = {"browser": "chromium", "jack": "jackd", "jack_worker": "jackd", "jack_servers": "jackd",
                   "jack_sync": "jackd", "jack_async": "jackd", "fluid_mix": "fluidsynth",
                   "phone_video": "ffmpeg, fluidsynth"}
# Single tests, by function name:
SYSTEM_TESTS = {"test_pdf_through_lilypond": "lilypond",
                "test_killed_score_pdf_keeps_the_previous_pdf": "lilypond"}


def system_tool(item) -> str | None:
    """The system tool that the collected test ``item`` needs, or None."""
    fixtures = getattr(item, "fixturenames", ())
    return (SYSTEM_MODULES.get(item.path.name)
            or next((SYSTEM_FIXTURES[f] for f in fixtures if f in SYSTEM_FIXTURES), None)
            or SYSTEM_TESTS.get(getattr(item, "originalname", item.name)))


def pytest_collection_modifyitems(config, items):
    for item in items:
        tool = system_tool(item)
        if tool:
            item.add_marker(pytest.mark.system(tool))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def default_cues() -> Path:
    return DEFAULT_CUES


@pytest.fixture(scope="session")
def ceremony():
    """The default cue sheet compiled whole."""
    from yuexuan.compiler import compile_file
    return compile_file(DEFAULT_CUES)


@pytest.fixture(scope="session")
def lishou():
    """The default cue sheet's 貍首 cue (round 3, the 射节) compiled alone."""
    from yuexuan.compiler import compile_file
    return compile_file(DEFAULT_CUES, ["lishou"])


@pytest.fixture(scope="session")
def default_timeline():
    from yuexuan.compiler import compile_file
    return compile_file(DEFAULT_CUES)


def run_cli(*args, timeout: float = 300, cwd=None, env=None) -> subprocess.CompletedProcess:
    """Run ``python -m yuexuan ARGS`` in a subprocess; text output captured."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "yuexuan", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd or ROOT, env=e)


@pytest.fixture
def cli():
    return run_cli

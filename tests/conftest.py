"""Shared fixtures: the repository paths, the compiled default ceremony, running the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CUES = ROOT / "cues" / "dashe.toml"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def default_cues() -> Path:
    return DEFAULT_CUES


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

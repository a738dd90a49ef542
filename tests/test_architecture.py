"""The package's layout holds the one data flow (issue 20): import-linter's contracts from
pyproject.toml (the stages, no import circle, the render engine a door the sound's stages know
nothing of), nothing live in the MIDI file stage, and no dead code (vulture). Files are cut where
their meaning splits, not at a line count (issue 34): what the old 400-line cap stood for — small
objects that keep out of each other's insides — is ruff's SLF001 and TID251 (pyproject.toml,
tests/test_lint.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "yuexuan"


def test_import_contracts_hold():
    """The stage order and the acyclic packages of [tool.importlinter], checked by lint-imports
    (every import counts, those inside functions too)."""
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "3 kept, 0 broken" in run.stdout, run.stdout[-1000:]


def _sources(folder: str) -> dict[Path, str]:
    return {p: p.read_text("utf-8") for p in (PACKAGE / folder).rglob("*.py")}


def test_stages_reach_only_down():
    """The issue's own greps: the compiler knows nothing of check, check and audio nothing of
    publish, and the MIDI file stage has no live port or OSC."""
    for path, text in _sources("compiler").items():
        assert "from yuexuan.check" not in text and "import yuexuan.check" not in text, path
    for folder in ("check", "audio"):
        for path, text in _sources(folder).items():
            assert "yuexuan.publish" not in text, path
    for path, text in _sources("midi").items():
        for live in ("rtmidi", "pythonosc", "yuexuan.live"):
            assert live not in text, (path, live)


def test_no_dead_code():
    """vulture finds nothing it is 80 % sure of in the package (unused imports, variables,
    arguments, unreachable code)."""
    vulture = Path(sys.executable).with_name("vulture")
    run = subprocess.run([str(vulture), str(PACKAGE), "--min-confidence", "80"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]

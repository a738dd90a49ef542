"""Interrupting compile (SIGTERM, SIGINT, SIGKILL) leaves the previous outputs intact."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_compile import scaled_sheet  # noqa: E402


@pytest.fixture(scope="module")
def big_sheet(tmp_path_factory):
    """A sheet with 100× the roster: several seconds to compile, so it can be caught mid-way."""
    p = tmp_path_factory.mktemp("big") / "big.toml"
    p.write_text(scaled_sheet((ROOT / "cues" / "dashe.toml").read_text(encoding="utf-8"), 100), encoding="utf-8")
    return p


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_killed_compile_keeps_old_outputs(big_sheet, tmp_path, sig):
    mid, js = tmp_path / "o.mid", tmp_path / "o.json"
    mid.write_bytes(b"old midi")
    js.write_bytes(b"old json")
    proc = subprocess.Popen([sys.executable, "-m", "yuexuan", "compile", str(big_sheet), "-o", str(mid),
                             "--timeline", str(js)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)                       # python start-up + parsing; the compile takes longer
    assert proc.poll() is None, "compile finished before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert mid.read_bytes() == b"old midi" and js.read_bytes() == b"old json"
    assert "Traceback" not in err
    if sig != signal.SIGKILL:             # a catchable signal also removes the temporary files
        assert sorted(p.name for p in tmp_path.iterdir()) == ["o.json", "o.mid"]

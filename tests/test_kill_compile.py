"""Interrupting compile (SIGTERM, SIGINT, SIGKILL) leaves the previous outputs intact."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
from cli_support import DEFAULT_CUES, popen, yuexuan_argv
from kill_support import POLL_S, running_for
from sheet_support import scaled_sheet


@pytest.fixture(scope="module")
def big_sheet(tmp_path_factory):
    """A sheet with 100× the roster: seconds to compile, so it can be caught mid-way."""
    p = tmp_path_factory.mktemp("big") / "big.toml"
    p.write_text(scaled_sheet(DEFAULT_CUES.read_text(encoding="utf-8"), 100), encoding="utf-8")
    return p


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_killed_compile_keeps_old_outputs(big_sheet, tmp_path, sig):
    mid, js = tmp_path / "o.mid", tmp_path / "o.json"
    mid.write_bytes(b"old midi")
    js.write_bytes(b"old json")
    proc = popen(yuexuan_argv("compile", big_sheet, "-o", mid, "--timeline", js),
                 stderr=subprocess.PIPE, text=True)
    ready = running_for(0.5)              # past python's start-up and the parsing: compiling
    while not ready(proc):
        assert proc.poll() is None, "compile finished before it could be interrupted"
        time.sleep(POLL_S)
    assert proc.poll() is None, "compile finished before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert mid.read_bytes() == b"old midi" and js.read_bytes() == b"old json"
    assert "Traceback" not in err
    if sig != signal.SIGKILL:             # a catchable signal also removes the temporary files
        assert sorted(p.name for p in tmp_path.iterdir()) == ["o.json", "o.mid"]

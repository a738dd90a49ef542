"""The package as a user gets it: a wheel installed in a fresh venv outside the checkout.

The wheel is built offline (``pip wheel --no-build-isolation --no-index``, with the setuptools of
the test extra). The fresh venv is made without pip and sees the dev venv's site-packages (numpy,
scipy, music21 …) through one ``.pth`` line, so nothing is downloaded or installed twice. A ``.pth``
line only adds a folder to ``sys.path``: the ``.pth`` files inside it, among them the editable
install's import finder that maps ``yuexuan`` to the checkout, are not run, and the venv's own
site-packages, holding the wheel's ``yuexuan``, comes first. The test asserts that.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from yuexuan.compiler import compile_file

ROOT = Path(__file__).resolve().parent.parent
# what the wheel is built from: the checkout less what is not source
NOT_SOURCE = (".git", ".venv", "out", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis")
GUIDE_FILES = {"index.html", "app.js", "style.css", "captions.vtt", "layout.svg", "timeline.json"}
# the cues the checkout compiles from its default sheet (a cue may be left out by a variant's default)
N_CUES = len(compile_file(ROOT / "cues" / "dashe.toml").cues)


def _run(cmd, cwd, timeout=600) -> subprocess.CompletedProcess:
    """Run ``cmd`` with an environment that names neither the checkout nor a data folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "YUEXUAN_DATA", "VIRTUAL_ENV")}
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return r


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv outside the checkout with the wheel of the checkout installed in it."""
    tmp = tmp_path_factory.mktemp("wheel")
    src, wheels, venv = tmp / "src", tmp / "wheels", tmp / "venv"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
          src, "-w", wheels], cwd=tmp)
    (wheel,) = wheels.glob("yuexuan-*.whl")
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp)
    (own,) = venv.glob("lib/python*/site-packages")
    (own / "dev-venv.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    _run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", "--no-deps",
          "--no-index", wheel], cwd=tmp)
    return venv


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_build(out: Path, n_cues: int, stem: str = "dashe") -> None:
    """Every output of ``yuexuan build`` is in ``out``, each read back by an independent reader."""
    import mido
    import soundfile as sf

    midi = mido.MidiFile(out / f"{stem}.mid")
    assert midi.type == 1 and sum(m.type == "note_on" and m.velocity > 0 for t in midi.tracks for m in t) > 100
    timeline = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
    assert timeline["schema"] == 3 and len(timeline["cues"]) == n_cues
    info = sf.info(str(out / f"{stem}.flac"))
    assert info.format == "FLAC" and info.channels == 2
    assert abs(info.duration - midi.length) < 30 and info.duration > 60      # s
    assert (out / f"{stem}.vtt").read_text(encoding="utf-8").startswith("WEBVTT")
    assert (out / f"{stem}.cue").read_text(encoding="utf-8").count("TRACK") == n_cues
    assert {*GUIDE_FILES, f"{stem}.flac"} <= {p.name for p in (out / "guide").iterdir()}
    assert "<audio" in (out / "guide" / "index.html").read_text(encoding="utf-8")
    assert "<score-partwise" in (out / f"{stem}.musicxml").read_text(encoding="utf-8")[:2000]
    assert "<svg" in (out / f"{stem}.svg").read_text(encoding="utf-8")[:500]


def _first_cues(sheet: str, n: int) -> str:
    """The cue sheet's text with its first ``n`` cues only (everything before the first ``[[cue]]``
    kept: the ceremony, the variants, the pairs)."""
    parts = sheet.split("\n[[cue]]\n")
    return "\n[[cue]]\n".join(parts[:n + 1]) + "\n"


@pytest.mark.system
def test_wheel_finds_its_data_and_builds_in_an_empty_folder(venv, tmp_path):
    here = tmp_path / "empty"
    here.mkdir()
    where = _run([venv / "bin" / "python", "-c", "import yuexuan.data as d; print(d.__file__); "
                  "print(d.DataSource().path('cues', 'dashe.toml'))"], cwd=here).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), where       # the wheel's, not the checkout's
    assert Path(where[1]).read_bytes() == (ROOT / "cues" / "dashe.toml").read_bytes()
    yuexuan = venv / "bin" / "yuexuan"

    # in a folder with no cues/, the sheet's path in the repository names the packaged sheet
    _run([yuexuan, "compile", "cues/dashe.toml", "-o", "out/dashe.mid", "--timeline", "out/dashe.json"],
         cwd=here)
    assert len(json.loads((here / "out" / "dashe.json").read_text(encoding="utf-8"))["cues"]) == N_CUES
    # a copy of the sheet in another folder compiles to the same MIDI and timeline
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(ROOT / "cues" / "dashe.toml", copy / "dashe.toml")
    _run([yuexuan, "compile", "dashe.toml", "-o", "out/dashe.mid", "--timeline", "out/dashe.json"],
         cwd=copy)
    assert _digest(here / "out" / "dashe.mid") == _digest(copy / "out" / "dashe.mid")
    assert json.loads((copy / "out" / "dashe.json").read_text(encoding="utf-8"))["cues"] == \
        json.loads((here / "out" / "dashe.json").read_text(encoding="utf-8"))["cues"]

    # the main job, every output, on the sheet's first three cues (the whole ceremony's build, 20 s
    # of the suite's CPU, adds nothing here: the default build's outputs are tests/conftest.py's
    # default_build, made from the checkout; README's first command is this with the whole sheet)
    (copy / "short.toml").write_text(_first_cues((ROOT / "cues" / "dashe.toml").read_text(encoding="utf-8"), 3),
                                     encoding="utf-8")
    _run([yuexuan, "build", "short.toml", "-o", "short"], cwd=copy)
    _check_build(copy / "short", 3, stem="short")

    listing = _run([yuexuan, "variants"], cwd=here).stdout
    assert "luming_sanzhong" in listing and "敖继公" in listing


@pytest.mark.system
def test_wheel_takes_a_data_folder_file_by_file(venv, tmp_path):
    data = tmp_path / "data" / "ceremony"
    data.mkdir(parents=True)
    packaged = (ROOT / "ceremony" / "variants.toml").read_text(encoding="utf-8")
    assert 'question = "O4: what 歌鹿鸣三终 means"' in packaged
    (data / "variants.toml").write_text(packaged.replace("O4: what 歌鹿鸣三终 means", "O4: 歌鹿鸣三终 (local)"),
                                        encoding="utf-8")
    listing = _run([venv / "bin" / "yuexuan", "--data", tmp_path / "data", "variants"], cwd=tmp_path).stdout
    assert "O4: 歌鹿鸣三终 (local)" in listing and "O4: what 歌鹿鸣三终 means" not in listing


def test_every_package_is_listed():
    """pyproject lists its packages (the package-dir mapping rules out discovery): none is missing."""
    from setuptools import find_packages

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    code = set(find_packages(str(ROOT), include=["yuexuan", "yuexuan.*"]))
    assert code <= listed, f"add to pyproject's [tool.setuptools] packages: {sorted(code - listed)}"

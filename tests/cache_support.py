"""Expensive test artefacts (the default build, renders, the FluidSynth mixes) made once and shared.

An artefact is a folder ``ROOT/NAME.PARTS.INPUTS``: PARTS hashes the options and tool versions its
maker names, INPUTS the package's sources and data, the installed distributions and the Python
version, so a changed input makes a new one and never reuses an old one. The first
asker builds it under a file lock (``filelock``) in a hidden folder, which is renamed into place
when complete; another asker (the other xdist worker) waits on the lock and then reads it.
ROOT is pytest's cache folder (``.pytest_cache/d/yuexuan-artefacts``: later runs reuse what is
unchanged; ``pytest --cache-clear`` starts afresh), or the run's temporary folder under
``-p no:cacheprovider``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Callable

from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
# what the package is made of (pyproject's package-dir mapping: the data folders install as
# yuexuan.data.*)
SOURCES = ("yuexuan", "instruments", "pieces", "ceremony", "cues", "pyproject.toml")


def _hash_tree(h, path: Path) -> None:
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for p in files:
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")


@functools.lru_cache(maxsize=1)
def inputs_digest() -> str:
    """The package's sources and data, the installed distributions and Python itself."""
    h = hashlib.sha256(sys.version.encode())
    for top in SOURCES:
        _hash_tree(h, ROOT / top)
    # the environment's own distributions, not sys.path's: its '' is the working directory, and a
    # test that changed it before its worker's first call saw no yuexuan.egg-info there — another
    # digest, and that worker removed the artefacts the other workers were reading
    site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions(path=site))
    h.update("\n".join(dists).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def tool_version(*argv: str) -> str:
    """What ``argv`` (e.g. ``fluidsynth --version``) prints: a tool's version for a key."""
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    return r.stdout + r.stderr


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def artefact(root: Path, name: str, parts: tuple, build: Callable[[Path], None]) -> Path:
    """The folder of artefact ``name`` made from ``parts`` (besides :func:`inputs_digest`):
    ``build(folder)`` fills an empty folder, once; later calls return the finished one. A folder
    of the same name and parts made from other inputs (older sources) is removed."""
    variant = hashlib.sha256(repr(parts).encode()).hexdigest()[:12]
    stem = f"{name}.{variant}"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{stem}.{inputs_digest()[:16]}"
    with FileLock(str(root / f".{final.name}.lock")):
        if final.is_dir():
            return final
        work = root / f".{final.name}.{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            build(work)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        os.replace(work, final)
    for old in root.iterdir():
        if old != final and re.fullmatch(rf"{re.escape(stem)}\.[0-9a-f]{{16}}", old.name):
            with FileLock(str(root / f".{old.name}.lock")):
                shutil.rmtree(old, ignore_errors=True)
            (root / f".{old.name}.lock").unlink(missing_ok=True)
    return final

"""Data read once, and every key of it checked (issue 34, item 4).

* ``render --data DIR`` takes the venue (the courtyard's reflecting surfaces) from DIR: a 堂 3 m
  high instead of 1 m renders other samples, and DIR with the packaged courtyard unchanged renders
  the very same bytes as no DIR.
* A typo in an instrument's ``[synth]`` table (``brighness``) ends the command with status 2 and one
  line naming the key, the file and its line.
* Any table of any data file with a key its reader does not know is refused likewise: a key of a
  random name is put into random tables of every kind of data file (random seed printed).
* Every key the synthesis reads of a ``[synth]`` table is one the loader accepts.
"""

from __future__ import annotations

import ast
import random
import re
import shutil
import string
from pathlib import Path

import pytest
from cli_support import DEFAULT_CUES, run_cli

from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.rite import courtyard, cuesheet, instruments, pieces, ranks, readings, suspension, variants, venue
from yuexuan.rite.synth_keys import SYNTH_KEYS

ROOT = Path(__file__).resolve().parent.parent
SHORT_CUE = "round2_zushe"          # 1.6 s, four calls: a render of a second or so


def _render(tmp_path: Path, name: str, *data: str) -> bytes:
    out = tmp_path / f"{name}.wav"
    r = run_cli(*data, "render", DEFAULT_CUES, "--cues", SHORT_CUE, "--sample-rate", "16000", "-o", out)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


def test_render_takes_the_venue_from_data(tmp_path):
    text = (ROOT / "ceremony" / "courtyard.toml").read_text("utf-8")
    assert len(re.findall(r"(?m)^height_m = 1\.0$", text)) == 1          # the 堂's, in [tang]
    same, higher = tmp_path / "same", tmp_path / "higher"
    for d, body in ((same, text), (higher, text.replace("\nheight_m = 1.0\n", "\nheight_m = 3.0\n"))):
        (d / "ceremony").mkdir(parents=True)
        (d / "ceremony" / "courtyard.toml").write_text(body, "utf-8")
    packaged = _render(tmp_path, "packaged")
    assert _render(tmp_path, "same", "--data", str(same)) == packaged
    moved = _render(tmp_path, "higher", "--data", str(higher))
    assert len(moved) == len(packaged) and moved != packaged


def test_a_synth_typo_exits_2_naming_the_key(tmp_path):
    src = ROOT / "instruments" / "瑟.toml"
    lines = src.read_text("utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("brightness ="))
    lines[at] = lines[at].replace("brightness", "brighness")
    (tmp_path / "instruments").mkdir()
    typo = tmp_path / "instruments" / "瑟.toml"
    typo.write_text("\n".join(lines) + "\n", "utf-8")
    r = run_cli("render", "--data", tmp_path, DEFAULT_CUES, "--cues", SHORT_CUE, "-o", tmp_path / "x.wav")
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"{typo}:{at + 1}:" in r.stderr and "synth.brighness" in r.stderr, r.stderr
    assert not (tmp_path / "x.wav").exists()


# -- any table of any data file -------------------------------------------------------------------

def _readers() -> dict[str, object]:
    """Each kind of data file → a function reading a file of that kind (a path, its overlay folder)."""
    known = (pieces.load_all(), instruments.load_all(), variants.load())
    return {
        "instruments": lambda p, d: instruments.load_instrument(p),
        "pieces": lambda p, d: pieces.load_piece(p),
        "courtyard.toml": lambda p, d: (courtyard.load(p), venue.load("郊", p)),
        "suspension.toml": lambda p, d: suspension.load(p),
        "variants.toml": lambda p, d: variants.load(p),
        "readings.toml": lambda p, d: readings.load(DataSource(d)),
        "dashe.toml": lambda p, d: ranks.load(str(p)),
        "cues": lambda p, d: cuesheet.parse(p, *known),
    }


def _files() -> list[tuple[str, Path]]:
    out = [("instruments", p) for p in sorted((ROOT / "instruments").glob("*.toml"))]
    out += [("pieces", p) for p in sorted((ROOT / "pieces").glob("*.toml"))]
    out += [(name, ROOT / "ceremony" / name) for name in
            ("courtyard.toml", "suspension.toml", "variants.toml", "readings.toml", "dashe.toml")]
    return [*out, ("cues", DEFAULT_CUES)]


def _tables(path: Path) -> list[int | None]:
    """Where a key can be put into a table of ``path``: after each ``[header]`` or ``[[header]]``
    line (its 0-based index), or None: at the top. Variants of one option have nothing to compare
    their own effects with (rite/variants.py), so their option tables are left out."""
    lines = path.read_text("utf-8").splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(r"\s*\[", line)]
    if path.name == "variants.toml":
        options: dict[str, list[int]] = {}
        for i in heads:
            m = re.match(r"\s*\[(\w+)\.options\.", lines[i])
            if m:
                options.setdefault(m.group(1), []).append(i)
        heads = [i for i in heads if not any(i in rows and len(rows) < 2 for rows in options.values())]
    return [None, *heads]


def test_an_unknown_key_in_any_table_is_refused(tmp_path):
    seed = random.randrange(2 ** 32)
    rng = random.Random(seed)
    readers = _readers()
    cases = [(kind, path, at) for kind, path in _files() for at in _tables(path)]
    picked = rng.sample(cases, 40)
    picked += [("instruments", p, next(i for i in _tables(p) if i is not None and
                                       p.read_text("utf-8").splitlines()[i].startswith("[synth]")))
               for p in rng.sample(sorted((ROOT / "instruments").glob("*.toml")), 3)]
    for n, (kind, path, at) in enumerate(picked):
        key = "".join(rng.choices(string.ascii_lowercase, k=8)) + "_s"
        overlay = tmp_path / str(n)
        folder = overlay / ("ceremony" if kind.endswith(".toml") else kind)
        folder.mkdir(parents=True)
        lines = path.read_text("utf-8").splitlines()
        line = 0 if at is None else at + 1                           # 0-based index of the new key
        lines.insert(line, f"{key} = 1")
        target = folder / path.name
        target.write_text("\n".join(lines) + "\n", "utf-8")
        where = f"seed {seed}: {key} in {path.name} at line {line + 1}"
        with pytest.raises(UserError) as err:
            readers[kind](target, overlay)
        assert err.value.key is not None and err.value.key.split(".")[-1] == key, (where, str(err.value))
        assert err.value.file == str(target) and err.value.line == line + 1, (where, str(err.value))
        shutil.rmtree(overlay)


# -- what the synthesis reads ---------------------------------------------------------------------

def test_every_synth_key_the_synthesis_reads_is_accepted():
    """The string keys of every ``p.get("…")``/``params.get("…")``/``synth.get("…")`` and
    ``p["…"]`` in the synthesis and the voice: each is a [synth] key of some family."""
    accepted = set().union(*SYNTH_KEYS.values())
    read = set()
    for folder in ("synthesis", "voice"):
        for path in (ROOT / "yuexuan" / "audio" / folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                target, key = None, None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr == "get" and node.args:
                    target, key = node.func.value, node.args[0]
                elif isinstance(node, ast.Subscript):
                    target, key = node.value, node.slice
                if isinstance(target, ast.Name) and target.id in ("p", "params", "synth") \
                        and isinstance(key, ast.Constant) and isinstance(key.value, str):
                    read.add(key.value)
    assert len(read) > 30, read
    assert read <= accepted, read - accepted

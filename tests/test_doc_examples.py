"""The examples of README.md and docs/*.md, run: each printed line a page shows is a line the
command prints (issue 35).

An example is a fenced ``console`` block right after ``<!-- example -->``: ``$ yuexuan …`` and
``$ python …`` lines are run, in order, in one empty folder (a word that names a file of the
repository, such as ``cues/dashe.toml``, is read from the checkout); the lines after each are its
output. A line ``…`` stands for any number of lines; ``…`` inside a line for any text. Lines shown
one after another must be printed one after another. ``<!-- example: build -->`` marks
``yuexuan build``'s example, checked against the session's cached build (``default_build``: every
file it lists is there, and nothing else); ``<!-- example: not run (why) -->`` one the test cannot
run, and says why. docs/develop.md describes the convention.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"<!-- example(?::\s*(?P<how>[^>]*?))?\s*-->\n```console\n(?P<body>.*?)\n```", re.S)


def examples() -> list[tuple[str, str, list[tuple[str, list[str]]]]]:
    """(page:line, how, [(command, expected lines)]) of every marked example."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            runs: list[tuple[str, list[str]]] = []
            for line in m.group("body").splitlines():
                if line.startswith("$ "):
                    runs.append((line[2:], []))
                elif runs:
                    runs[-1][1].append(line)
            where = f"{page.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}"
            out.append((where, (m.group("how") or "run").strip(), runs))
    return out


def _pattern(line: str) -> re.Pattern:
    return re.compile(".*?".join(re.escape(part) for part in line.rstrip().split("…")) + r"\Z")


def matches(expected: list[str], printed: list[str]) -> str | None:
    """None if ``expected`` (with its ``…`` lines and wildcards) matches ``printed``; else what failed."""
    printed = [p.rstrip() for p in printed]
    pos, gap = 0, False
    for line in expected:
        if line.strip() == "…":
            gap = True
            continue
        pat = _pattern(line)
        if gap:
            hit = next((i for i in range(pos, len(printed)) if pat.match(printed[i])), None)
        else:
            hit = pos if pos < len(printed) and pat.match(printed[pos]) else None
        if hit is None:
            return f"expected {line!r} at printed line {pos + 1}" + (" or later" if gap else "") + \
                f"; printed: {printed[pos:pos + 3]}"
        pos, gap = hit + 1, False
    if pos < len(printed) and not gap:
        return f"printed more than the page shows: {printed[pos:pos + 3]}"
    return None


def _argv(command: str) -> list[str]:
    """``command``'s words, with paths of the repository made absolute."""
    words = shlex.split(command)
    return [str(ROOT / w) if "/" in w and (ROOT / w).exists() else w for w in words]


ALL = examples()


def test_the_pages_have_examples_and_each_is_marked_with_how():
    hows = [how for _, how, _ in ALL]
    assert hows.count("run") >= 5 and "build" in hows, hows
    for where, how, runs in ALL:
        assert runs, f"{where}: an example without a `$ ` command"
        assert how in ("run", "build") or how.startswith("not run ("), f"{where}: unknown marker {how!r}"
    # a console block a reader sees as an example is marked, one way or the other
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"```console\n", text):
            assert text[:m.start()].rstrip().endswith("-->"), \
                f"{page.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}: a console block without a marker"


def test_the_matcher():
    assert matches(["a", "…", "c"], ["a", "b", "c"]) is None
    assert matches(["a", "c"], ["a", "b", "c"]) is not None          # a line left out needs …
    assert matches(["took … s"], ["took 0.9 s"]) is None
    assert matches(["took … s"], ["took 0.9 ms"]) is not None
    assert matches(["a"], ["a", "b"]) is not None and matches(["a", "…"], ["a", "b"]) is None


@pytest.mark.parametrize("where,runs", [(w, r) for w, how, r in ALL if how == "run"], ids=lambda v: str(v)
                         if isinstance(v, str) else "")
def test_example_prints_what_the_page_shows(where, runs, tmp_path, cli):
    for command, expected in runs:
        argv = _argv(command)
        if argv[0] == "yuexuan":
            r = cli(*argv[1:], cwd=tmp_path)
        else:
            assert argv[0] == "python", f"{where}: run only yuexuan and python: {command}"
            r = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True,
                               timeout=60)
        assert r.returncode == 0, f"{where}: `{command}` failed: {r.stderr}"
        problem = matches(expected, r.stdout.splitlines())
        assert problem is None, f"{where}: `{command}`: {problem}"


def test_build_example_lists_the_cached_build(default_build):
    """The files ``yuexuan build -o out`` lists are the files the suite's own build wrote."""
    blocks = [r for _, how, r in ALL if how == "build"]
    assert len(blocks) == 1 and len(blocks[0]) == 1
    command, listed = blocks[0][0]
    assert command.startswith("yuexuan build") and command.split()[-1] == "out"
    written = sorted(str(p.relative_to(default_build.parent)) for p in default_build.rglob("*") if p.is_file())
    assert sorted(listed) == written

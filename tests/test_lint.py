"""Lint and types (issue 20): `ruff check yuexuan` and `mypy yuexuan` pass at the rule set and
strictness that pyproject.toml's [tool.ruff] and [tool.mypy] document."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_ruff_finds_nothing():
    """ruff's rules over the package: no finding."""
    run = _run("ruff", "check", "--no-cache", "--output-format", "concise", "yuexuan", timeout=120)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_mypy_finds_nothing(tmp_path):
    """mypy over the package (a fresh cache, so nothing stale hides an error): no finding."""
    run = _run("mypy", "--cache-dir", str(tmp_path / "mypy-cache"), "yuexuan", timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "Success: no issues found" in run.stdout, run.stdout[-1000:]


def test_the_strictness_is_the_documented_one():
    """The settings the README and pyproject's comment promise are the ones mypy and ruff read."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    mypy = conf["tool"]["mypy"]
    for flag in ("disallow_any_generics", "disallow_untyped_defs", "disallow_incomplete_defs",
                 "check_untyped_defs", "no_implicit_optional", "strict_equality", "warn_unused_ignores"):
        assert mypy.get(flag) is True, flag
    assert set(conf["tool"]["ruff"]["lint"]["select"]) >= {"E", "F", "W", "I", "B", "UP", "SIM", "RUF"}


def _annotations(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            yield from (x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                        if x is not None and x.annotation is not None)
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def test_arrays_say_their_dtype():
    """No annotation holds a bare ``np.ndarray`` (mypy lets one pass: numpy's hints default its
    dtype to any); the package writes ``npt.NDArray[np.float64]`` and the like."""
    bare = [f"{path.relative_to(ROOT)}:{ann.lineno}"
            for path in sorted((ROOT / "yuexuan").rglob("*.py"))
            for ann in _annotations(ast.parse(path.read_text("utf-8")))
            if re.search(r"\bnp\.ndarray\b(?!\[)", ast.unparse(ann))]
    assert not bare, bare

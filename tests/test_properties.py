"""Property tests: any input either succeeds or fails with exit status 2 and one clear line —
never a traceback, a hang or a partial output file."""

from __future__ import annotations

import contextlib
import io
import re

import mido
from hypothesis import HealthCheck, given, settings
from property_support import mutated_sheet

from yuexuan import cli


def run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main([str(a) for a in argv])
    return code, err.getvalue()


@settings(max_examples=int(__import__("os").environ.get("YX_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=mutated_sheet())
def test_compile_any_sheet(tmp_path_factory, text):
    d = tmp_path_factory.mktemp("p")
    src, out, js = d / "s.toml", d / "o.mid", d / "o.json"
    src.write_text(text, encoding="utf-8")
    code, err = run(["compile", src, "-o", out, "--timeline", js])
    assert code in (0, 2)
    if code == 2:
        lines = [l for l in err.splitlines() if "warning:" not in l]
        assert len(lines) == 1 and lines[0].startswith("yuexuan compile: ") and str(src) in lines[0]
        # the line named holds the key, or is the header of its table (where no line holds it)
        where = re.match(rf"yuexuan compile: {re.escape(str(src))}:(\d+): ([^\s:]+): (.*)$", lines[0])
        if where and where.group(3) != "missing key":
            named = text.splitlines()[int(where.group(1)) - 1]
            key = re.sub(r"\[\d+\]$", "", where.group(2).split(".")[-1])
            assert key in named or named.strip().startswith("["), (lines[0], named)
        assert not out.exists() and not js.exists()
    else:
        assert mido.MidiFile(out).type == 1 and js.stat().st_size > 0
    assert not [p for p in d.iterdir() if p.name.startswith(".")]

"""Property tests: any input either succeeds or fails with exit status 2 and one clear line —
never a traceback, a hang or a partial output file."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import mido
from hypothesis import HealthCheck, given, settings, strategies as st

from yuexuan import cli

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "cues" / "dashe.toml").read_text(encoding="utf-8")
LINES = GOOD.splitlines(keepends=True)
VALUE = re.compile(r"(=\s*)([^\n#]+)")

garbage = st.one_of(
    st.integers(min_value=-10**12, max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f).replace("inf", "inf").lower()),
    st.text(alphabet="黄钟诸侯鹿鸣x.[]{}=\"' 0-9,", max_size=12).map(lambda s: f'"{s}"'),
    st.text(max_size=10),
    st.sampled_from(["true", "[]", "{}", "[1, 2]", '""', "-0.0", "1e308", "nan", "-inf"]),
)


@st.composite
def mutated_sheet(draw):
    lines = list(LINES)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["value", "delete", "duplicate", "truncate"]))
        if op == "value" and VALUE.search(lines[i]):
            lines[i] = VALUE.sub(lambda m: m.group(1) + draw(garbage), lines[i], count=1)
            if not lines[i].endswith("\n"):
                lines[i] += "\n"
        elif op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        else:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))] + "\n"
    return "".join(lines)


def run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main([str(a) for a in argv])
    return code, err.getvalue()


@settings(max_examples=int(__import__("os").environ.get("YX_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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

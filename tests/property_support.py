"""What the property tests share: the mutations of the default cue sheet and of a saved timeline,
the one-line failure they must end in, and the module-wide :class:`cli_support.CliWorker`.
``YX_EXAMPLES`` raises the example counts for a deep local run (e.g. ``YX_EXAMPLES=400``)."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

from cli_support import CliWorker
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
CUES = ROOT / "cues" / "dashe.toml"
EXAMPLES = int(os.environ.get("YX_EXAMPLES", "0")) or None
PREVIOUS = b"previous output\n"


def examples(default: int) -> int:
    """``default`` examples in CI; ``YX_EXAMPLES`` for a deep local run."""
    return EXAMPLES or default


_WORKER = None


def worker() -> CliWorker:
    """The process's shared worker (closed at exit)."""
    global _WORKER
    if _WORKER is None:
        import atexit
        _WORKER = CliWorker()
        atexit.register(_WORKER.close)
    return _WORKER


# -- the default cue sheet, mutated -------------------------------------------------------------

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



def assert_clean_failure(command: str, code, err: str, files) -> None:
    """Exit 2 with exactly one line on stderr (compiler warnings aside), naming one of
    ``files`` (or an option, such as ``--from``, given there); or exit 0. Never a traceback."""
    assert code != "traceback", err
    assert code in (0, 2), (code, err)
    assert "Traceback" not in err, err
    if code == 2:
        lines = [ln for ln in err.splitlines() if ": warning: " not in ln]
        assert len(lines) == 1, err
        assert lines[0].startswith(f"yuexuan {command}: "), err
        assert any(str(f) in lines[0] for f in files), (lines[0], files)


# -- mutated saved timelines (the JSON contract read back by check and play) ----------------------

JSON_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
                      st.lists(st.integers(), max_size=2), st.just({}))


def _like(value):
    """Values of the same JSON type as ``value``."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(-200, 10**6)
    if isinstance(value, float):
        return st.floats(-1e6, 1e12, allow_nan=False, allow_infinity=False)
    if isinstance(value, str):
        return st.one_of(st.text(max_size=6), st.sampled_from(["lishou", "round3_quhou", "建鼓·东", ""]))
    if isinstance(value, list):
        return st.just(value[:1] * 3 if value else [])
    return st.just({} if isinstance(value, dict) else value)


@st.composite
def mutated_timeline(draw, base: dict):
    """The JSON text of ``base`` (a timeline dict) with a few values replaced, keys removed,
    or the text cut short."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 3))):
        # walk down to a random container
        node = doc
        for _depth in range(4):
            keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            k = draw(st.sampled_from(keys[:40]))
            child = node[k]
            if isinstance(child, (dict, list)) and child and draw(st.booleans()):
                node = child
                continue
            op = draw(st.sampled_from(["value", "same type", "same type", "delete"]))
            if op == "value":
                node[k] = draw(JSON_JUNK)
            elif op == "same type":         # well-formed but odd: negative, huge, empty …
                node[k] = draw(_like(child))
            elif isinstance(node, dict):
                del node[k]
            else:
                node.pop(k)
            break
    text = json.dumps(doc, ensure_ascii=False)
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


@functools.lru_cache(maxsize=1)
def small_timeline() -> dict:
    """A short timeline dict (貍首's first notes and beats) to mutate."""
    from yuexuan.compiler import compile_file
    from yuexuan.timeline import to_dict
    d = to_dict(compile_file(CUES, ["round3_quhou", "lishou"]))
    d["notes"], d["beats"] = d["notes"][:12], d["beats"][:12]
    for c in d["cues"]:
        c["phrases"] = c["phrases"][:3]
    d["instruments"] = {k: d["instruments"][k] for k in list(d["instruments"])[:3]}
    return d

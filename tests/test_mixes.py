"""The two mixes (issue 29, item 1): which one a command makes, and the cue sheet's ``[ceremony]``
``mix`` key that names one."""

from __future__ import annotations

import json

from cli_support import DEFAULT_CUES, run_cli

from yuexuan.compiler import compile_file
from yuexuan.timeline import from_dict, to_dict


def _sheet(tmp_path, mix_line: str):
    text = DEFAULT_CUES.read_text(encoding="utf-8")
    assert "\ngap_seconds = " in text
    path = tmp_path / "dashe.toml"
    path.write_text(text.replace("\ngap_seconds = ", f"\n{mix_line}\ngap_seconds = ", 1), encoding="utf-8")
    return path


def test_the_mix_key_is_compiled_into_the_timeline_and_its_json(tmp_path):
    tl = compile_file(_sheet(tmp_path, 'mix = "guide"'), ["gai"])
    assert tl.ceremony.mix == "guide"
    d = json.loads(json.dumps(to_dict(tl)))
    assert d["ceremony"]["mix"] == "guide" and from_dict(d).ceremony.mix == "guide"
    plain = compile_file(DEFAULT_CUES, ["gai"])
    assert plain.ceremony.mix is None and "mix" not in to_dict(plain)["ceremony"]


def test_an_unknown_mix_is_one_line_naming_the_key(tmp_path):
    r = run_cli("compile", _sheet(tmp_path, 'mix = "loud"'), "--cues", "gai", "-o", tmp_path / "x.mid")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "ceremony.mix" in r.stderr and "seat, guide" in r.stderr and "Traceback" not in r.stderr

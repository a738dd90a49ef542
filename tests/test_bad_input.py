"""Bad cue sheets: one clear message naming the file and line or key, exit 2, nothing written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "cues" / "dashe.toml").read_text(encoding="utf-8")

def _line(fragment: str) -> str:
    """':N:' for the line of the default sheet that starts with ``fragment``."""
    n = next(i for i, l in enumerate(GOOD.splitlines(), 1) if l.startswith(fragment))
    return f":{n}:"


CASES = {
    # name: (edit of the default sheet, expected fragment of the message, expected line or key)
    "toml_syntax": (lambda t: t.replace('gap_seconds = 5.0', 'gap_seconds = = 5.0'), "TOML syntax error", _line("gap_seconds")),
    "unknown_piece": (lambda t: t.replace('piece = "新宫"', 'piece = "新宫乐"'), "unknown piece '新宫乐'", "cue[3].piece"),
    "unknown_instrument": (lambda t: t.replace('melody = ["簜"]', 'melody = ["竽"]'), "unknown instrument '竽'", "cue[3].melody"),
    "unknown_rank": (lambda t: t.replace('rank = "诸侯"', 'rank = "王"'), "unknown rank '王'", "ceremony.rank"),
    "unknown_lv": (lambda t: t.replace('gong = "黄钟"', 'gong = "黄种"'), "unknown 律 '黄种'", "ceremony.gong"),
    "negative_gap": (lambda t: t.replace('gap_seconds = 5.0', 'gap_seconds = -5.0'), "too small", "ceremony.gap_seconds"),
    "absurd_hz": (lambda t: t.replace('huangzhong_hz = 345.0', 'huangzhong_hz = 1e9'), "too large", "ceremony.huangzhong_hz"),
    "absurd_duration": (lambda t: t.replace('open_ended_seconds = 40.0', 'open_ended_seconds = 1e12'), "too large", "ceremony.open_ended_seconds"),
    "nan": (lambda t: t.replace('gap_seconds = 5.0', 'gap_seconds = nan'), "finite", "ceremony.gap_seconds"),
    "missing_key": (lambda t: t.replace('source = "「乃管新宫三终，卒管」 [001]; 郑 「管谓吹簜，以播新宫之乐，其篇亡」 [000]"\n', ''), "missing key", "cue[3].source"),
    "duplicate_id": (lambda t: t.replace('id = "ao"', 'id = "gai"'), "duplicate cue id 'gai'", "cue[34].id"),
    "duplicate_pair": (lambda t: t.replace('id = "次耦"', 'id = "上耦"'), "duplicate pair id", "pair[1].id"),
    "unknown_variant_option": (lambda t: t.replace('luming_sanzhong = "郑玄"', 'luming_sanzhong = "朱熹"'), "unknown value '朱熹'", "variants.luming_sanzhong"),
    "unknown_key": (lambda t: t.replace('zhong = 3\nsanzhong = "xingong_sanzhong"', 'zhongs = 3\nsanzhong = "xingong_sanzhong"'), "unknown key", "cue[3].zhongs"),
    "wrong_type": (lambda t: t.replace('arrow_seconds = 4.0\npair_seconds = 8.0\n\n[[cue]]\nid = "round1_zushe"', 'arrow_seconds = "four"\npair_seconds = 8.0\n\n[[cue]]\nid = "round1_zushe"'), "expected a number", "cue[7].arrow_seconds"),
    "unknown_pair_group": (lambda t: t.replace('pairs = ["三耦"]\nperformers = "三耦; 获者"', 'pairs = ["七耦"]\nperformers = "三耦; 获者"'), "no pair or group named '七耦'", "cue[7].pairs"),
    "bad_hits": (lambda t: t.replace('hits = ["x..x.x..",', 'hits = ["x..z.x..",'), "x (hit), . (miss)", "pair[0].hits"),
    "gong_as_upper": (lambda t: t.replace('upper = { name = "宾", rank = "宾" }\nlower = { host = true }', 'upper = { host = true }\nlower = { name = "宾", rank = "宾" }'), "下射", "pair[6].upper"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_cue_sheet(name, cli, tmp_path):
    edit, fragment, where = CASES[name]
    bad = edit(GOOD)
    assert bad != GOOD, "the edit must change the sheet"
    src = tmp_path / "bad.toml"
    src.write_text(bad, encoding="utf-8")
    out = tmp_path / "out.mid"
    old = tmp_path / "old.mid"
    old.write_bytes(b"previous output")
    r = cli("compile", src, "-o", out, "--timeline", tmp_path / "out.json")
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip()
    assert "Traceback" not in r.stderr and len(err.splitlines()) == 1, err
    assert str(src) in err and fragment in err and where in err, err
    assert not out.exists() and not (tmp_path / "out.json").exists()
    # overwriting an existing output with a bad sheet leaves it untouched
    r = cli("compile", src, "-o", old)
    assert r.returncode == 2 and old.read_bytes() == b"previous output"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []   # no temp files left


@pytest.mark.parametrize("content,fragment", [(b"", "a cue sheet"), (b"\x00\x01binary", "binary file"),
                                              (b"\xff\xfe[c", "not UTF-8")])
def test_empty_binary_and_non_utf8_files(content, fragment, cli, tmp_path):
    src = tmp_path / "x.toml"
    src.write_bytes(content)
    r = cli("compile", src, "-o", tmp_path / "o.mid")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert fragment in r.stderr or "missing key" in r.stderr, r.stderr


def test_missing_file_and_unknown_cue_ids(cli, tmp_path):
    r = cli("compile", tmp_path / "nope.toml", "-o", tmp_path / "o.mid")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = cli("compile", "cues/dashe.toml", "-o", tmp_path / "o.mid", "--cues", "lishou,nope")
    assert r.returncode == 2 and "unknown cue 'nope'" in r.stderr and "--cues" in r.stderr, r.stderr


def test_line_numbers_point_at_the_cue(cli, tmp_path):
    bad = GOOD.replace('piece = "骜"', 'piece = "九夏"')
    src = tmp_path / "bad.toml"
    src.write_text(bad, encoding="utf-8")
    r = cli("compile", src, "-o", tmp_path / "o.mid")
    line = int(re.search(r"bad\.toml:(\d+):", r.stderr).group(1))
    assert bad.splitlines()[line - 1].strip() == 'piece = "九夏"'


def test_missing_data_folder(cli, tmp_path):
    """--data (before or after the command) or $YUEXUAN_DATA naming no folder: one line, exit 2."""
    nope = tmp_path / "nope"
    for args, env, where in [(["--data", nope, "variants"], {}, "--data"), (["variants", "--data", nope], {}, "--data"),
                             (["variants"], {"YUEXUAN_DATA": str(nope)}, "$YUEXUAN_DATA")]:
        r = cli(*args, env=env)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        assert f"{nope}: {where}: data folder not found" in r.stderr, r.stderr


def test_bad_file_in_the_data_folder_is_named(cli, tmp_path):
    """A broken override file is reported with its own path and line, not the packaged file's."""
    inst = tmp_path / "data" / "instruments"
    inst.mkdir(parents=True)
    good = (ROOT / "instruments" / "笙钟.toml").read_text(encoding="utf-8")
    bad = good.replace("count = ", "count = = ", 1)
    assert bad != good
    (inst / "笙钟.toml").write_text(bad, encoding="utf-8")
    r = cli("--data", tmp_path / "data", "compile", "cues/dashe.toml", "-o", tmp_path / "o.mid")
    line = next(i for i, s in enumerate(bad.splitlines(), 1) if s.startswith("count = = "))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{inst / '笙钟.toml'}:{line}: TOML syntax error" in r.stderr, r.stderr
    assert not (tmp_path / "o.mid").exists()


def test_bell_whose_second_tone_is_not_among_its_partials(cli, tmp_path):
    """The bell sounds one mode per listed partial: a 侧鼓 left out would be silent, so it is refused."""
    inst = tmp_path / "data" / "instruments"
    inst.mkdir(parents=True)
    good = (ROOT / "instruments" / "颂钟.toml").read_text(encoding="utf-8")
    bad = re.sub(r"(?m)^partials = \[1, 1\.25,", "partials = [1, 1.3,", good)
    assert bad != good
    (inst / "颂钟.toml").write_text(bad, encoding="utf-8")
    r = cli("--data", tmp_path / "data", "compile", "cues/dashe.toml", "-o", tmp_path / "o.mid")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"{inst / '颂钟.toml'}" in r.stderr and "synth.partials" in r.stderr and "1.25" in r.stderr, r.stderr

"""Names typed in pinyin and pitches typed in Western names (issue 35).

Evidence: the audio a command writes for an alias is byte for byte the audio it writes for the
rite's own name (so the alias took that seat or instrument), and a Western name's 律 is checked
against the 三分损益 ratios and the equal-tempered frequency computed here, not by the package.
"""

from __future__ import annotations

import math
import random
import re
from fractions import Fraction
from pathlib import Path

import pytest
import soundfile as sf

from yuexuan.errors import UserError
from yuexuan.rite import courtyard, instruments, names

#: the twelve 律 over 黄钟 by 三分损益, written out (黄 大 太 夹 姑 仲 蕤 林 夷 南 无 应)
RATIOS = [Fraction(1), Fraction(2187, 2048), Fraction(9, 8), Fraction(19683, 16384), Fraction(81, 64),
          Fraction(177147, 131072), Fraction(729, 512), Fraction(3, 2), Fraction(6561, 4096),
          Fraction(27, 16), Fraction(59049, 32768), Fraction(243, 128)]
LV = "黄大太夹姑仲蕤林夷南无应"
LETTERS = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}


def _western_hz(name: str) -> float:
    m = re.fullmatch(r"([A-G])(#|b)?(\d)", name)
    key = 12 * (int(m.group(3)) + 1) + LETTERS[m.group(1)] + {"#": 1, "b": -1, None: 0}[m.group(2)]
    return 440.0 * 2 ** ((key - 69) / 12)


def test_aliases_fold_case_tones_and_separators():
    seats = {"宾": "bin", "公": "gong", "中庭": "zhongting"}
    for typed in ("zhongting", "Zhong-ting", "zhōngtíng", "ZHONG TING", "中庭"):
        assert names.resolve(typed, seats, "seat") == "中庭"
    assert names.folded("lǜ") == "lv" and names.folded("jiàngǔ·dōng") == "jiangudong"
    with pytest.raises(UserError) as exc:
        names.resolve("zhong", seats, "seat", key="--listener")
    assert "中庭 (zhongting)" in str(exc.value) and "--listener" in str(exc.value)
    assert names.duplicate({"甲": "jia", "乙": "Jia"}) == ("甲", "乙")
    assert names.duplicate(seats) is None


def test_every_packaged_seat_and_instrument_has_one_alias_of_its_own():
    insts = instruments.load_all()
    for table in (instruments.aliases(insts), {n: s.alias for n, s in courtyard.listeners().items()}):
        assert all(names.ALIAS.fullmatch(a) for a in table.values()), table
        assert names.duplicate(table) is None
        for name, alias in table.items():
            assert names.resolve(alias, table, "name") == name


def test_a_clashing_alias_in_a_data_folder_is_refused(tmp_path, cli):
    (tmp_path / "instruments").mkdir()
    text = Path(instruments.load_all()["颂钟"].file).read_text(encoding="utf-8")
    (tmp_path / "instruments" / "颂钟.toml").write_text(
        text.replace('alias = "songzhong"', 'alias = "shengzhong"'), encoding="utf-8")
    r = cli("note", "笙钟", "黄", "-o", tmp_path / "x.wav", "--data", tmp_path)
    assert r.returncode == 2 and "alias" in r.stderr and "颂钟.toml" in r.stderr, r.stderr
    assert not (tmp_path / "x.wav").exists()


def test_note_takes_a_western_name_and_says_which_lv(tmp_path, cli):
    """``note 笙钟 F4`` at 黄钟 345 Hz plays 黄 (F4 is 21.1 cents above it), the very note of
    ``note 笙钟 黄``; the alias ``shengzhong`` is the same instrument."""
    r = cli("note", "笙钟", "F4", "-o", tmp_path / "f4.wav")
    assert r.returncode == 0, r.stderr
    below = 1200 * math.log2(_western_hz("F4") / 345.0)
    assert f"F4 ({_western_hz('F4'):.1f} Hz) taken as 黄 (黄钟), 345.0 Hz, {below:.1f} cents below F4" \
        in r.stdout, r.stdout
    r2 = cli("note", "shengzhong", "黄", "-o", tmp_path / "huang.wav")
    assert r2.returncode == 0, r2.stderr
    a, _ = sf.read(tmp_path / "f4.wav")
    b, _ = sf.read(tmp_path / "huang.wav")
    assert a.shape == b.shape and (a == b).all()
    bad = cli("note", "笙钟", "H4", "-o", tmp_path / "h.wav")
    assert bad.returncode == 2 and "Western name" in bad.stderr and "Traceback" not in bad.stderr


def test_the_nearest_lv_of_any_western_name_at_any_huangzhong():
    """For Western names drawn afresh (seed printed), the 律 taken is the nearest of all 律 in
    all octaves, by the ratios above."""
    from yuexuan.rite.tuning import nearest_lv, parse_western
    seed = random.randrange(2 ** 32)
    rng = random.Random(seed)
    for _ in range(200):
        name = f"{rng.choice('CDEFGAB')}{rng.choice(['', '#', 'b'])}{rng.randrange(1, 8)}"
        huang = rng.uniform(200.0, 500.0)
        hz = _western_hz(name)
        pc, octave = parse_western(name)
        assert 440 * 2 ** ((12 * (octave + 1) + pc - 69) / 12) == pytest.approx(hz), (seed, name)
        pitch, off = nearest_lv(hz, huang)
        want = min(((lv, o) for lv in range(12) for o in range(-6, 7)),
                   key=lambda p: abs(math.log2(hz / (huang * float(RATIOS[p[0]]) * 2 ** p[1]))))
        assert (pitch.lv, pitch.octave) == want, (seed, name, huang)
        assert abs(off) <= 60, (seed, name, huang, off)       # the 律 are never > ~57 cents apart


def test_help_lists_the_aliases(cli):
    r = cli("note", "--help")
    assert "笙钟 (shengzhong)" in r.stdout and "建鼓·东 (jiangu-dong)" in r.stdout and "F4" in r.stdout
    r = cli("render", "--help")
    assert "中庭 (zhongting)" in " ".join(r.stdout.split()), r.stdout


def test_render_listener_by_its_pinyin(tmp_path, cli, default_cues):
    """``--listener zhongting`` renders what ``--listener 中庭`` renders, not the default seat."""
    out = {}
    for seat in ("zhongting", "中庭", None):
        path = tmp_path / f"{seat}.wav"
        args = ["render", default_cues, "--cues", "round2_zushe", "-o", path]
        r = cli(*args, *(["--listener", seat] if seat else []))
        assert r.returncode == 0, r.stderr
        out[seat], _ = sf.read(path)
    assert (out["zhongting"] == out["中庭"]).all()
    assert out["zhongting"].shape != out[None].shape or not (out["zhongting"] == out[None]).all()

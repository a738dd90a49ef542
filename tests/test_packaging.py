"""The package's data and its command table: packaged data overridden file by file by a folder
(``--data DIR`` or ``$YUEXUAN_DATA``), and the CLI importing only the command it runs."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from yuexuan.commands import COMMANDS
from yuexuan.data import DataSource
from yuexuan.rite import instruments

ROOT = Path(__file__).resolve().parent.parent
MOVED_M = (9.5, 8.25, 1.75)        # a place no packaged instrument stands at


def _data_folder(tmp_path: Path, position_m=MOVED_M) -> Path:
    """A data folder with 笙钟 moved to ``position_m`` and one instrument, 新磬, that only it has."""
    folder = tmp_path / "data" / "instruments"
    folder.mkdir(parents=True)
    text = (ROOT / "instruments" / "笙钟.toml").read_text(encoding="utf-8")
    moved = re.sub(r"(?m)^position_m = .*$", f"position_m = {list(position_m)}", text)
    assert moved != text
    (folder / "笙钟.toml").write_text(moved, encoding="utf-8")
    added = (ROOT / "instruments" / "颂磬.toml").read_text(encoding="utf-8")
    added = added.replace('name = "颂磬"', 'name = "新磬"').replace('alias = "songqing"', 'alias = "xinqing"')
    (folder / "新磬.toml").write_text(added, encoding="utf-8")
    return folder.parent


def test_folder_overrides_file_by_file(tmp_path):
    packaged = instruments.load_all(DataSource())
    ours = instruments.load_all(DataSource(_data_folder(tmp_path)))
    assert set(ours) == set(packaged) | {"新磬"}
    assert ours["笙钟"].position_m == MOVED_M and packaged["笙钟"].position_m != MOVED_M
    assert ours["笙钟"].file == str(tmp_path / "data" / "instruments" / "笙钟.toml")
    assert all(ours[n] == packaged[n] for n in packaged if n != "笙钟")       # the rest: the package's
    assert ours["新磬"].position_m == packaged["颂磬"].position_m


def test_the_packaged_files_are_the_checkouts():
    """The editable install reads the repository's own folders (the README's set-up)."""
    src = DataSource()
    for folder in ("instruments", "pieces", "ceremony", "cues"):
        assert [p.name for p in src.files(folder)] == sorted(p.name for p in (ROOT / folder).glob("*.toml"))
    assert src.path("cues", "dashe.toml").read_bytes() == (ROOT / "cues" / "dashe.toml").read_bytes()


def test_the_library_reads_the_source_it_is_given_and_no_variable(tmp_path, monkeypatch):
    """The source travels as an argument: a loader or the compiler given none reads the packaged
    data, whatever $YUEXUAN_DATA says (only the command line reads the variable)."""
    from yuexuan import data
    from yuexuan.compiler import compile_file

    folder = _data_folder(tmp_path)
    monkeypatch.setenv("YUEXUAN_DATA", str(folder))
    assert "新磬" not in instruments.load_all()
    sheet = ROOT / "cues" / "dashe.toml"
    assert compile_file(sheet, ["sixia_gong"]).instruments["笙钟"]["position_m"] != list(MOVED_M)
    ours = compile_file(sheet, ["sixia_gong"], DataSource(folder)).instruments["笙钟"]["position_m"]
    assert tuple(ours) == MOVED_M
    assert not any(hasattr(data, name) for name in ("using", "current", "_CURRENT"))


def _position(cli, tmp_path, *args, env=None) -> tuple:
    out = tmp_path / "t.json"
    r = cli(*args, "--cues", "sixia_gong", "-o", tmp_path / "t.mid", "--timeline", out, env=env)
    assert r.returncode == 0, r.stderr
    return tuple(json.loads(out.read_text(encoding="utf-8"))["instruments"]["笙钟"]["position_m"])


def test_data_option_before_or_after_the_command_and_the_variable(cli, tmp_path):
    folder = str(_data_folder(tmp_path))
    sheet = ROOT / "cues" / "dashe.toml"
    packaged = _position(cli, tmp_path, "compile", sheet, env={"YUEXUAN_DATA": ""})
    assert packaged != MOVED_M
    assert _position(cli, tmp_path, "--data", folder, "compile", sheet) == MOVED_M
    assert _position(cli, tmp_path, "compile", sheet, "--data", folder) == MOVED_M
    assert _position(cli, tmp_path, "compile", sheet, env={"YUEXUAN_DATA": folder}) == MOVED_M
    other = str(_data_folder(tmp_path / "other", (1.0, 2.0, 3.0)))
    assert _position(cli, tmp_path, "--data", folder, "compile", sheet,
                     env={"YUEXUAN_DATA": other}) == MOVED_M                      # --data wins


def test_build_defaults_to_the_packaged_cue_sheet(tmp_path):
    folder = tmp_path / "data" / "cues"
    folder.mkdir(parents=True)
    assert DataSource().path("cues", "dashe.toml") == ROOT / "cues" / "dashe.toml"
    (folder / "dashe.toml").write_text("# ours", encoding="utf-8")
    assert DataSource(tmp_path / "data").path("cues", "dashe.toml") == folder / "dashe.toml"


def test_help_lists_each_command_of_the_one_table(cli):
    r = cli("--help")
    assert r.returncode == 0
    listed = re.findall(r"(?m)^    (\w+)\s", r.stdout)
    assert listed == list(COMMANDS)
    for name, help_text in COMMANDS.items():
        r = cli(name, "--help")
        assert r.returncode == 0 and " ".join(help_text.split()[:4]) in " ".join(r.stdout.split()), name
        assert "--data DIR" in r.stdout


def test_only_the_chosen_command_is_imported():
    """Of the command modules only the chosen one (their shared helpers, commands.common, may come
    with it), and neither music21 nor scipy."""
    probe = ("import sys; from yuexuan import cli; from yuexuan.commands import COMMANDS; "
             "cli.build_parser(['variants']); "
             "print(sorted(m for m in sys.modules if m.removeprefix('yuexuan.commands.') in COMMANDS)); "
             "print(sorted(m for m in ('music21', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["['yuexuan.commands.variants']", "[]"], out


def test_no_command_module_keeps_its_own_help():
    """The help is said once, in yuexuan.commands.COMMANDS; a module's own HELP would drift from it."""
    own = [name for name in COMMANDS
           if any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "HELP" for t in node.targets)
                  for node in ast.parse((ROOT / "yuexuan" / "commands" / f"{name}.py").read_text(encoding="utf-8")).body)]
    assert own == [], f"HELP still defined in yuexuan/commands/ {own}"

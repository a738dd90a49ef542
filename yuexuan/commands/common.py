"""Arguments and steps shared by several commands."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from yuexuan.compiler import compile_path
from yuexuan.data import ENV_VAR, DataSource
from yuexuan.errors import UserError
from yuexuan.timeline import from_dict, select
from yuexuan.timeline_schema import SchemaVersionError


def data_source(args) -> DataSource:
    """The data of this run: ``--data DIR``, else ``$YUEXUAN_DATA``, else the packaged data alone.
    The one place the variable is read; each command builds its source here once and passes it on."""
    folder, where = getattr(args, "data", None), "--data"
    if not folder:
        folder, where = os.environ.get(ENV_VAR) or None, f"${ENV_VAR}"
    if folder is None:
        return DataSource()
    if not Path(folder).is_dir():
        raise UserError("data folder not found", file=str(folder), key=where)
    return DataSource(Path(folder))


def add_cues_argument(parser) -> None:
    parser.add_argument("cues_file", metavar="CUES", help="cue sheet (TOML), e.g. cues/dashe.toml")


def add_selection_argument(parser) -> None:
    parser.add_argument("--cues", metavar="ID,ID", default=None,
                        help="only these cue ids; time 0 is then the first selected cue's start")


def add_shots_argument(parser) -> None:
    parser.add_argument("--shots", metavar="LOG", default=None,
                        help="shot log (the 'yuexuan check' format, docs/check.md), times in seconds "
                             "of the compiled selection: the calls of the rounds it covers follow its "
                             "arrows instead of the cue sheet's hits strings")


def selection(args) -> list | None:
    raw = getattr(args, "cues", None)
    if raw is None:
        return None
    ids = [s.strip() for s in raw.split(",") if s.strip()]
    if not ids:
        raise UserError("--cues: expected one or more cue ids separated by commas")
    return ids


def read_timeline(path: str, command: str, cue_ids: list | None = None,
                  source: DataSource = DataSource(), shots: str | None = None,
                  warn: bool = True):
    """The Timeline of ``path``, only the cues ``cue_ids`` when given: a cue sheet compiled now
    from the data of ``source`` (those cues alone, one after another with the sheet's gap), its
    compiler warnings printed on stderr; or a saved timeline (``.json``) read back and cut to those
    cues by :func:`yuexuan.timeline.select`. Either way time 0 is the first selected cue's start.
    The one loader of every command. ``shots``: a shot log whose arrows make the calls
    (``--shots``; a cue sheet only). ``warn``: False for a second compile of the same sheet,
    whose warnings were already printed."""
    if str(path).lower().endswith(".json"):
        if shots is not None:
            raise UserError("--shots needs a cue sheet to compile, not a saved timeline", file=str(path))
        return select(_saved(path), cue_ids, file=str(path))
    log = None
    if shots is not None:
        from yuexuan.scoring.shots import read_shots

        log = read_shots(shots)
    tl, warnings = compile_path(path, cue_ids, source, log)
    for w in warnings if warn else ():
        print(f"yuexuan {command}: warning: {w}", file=sys.stderr)
    return tl


def _saved(path: str):
    """The timeline saved at ``path``; every problem a :class:`UserError` naming the file."""
    try:
        return from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UserError("no such file", file=path) from None
    except IsADirectoryError:
        raise UserError("is a folder, not a timeline JSON", file=path) from None
    except SchemaVersionError as exc:             # already a whole sentence: tell it as it is
        raise UserError(str(exc), file=path) from None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"not a yuexuan timeline JSON ({exc})", file=path) from None


def load_timeline(args, command: str, source: DataSource):
    """The Timeline of ``args.cues_file`` (with ``--cues`` and ``--shots``), through
    :func:`read_timeline`."""
    return read_timeline(args.cues_file, command, selection(args), source, getattr(args, "shots", None))

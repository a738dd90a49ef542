"""Arguments and steps shared by several commands."""

from __future__ import annotations

import sys

from yuexuan.compiler import compile_path
from yuexuan.errors import UserError


def add_cues_argument(parser) -> None:
    parser.add_argument("cues_file", metavar="CUES", help="cue sheet (TOML), e.g. cues/dashe.toml")


def add_selection_argument(parser) -> None:
    parser.add_argument("--cues", metavar="ID,ID", default=None,
                        help="compile only these cue ids; time 0 is then the first selected cue's start")


def selection(args) -> list | None:
    raw = getattr(args, "cues", None)
    if raw is None:
        return None
    ids = [s.strip() for s in raw.split(",") if s.strip()]
    if not ids:
        raise UserError("--cues: expected one or more cue ids separated by commas")
    return ids


def read_timeline(path: str, command: str, cue_ids: list | None = None):
    """The Timeline of ``path``: a saved timeline (``.json``) read back, or a cue sheet compiled
    now (only ``cue_ids`` when given), its compiler warnings printed on stderr. The one loader of
    every command."""
    if str(path).lower().endswith(".json"):
        import json
        from pathlib import Path

        from yuexuan.timeline import from_dict
        try:
            return from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise UserError("no such file", file=path) from None
        except IsADirectoryError:
            raise UserError("is a folder, not a timeline JSON", file=path) from None
        except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            raise UserError(f"not a yuexuan timeline JSON ({exc})", file=path) from None
    tl, warnings = compile_path(path, cue_ids)
    for w in warnings:
        print(f"yuexuan {command}: warning: {w}", file=sys.stderr)
    return tl


def load_timeline(args, command: str):
    """The Timeline of ``args.cues_file`` (with ``--cues``), through :func:`read_timeline`."""
    return read_timeline(args.cues_file, command, selection(args))

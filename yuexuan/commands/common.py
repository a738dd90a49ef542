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


def load_timeline(args, command: str):
    """Compile ``args.cues_file`` (with ``--cues``); print compiler warnings on stderr."""
    tl, warnings = compile_path(args.cues_file, selection(args))
    for w in warnings:
        print(f"yuexuan {command}: warning: {w}", file=sys.stderr)
    return tl

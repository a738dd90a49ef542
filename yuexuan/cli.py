"""The ``yuexuan`` command line: one sub-command per module in :mod:`yuexuan.commands`.

Each command module defines ``add_arguments(parser)`` and ``run(args) -> int``; their one-line
help is the table :data:`yuexuan.commands.COMMANDS`. ``--data DIR`` (before or after the command)
or ``$YUEXUAN_DATA`` overrides the packaged data file by file for the run (each command reads it
through :func:`yuexuan.commands.common.data_source` and passes it to the loaders). A
:class:`~yuexuan.errors.UserError` becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import signal
import sys
from types import FrameType
from typing import Any, NoReturn

from yuexuan import data
from yuexuan.commands import COMMANDS
from yuexuan.errors import EXIT_BAD_INPUT, UserError

EPILOG = ("The rite's words (律, 耦, 侯, 乏, 射节, 释获, 算, 纯/奇, the 县, the instruments and officers) "
          "in pinyin and English: docs/glossary.md, and glossary.html in every guide. Names may be "
          "typed in pinyin (yuexuan note shengzhong F4; render --listener zhongting): each command's "
          "--help lists them. The manual: README.md and docs/.")
DATA_HELP = (f"a folder laid out like the data (instruments/, pieces/, ceremony/, cues/) whose files replace "
             f"or add to the packaged ones, file by file (default: ${data.ENV_VAR})")


def _chosen(argv: list[str]) -> str | None:
    """The command named in ``argv`` (the first word not an option or --data's value)."""
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--data":
            skip = True
        elif not a.startswith("-"):
            return a if a in COMMANDS else None
    return None


def build_parser(argv: list[str] | None = None) -> tuple[argparse.ArgumentParser, dict[str, Any]]:
    """The parser; only the chosen command (first word of ``argv``) gets its full arguments."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="yuexuan",
        description="乐县: compile an archery rite's music (the 大射仪, the 乡射礼) to a timeline, MIDI, "
                    "audio, live MIDI, a guide and a score; check shots against the drum.",
        epilog=EPILOG)
    parser.add_argument("--data", metavar="DIR", default=None, help=DATA_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    runners = {}
    chosen = _chosen(argv)
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            mod = importlib.import_module(f"yuexuan.commands.{name}")
            mod.add_arguments(p)
            # SUPPRESS: absent after the command, it leaves the value given before it
            p.add_argument("--data", metavar="DIR", default=argparse.SUPPRESS, help=DATA_HELP)
            runners[name] = mod.run
    return parser, runners


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that partial outputs are removed on the way out."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; returns the exit status (2 for a user's mistake)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:              # before the command started (imports, parsing)
        print("yuexuan: interrupted", file=sys.stderr)
        return 130


def run() -> NoReturn:
    """The ``yuexuan`` program (console script and ``python -m yuexuan``): :func:`main`, then the
    interpreter's usual exit with its status (threads joined, exit handlers run, streams flushed).
    An earlier fast exit (``os._exit`` after CPython's private exit step) saved 1–2 % of a render's
    CPU (docs/render.md, "The engine behind one door") and went. The objects left are frozen
    (:func:`gc.freeze`, public) before that exit, by the program, not a library: they go with the
    process, and the interpreter's last collections no longer walk them (pypinyin's phrase table
    among them): 0.16 s less for a render of the whole ceremony, 3 % (medians of 5 pairs).
    Exit handlers (``weakref.finalize``'s included) run as before."""
    status = main()
    gc.freeze()
    raise SystemExit(status)


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser, runners = build_parser(argv)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:                        # not the main thread (embedded use): leave it
        previous = None
    try:
        if getattr(args, "cues_file", None):
            from yuexuan.commands.common import data_source, packaged_cues
            args.cues_file = packaged_cues(args.cues_file, data_source(args))
        return int(runners[args.command](args) or 0)
    except UserError as exc:
        print(f"yuexuan {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"yuexuan {args.command}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"yuexuan {args.command}: terminated; earlier outputs left as they were", file=sys.stderr)
        return 143
    except BrokenPipeError:
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)

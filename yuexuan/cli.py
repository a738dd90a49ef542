"""The ``yuexuan`` command line: one sub-command per module in :mod:`yuexuan.commands`.

Each command module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. A :class:`~yuexuan.errors.UserError` becomes one line on stderr and
exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from yuexuan.errors import EXIT_BAD_INPUT, UserError

# Sub-commands in the order ``--help`` lists them.
COMMANDS = ("build", "compile", "check", "render", "note", "play", "layout", "guide", "score",
            "variants")


def _modules():
    for name in COMMANDS:
        try:
            yield name, importlib.import_module(f"yuexuan.commands.{name}")
        except ModuleNotFoundError as exc:   # a command not built yet
            if exc.name != f"yuexuan.commands.{name}":
                raise


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    parser = argparse.ArgumentParser(
        prog="yuexuan",
        description="乐县: compile the 大射仪 music programme to a timeline, MIDI, audio, "
                    "live MIDI, a guide and a score; check shots against the drum.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    runners = {}
    for name, mod in _modules():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        runners[name] = mod.run
    return parser, runners


def main(argv: list[str] | None = None) -> int:
    parser, runners = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(runners[args.command](args) or 0)
    except UserError as exc:
        print(f"yuexuan {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"yuexuan {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1

"""The ``yuexuan`` command line: one sub-command per module in :mod:`yuexuan.commands`.

Each command module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. A :class:`~yuexuan.errors.UserError` becomes one line on stderr and
exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from yuexuan.errors import EXIT_BAD_INPUT, UserError

# Sub-commands in the order ``--help`` lists them, with their one-line help. Only the module of the
# command being run is imported (some pull in scipy or music21, which take seconds to load).
COMMANDS = {
    "build": "the main job: compile CUES and write every output (MIDI, timeline, audio, guide) into a folder",
    "compile": "compile a cue sheet to a Standard MIDI File (type 1, MTS tuning) and the timeline JSON",
    "check": "check a log of shots against the rules of 释获 (不鼓不释 …) and announce each round",
    "render": "render the rite to a stereo WAV/FLAC (−16 LUFS, ≤ −1 dBTP) with chapters and stems",
    "note": "audition one note: INSTRUMENT 律 (e.g. 笙钟 夷) as a WAV/FLAC",
    "play": "play the timeline live to a MIDI port: operator GO / soft stop / hold / panic, clock, MTC, MSC",
    "layout": "draw the courtyard (堂, stairs, the three 县, 侯道, targets, listeners) as SVG",
    "guide": "write the audio guide: a static bilingual site with audio, captions, cue list and lit layout",
    "score": "write a score (MusicXML; --pdf through LilyPond) of the selected cues, 律 and cents marked",
    "variants": "list the variants (where the commentators disagree), their options and sources",
}


def _module(name: str):
    try:
        return importlib.import_module(f"yuexuan.commands.{name}")
    except ModuleNotFoundError as exc:   # a command not built yet
        if exc.name != f"yuexuan.commands.{name}":
            raise
        return None


def _chosen(argv: list) -> str | None:
    for a in argv:
        if not a.startswith("-"):
            return a if a in COMMANDS else None
    return None


def build_parser(argv: list | None = None) -> tuple[argparse.ArgumentParser, dict]:
    """The parser; only the chosen command (first word of ``argv``) gets its full arguments."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="yuexuan",
        description="乐县: compile the 大射仪 music programme to a timeline, MIDI, audio, "
                    "live MIDI, a guide and a score; check shots against the drum.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    runners = {}
    chosen = _chosen(argv)
    for name, help_text in COMMANDS.items():
        mod = _module(name) if name == chosen else None
        if name == chosen and mod is None:
            continue
        p = sub.add_parser(name, help=help_text, description=getattr(mod, "HELP", help_text))
        if mod is not None:
            mod.add_arguments(p)
            runners[name] = mod.run
    return parser, runners


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that partial outputs are removed on the way out."""


def _on_sigterm(signum, frame):
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; returns the exit status (2 for a user's mistake)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:              # before the command started (imports, parsing)
        print("yuexuan: interrupted", file=sys.stderr)
        return 130


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

"""Arguments and steps shared by several commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from yuexuan.compiler import compile_path
from yuexuan.data import ENV_VAR, DataSource
from yuexuan.errors import UserError
from yuexuan.timeline import Timeline, from_dict, select
from yuexuan.timeline_schema import SchemaVersionError


def data_source(args: argparse.Namespace) -> DataSource:
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


def packaged_cues(name: str, source: DataSource) -> str:
    """``name`` itself if it is a file, else the data's cue sheet it names (``dashe``,
    ``dashe.toml`` or ``cues/dashe.toml``: from an installed wheel, in any folder), else ``name``
    (whose reader then says there is no such file)."""
    given = Path(name)
    if given.exists() or given.parent not in (Path("."), Path("cues")) or given.suffix not in ("", ".toml"):
        return name
    found = source.path("cues", given.with_suffix(".toml").name)
    return str(found) if found.is_file() else name


def add_cues_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cues_file", metavar="CUES", help="cue sheet (TOML), e.g. cues/dashe.toml")


def add_selection_argument(parser: argparse.ArgumentParser, help_text: str = "only these cue ids") -> None:
    """``--cues`` and ``--compact``: the one rule of a selection (:func:`read_timeline`)."""
    parser.add_argument("--cues", metavar="ID,ID", default=None,
                        help=f"{help_text}, cut from the whole ceremony: time 0 is the first "
                             "selected cue's start, the spaces between them the ceremony's")
    parser.add_argument("--compact", action="store_true",
                        help="with --cues: close the spaces between the selected cues to the cue "
                             "sheet's gap_seconds")


def add_shots_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shots", metavar="LOG", default=None,
                        help="shot log (the 'yuexuan check' format, docs/check.md), times in seconds "
                             "of the whole ceremony, as check reads them (with --cues too): the "
                             "calls of the rounds it covers follow its arrows instead of the cue "
                             "sheet's hits strings")


def selection(args: argparse.Namespace) -> list[str] | None:
    raw = getattr(args, "cues", None)
    if raw is None:
        return None
    ids = [s.strip() for s in raw.split(",") if s.strip()]
    if not ids:
        raise UserError("--cues: expected one or more cue ids separated by commas")
    return ids


def read_timeline(path: str, command: str, cue_ids: list[str] | None = None,
                  source: DataSource = DataSource(), shots: str | None = None,
                  compact: bool = False) -> Timeline:
    """The Timeline of ``path``, only the cues ``cue_ids`` when given: a cue sheet's whole
    ceremony compiled now from the data of ``source``, its compiler warnings printed on stderr;
    or a saved timeline (``.json``) read back. Either way the cues are then cut by
    :func:`yuexuan.timeline.select` (the one rule of ``--cues``): time 0 is the first selected
    cue's start, the spaces between them the ceremony's unless ``compact`` (``--compact``) closes
    them to the sheet's gap, and the cut records its place in the ceremony (``selection``). The
    one loader of every command. ``shots``: a shot log, in the whole ceremony's seconds, whose
    arrows make the calls (``--shots``; a cue sheet only)."""
    if str(path).lower().endswith(".json"):
        if shots is not None:
            raise UserError("--shots needs a cue sheet to compile, not a saved timeline", file=str(path))
        return select(_saved(path, source), cue_ids, file=str(path), compact=compact)
    log = None
    if shots is not None:
        from yuexuan.scoring.shots import read_shots

        log = read_shots(shots)
    tl, warnings = compile_path(path, cue_ids, source, log, compact)
    for w in warnings:
        print(f"yuexuan {command}: warning: {w}", file=sys.stderr)
    return tl


def _saved(path: str, source: DataSource) -> Timeline:
    """The timeline saved at ``path``; every problem a :class:`UserError` naming the file."""
    try:
        tl = from_dict(json.loads(Path(path).read_text(encoding="utf-8")), file=path)
    except UserError:                             # a cross-check (timeline_checks): file and field named
        raise
    except FileNotFoundError:
        raise UserError("no such file", file=path) from None
    except IsADirectoryError:
        raise UserError("is a folder, not a timeline JSON", file=path) from None
    except SchemaVersionError as exc:             # already a whole sentence: tell it as it is
        raise UserError(str(exc), file=path) from None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"not a yuexuan timeline JSON ({exc})", file=path) from None
    _known_variants(tl, source, path)
    _readable_lyrics(tl, path)
    return tl


def _readable_lyrics(tl: Timeline, path: str) -> None:
    """Every syllable of a saved timeline can be read, by the voices' own reading
    (:func:`yuexuan.audio.voice.takes.reading_of`: one character, or pinyin with a tone number;
    the render would stop on another; the compiler writes none)."""
    from yuexuan.audio.voice.takes import reading_of

    read: set[str] = set()
    for i, n in enumerate(tl.notes):
        if not n.lyric or n.lyric in read:
            continue
        try:
            reading_of(n.lyric)
        except (ValueError, UserError) as exc:
            why = exc.message if isinstance(exc, UserError) else str(exc)
            raise UserError(f"expected a syllable: one character, or pinyin with a tone number (nuo4); "
                            f"{why}", file=path, key=f"notes[{i}].lyric") from None
        read.add(n.lyric)


def _known_variants(tl: Timeline, source: DataSource, path: str) -> None:
    """The readings a saved timeline chose are variants and options of the data (``check`` and the
    courtyard apply their effects); the one cross-check that needs the data (the others:
    :mod:`yuexuan.timeline_checks`)."""
    from yuexuan.rite import variants

    known = variants.load(source=source)
    for key, option in tl.ceremony.variants.items():
        if key not in known:
            raise UserError(f"unknown variant {key!r:.40}; expected one of: {', '.join(known)}",
                            file=path, key="ceremony.variants")
        if option not in known[key]["options"]:
            raise UserError(f"unknown option {option!r:.40}; expected one of: "
                            f"{', '.join(known[key]['options'])}", file=path,
                            key=f"ceremony.variants[{key!r}]")


def load_timeline(args: argparse.Namespace, command: str, source: DataSource) -> Timeline:
    """The Timeline of ``args.cues_file`` (with ``--cues``, ``--compact`` and ``--shots``), through
    :func:`read_timeline`."""
    return read_timeline(args.cues_file, command, selection(args), source, getattr(args, "shots", None),
                         bool(getattr(args, "compact", False)))

"""``yuexuan score CUES -o OUT.musicxml [--cues ID,ID] [--pdf]``: the performers' score."""

from __future__ import annotations

import argparse
from pathlib import Path

from yuexuan.commands.common import add_cues_argument, add_selection_argument, data_source, load_timeline
from yuexuan.commands.progress import Progress
from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.publish import score
from yuexuan.timeline import Timeline


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_cues_argument(parser)
    parser.add_argument("-o", "--output", required=True, metavar="OUT.musicxml",
                        help="MusicXML file to write")
    add_selection_argument(parser)
    parser.add_argument("--pdf", action="store_true",
                        help="also engrave OUT.pdf with LilyPond (needs the Debian package lilypond)")


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.is_dir():
        raise UserError("is a directory; expected a .musicxml file path", file=str(out), key="-o")
    if args.pdf and not score.lilypond_available():
        raise UserError("--pdf needs LilyPond (Debian package 'lilypond': lilypond and musicxml2ly)",
                        key="--pdf")
    s = score.build_score(load_timeline(args, "score", data_source(args)))   # with --cues: only those
    score.write_musicxml(s, out)
    print(f"{out}: MusicXML, {len(s.parts)} parts")
    if args.pdf:
        print(f"{score.write_pdf(out, out.with_suffix('.pdf'))}: PDF engraved by LilyPond")
    return 0


def build_step(timeline: Timeline, cues_path: str | Path, out_dir: str | Path, source: DataSource,
               progress: Progress | None = None, mix: str | None = None) -> list[Path]:
    """For ``yuexuan build``: ``out_dir/<stem>.musicxml``, the score of the whole ceremony
    (``mix`` is the audio's, given to every step; the score does not depend on it)."""
    out = Path(out_dir) / f"{Path(cues_path).stem}.musicxml"
    score.write_musicxml(score.build_score(timeline), out)
    if progress:
        progress.stage(f"score written ({out.name})")
    return [out]

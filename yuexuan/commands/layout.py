"""``yuexuan layout CUES -o OUT.svg``: the courtyard drawing with every instrument labelled."""

from __future__ import annotations

import argparse
from pathlib import Path

from yuexuan import atomic
from yuexuan.commands.common import add_cues_argument, data_source, load_timeline
from yuexuan.commands.progress import Progress
from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.publish import drawing
from yuexuan.rite import courtyard
from yuexuan.rite.courtyard import Courtyard
from yuexuan.timeline import Timeline


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_cues_argument(parser)
    parser.add_argument("-o", "--output", required=True, metavar="OUT.svg", help="SVG file to write")


def build_svg(timeline: Timeline, court: Courtyard) -> str:
    """The drawing of ``timeline``'s instruments in the courtyard ``court``."""
    c = timeline.ceremony
    title = f"{c.name} 乐县与侯道 · {c.rank} {c.suspension} · the music suspension and the target range"
    return drawing.layout_svg(timeline.instruments, court, title)


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.is_dir():
        raise UserError("is a directory; expected an .svg file path", file=str(out), key="-o")
    source = data_source(args)
    timeline = load_timeline(args, "layout", source)
    court = courtyard.for_timeline(timeline, source)
    atomic.write_text(out, build_svg(timeline, court))
    print(f"{out}: the courtyard drawing (SVG), {len(timeline.instruments)} instruments, "
          f"{len(court.targets)} targets, {len(court.listeners)} listener seats")
    return 0


def build_step(timeline: Timeline, cues_path: str | Path, out_dir: str | Path, source: DataSource,
               progress: Progress | None = None, mix: str | None = None) -> list[Path]:
    """For ``yuexuan build``: ``out_dir/<stem>.svg``, the drawing in the rite's courtyard
    (``mix`` is the audio's, given to every step; the drawing does not depend on it)."""
    out = Path(out_dir) / f"{Path(cues_path).stem}.svg"
    atomic.write_text(out, build_svg(timeline, courtyard.for_timeline(timeline, source)))
    if progress:
        progress.stage(f"layout written ({out.name})")
    return [out]

"""``yuexuan score CUES -o OUT.musicxml [--cues ID,ID] [--pdf]``: the performers' score."""

from __future__ import annotations

from pathlib import Path

from yuexuan import score
from yuexuan.commands.layout import timeline_for
from yuexuan.errors import UserError

HELP = "write a score (MusicXML; --pdf through LilyPond) of the selected cues, 律 and cents marked"


def add_arguments(parser) -> None:
    parser.add_argument("cues", metavar="CUES", help="cue sheet (TOML), or a saved timeline (.json)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.musicxml", help="MusicXML file to write")
    parser.add_argument("--cues", dest="cue_ids", metavar="ID,ID",
                        help="only these cues (comma-separated ids); default every cue with notes")
    parser.add_argument("--pdf", action="store_true",
                        help="also engrave OUT.pdf with LilyPond (needs the Debian package lilypond)")


def run(args) -> int:
    out = Path(args.output)
    if out.is_dir():
        raise UserError("is a directory; expected a .musicxml file path", file=str(out), key="-o")
    ids = [s.strip() for s in args.cue_ids.split(",") if s.strip()] if args.cue_ids else None
    if args.cue_ids is not None and not ids:
        raise UserError("expected cue ids separated by commas", key="--cues")
    if args.pdf and not score.lilypond_available():
        raise UserError("--pdf needs LilyPond (Debian package 'lilypond': lilypond and musicxml2ly)",
                        key="--pdf")
    timeline = timeline_for(args.cues)
    s = score.build_score(timeline, ids)
    score.write_musicxml(s, out)
    if args.pdf:
        score.write_pdf(out, out.with_suffix(".pdf"))
    return 0

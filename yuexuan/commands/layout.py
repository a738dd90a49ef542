"""``yuexuan layout CUES -o OUT.svg``: the courtyard drawing with every instrument labelled."""

from __future__ import annotations

import json
from pathlib import Path

from yuexuan import atomic, drawing
from yuexuan.errors import UserError
from yuexuan.timeline import Timeline, from_dict

HELP = "draw the courtyard (堂, stairs, the three 县, 侯道, targets, listeners) as SVG"


def add_arguments(parser) -> None:
    parser.add_argument("cues", metavar="CUES", help="cue sheet (TOML), or a saved timeline (.json)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.svg", help="SVG file to write")


def timeline_for(path: str | Path, cue_ids: list | None = None) -> Timeline:
    """Compile the cue sheet at ``path`` (or read a saved timeline JSON), optionally only ``cue_ids``."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        try:
            tl = from_dict(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise UserError("no such file", file=str(path)) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError(f"not a yuexuan timeline JSON ({exc})", file=str(path)) from None
        if cue_ids:
            known = {c.id for c in tl.cues}
            bad = [c for c in cue_ids if c not in known]
            if bad:
                raise UserError(f"unknown cue {bad[0]!r}; the timeline has: {', '.join(sorted(known))}",
                                file=str(path), key="--cues")
        return tl
    from yuexuan.compiler import compile_file     # the one compiler; imported when needed
    return compile_file(str(path), cue_ids)


def build_svg(timeline: Timeline) -> str:
    """The drawing of ``timeline``'s instruments in the courtyard."""
    c = timeline.ceremony
    title = f"大射仪 乐县与侯道 · {c.rank} {c.suspension} · the music suspension and the target range"
    return drawing.layout_svg(timeline.instruments, drawing.load_courtyard(), title)


def run(args) -> int:
    out = Path(args.output)
    if out.is_dir():
        raise UserError("is a directory; expected an .svg file path", file=str(out), key="-o")
    atomic.write_text(out, build_svg(timeline_for(args.cues)))
    return 0

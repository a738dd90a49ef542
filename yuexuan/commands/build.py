"""``yuexuan build``: the main job — every output of a cue sheet into one folder."""

from __future__ import annotations

import importlib
from pathlib import Path

from yuexuan import cli
from yuexuan.commands.common import add_cues_argument, load_timeline
from yuexuan.midi.smf import write_smf
from yuexuan.timeline import save_json

HELP = "the main job: compile CUES and write every output (MIDI, timeline, audio, guide) into a folder"


def add_arguments(p) -> None:
    add_cues_argument(p)
    p.add_argument("-o", "--out-dir", required=True, metavar="DIR", help="output folder, e.g. out")


def run(args) -> int:
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tl = load_timeline(args, "build")
    stem = Path(args.cues_file).stem
    mid, js = out / f"{stem}.mid", out / f"{stem}.json"
    write_smf(tl, mid)
    save_json(tl, js)
    written = [mid, js]
    for name in cli.COMMANDS:
        if name in ("build", "compile"):
            continue
        try:
            mod = importlib.import_module(f"yuexuan.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"yuexuan.commands.{name}":
                raise
            continue
        step = getattr(mod, "build_step", None)
        if step is not None:
            written += list(step(tl, Path(args.cues_file), out) or [])
    for p in written:
        print(p)
    return 0

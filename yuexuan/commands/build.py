"""``yuexuan build``: the main job — every output of a cue sheet into one folder."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from yuexuan.audio.mixes import GUIDE
from yuexuan.commands import BUILD_STEPS
from yuexuan.commands.common import add_shots_argument, data_source, load_timeline
from yuexuan.commands.progress import Progress
from yuexuan.commands.render import add_mix_argument
from yuexuan.data import DEFAULT_CUES
from yuexuan.midi.smf import write_smf
from yuexuan.timeline import save_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("cues_file", metavar="CUES", nargs="?", default=None,
                   help=f"cue sheet (TOML); default: the packaged cues/{DEFAULT_CUES} "
                        f"(or DIR/cues/{DEFAULT_CUES} of --data DIR)")
    p.add_argument("-o", "--out-dir", required=True, metavar="DIR", help="output folder, e.g. out")
    add_shots_argument(p)
    add_mix_argument(p, GUIDE)


def run(args: argparse.Namespace) -> int:
    source = data_source(args)
    if args.cues_file is None:
        args.cues_file = str(source.path("cues", DEFAULT_CUES))
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    progress = Progress("build")        # on a terminal: a line per stage, the bar while rendering
    tl = load_timeline(args, "build", source)
    stem = Path(args.cues_file).stem
    mid, js = out / f"{stem}.mid", out / f"{stem}.json"
    write_smf(tl, mid)
    save_json(tl, js)
    progress.stage("MIDI and timeline written")
    written = [mid, js]
    for name in BUILD_STEPS:
        step = importlib.import_module(f"yuexuan.commands.{name}").build_step
        written += list(step(tl, Path(args.cues_file), out, source, progress=progress, mix=args.mix) or [])
    for p in written:
        print(p)
    return 0

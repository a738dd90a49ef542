"""``yuexuan compile``: cue sheet → Standard MIDI File (and the timeline JSON)."""

from __future__ import annotations

import argparse

from yuexuan.commands import common
from yuexuan.midi.smf import write_smf
from yuexuan.timeline import save_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_cues_argument(p)
    p.add_argument("-o", "--output", required=True, metavar="OUT.mid", help="MIDI file to write")
    p.add_argument("--timeline", metavar="OUT.json", help="also write the timeline JSON (docs/timeline.md)")
    common.add_selection_argument(p)
    common.add_shots_argument(p)
    p.add_argument("--pitch-bend", action="store_true",
                   help="per-channel pitch bends instead of MTS tuning SysEx (synths without MTS)")


def run(args: argparse.Namespace) -> int:
    tl = common.load_timeline(args, "compile", common.data_source(args))
    write_smf(tl, args.output, pitch_bend=args.pitch_bend)
    if args.timeline:
        save_json(tl, args.timeline)
    cues = f"{len(tl.cues)} cue" + ("" if len(tl.cues) == 1 else "s")
    print(f"{args.output}: {cues}, {len(tl.notes)} notes, {len(tl.beats)} 射节 beats, "
          f"{tl.duration:.1f} s")
    if args.timeline:
        print(f"{args.timeline}: the timeline (JSON)")
    return 0

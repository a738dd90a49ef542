"""``yuexuan render CUES -o OUT.wav|OUT.flac``: the rite as sound, with stems and chapter sidecars."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from yuexuan.audio import mixes
from yuexuan.audio.engine import render
from yuexuan.audio.engine.gain_envelope import GainEnvelope
from yuexuan.audio.engine.plan import Plan
from yuexuan.audio.mixes import guide as guide_mix
from yuexuan.commands.common import (
    add_cues_argument,
    add_selection_argument,
    add_shots_argument,
    data_source,
    load_timeline,
)
from yuexuan.commands.progress import Progress
from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.rite import courtyard, names
from yuexuan.rite.courtyard import Listener
from yuexuan.rite.vocabulary import MIXES
from yuexuan.timeline import Timeline


def add_mix_argument(p: argparse.ArgumentParser, default: str) -> None:
    """``--mix seat|guide`` (docs/render.md, "Two mixes"); ``default``: the command's own."""
    p.add_argument("--mix", choices=MIXES, default=None,
                   help="seat: what a person at that seat would hear (sources at their physical "
                        "levels); guide: produced for a listener to follow (speech levelled, the "
                        "rest ducked under the calls, each cue's music and song levelled). Default: "
                        f"the cue sheet's [ceremony] mix, else {default}")


def envelopes(mix: str, seat: Listener) -> Callable[[Timeline, Plan], Sequence[GainEnvelope]] | None:
    """What :attr:`render.Options.envelopes` takes for ``mix`` heard at ``seat``."""
    return guide_mix.envelopes_for(seat) if mix == mixes.GUIDE else None


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_cues_argument(p)
    p.add_argument("-o", "--output", required=True, metavar="OUT.flac",
                   help="audio file to write (.wav or .flac); OUT.vtt and OUT.cue are written beside it")
    add_selection_argument(p)
    add_shots_argument(p)
    p.add_argument("--stems", metavar="DIR", help="also write one file per instrument into DIR, "
                   "named as in the timeline (e.g. DIR/建鼓·东.flac), aligned with the mix")
    p.add_argument("--sample-rate", type=int, default=48000, metavar="HZ", help="default 48000")
    add_mix_argument(p, mixes.SEAT)
    seats = courtyard.listeners()        # the packaged seats (a --data folder may add its own)
    p.add_argument("--listener", default=next(iter(seats)), metavar="SEAT",
                   help="where the rite is heard from, by name or its pinyin alias: "
                        + "; ".join(f"{n} ({s.alias}): {s.english}" if s.alias else f"{n}: {s.english}"
                                    for n, s in seats.items())
                        + f" (default {next(iter(seats))})")


def run(args: argparse.Namespace) -> int:
    render.output_format(args.output)
    source = data_source(args)
    bar = Progress("render")
    try:
        tl = load_timeline(args, "render", source)      # with --cues: only those, from time 0
        seats = courtyard.for_timeline(tl, source).seats()          # the rite's courtyard
        listener = names.resolve(args.listener, {n: s.alias for n, s in seats.items()}, "listener seat",
                                 key="--listener")
        mix = mixes.chosen(args.mix, tl.ceremony.mix, mixes.SEAT)
        opts = render.Options(sample_rate=args.sample_rate, listener=listener,
                              envelopes=envelopes(mix, seats[listener]))
        t0 = time.perf_counter()
        try:
            rep = render.render(tl, args.output, opts, stems_dir=args.stems, progress=bar,
                                listener_table=seats, data=source)
        except OSError as exc:          # a folder where the file should go, no permission, disk full
            where = str(exc.filename2 or exc.filename or args.output)
            if Path(where).name.startswith("."):          # our temporary file: name the target
                where = args.output
            raise UserError(f"cannot write: {exc.strerror or exc}", file=where) from None
        dt = time.perf_counter() - t0
    finally:
        bar.done()
    print(f"{rep.path}: {rep.duration_s:.1f} s, {rep.notes} notes, {rep.loudness_lufs:.2f} LUFS, "
          f"true peak {rep.true_peak_dbtp:.2f} dBTP, rendered in {dt:.1f} s "
          f"({rep.duration_s / max(dt, 1e-9):.0f}× real time), the {mix} mix")
    for p in rep.sidecars + rep.stems:
        print(p)
    return 0


def render_announced(timeline: Timeline, target: Path, seats: dict[str, Listener], source: DataSource,
                     progress: Progress | None = None, mix: str | None = None) -> render.Report:
    """Render ``timeline`` to ``target`` (with its chapter sidecars) heard from the default seat of
    ``seats`` in the venue of ``source``, in the ``mix`` given (``--mix``), else the cue sheet's,
    else the guide mix (build's and guide's default); ``progress`` (build's or guide's) draws the
    bar and a line before and after."""
    seat = render.Options().listener
    opts = render.Options(envelopes=envelopes(mixes.chosen(mix, timeline.ceremony.mix, mixes.GUIDE),
                                              seats[seat]))
    if progress is None:
        return render.render(timeline, target, opts, listener_table=seats, data=source)
    progress.stage("rendering the audio…")
    try:
        rep = render.render(timeline, target, opts, listener_table=seats, progress=progress, data=source)
    finally:
        progress.done()
    progress.stage(f"audio written ({Path(target).name})")
    return rep


def build_step(timeline: Timeline, cues_path: str | Path, out_dir: str | Path, source: DataSource,
               progress: Progress | None = None, mix: str | None = None) -> list[Path]:
    """For ``yuexuan build``: ``out_dir/<stem>.flac`` with its ``.vtt`` and ``.cue`` chapters,
    heard from the seats of ``source``'s courtyard in ``mix`` (build's ``--mix``; else the cue
    sheet's, else the guide mix); ``progress``: build's bar and stage lines."""
    target = Path(out_dir) / f"{Path(cues_path).stem}.flac"
    seats = courtyard.for_timeline(timeline, source).seats()
    rep = render_announced(timeline, target, seats, source, progress, mix)
    return [Path(rep.path)] + [Path(p) for p in rep.sidecars]

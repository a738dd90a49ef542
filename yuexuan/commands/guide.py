"""``yuexuan guide CUES -o DIR [--audio FILE]``: the audio guide, a static site that needs no network."""

from __future__ import annotations

import argparse
from pathlib import Path

import soundfile as sf

from yuexuan.audio.mixes import GUIDE
from yuexuan.audio.synthesis import synth
from yuexuan.commands.common import (
    add_cues_argument,
    add_selection_argument,
    add_shots_argument,
    data_source,
    load_timeline,
)
from yuexuan.commands.progress import Progress
from yuexuan.commands.render import add_mix_argument, render_announced
from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.publish import guide
from yuexuan.rite import courtyard
from yuexuan.timeline import Timeline


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_cues_argument(parser)
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write the site into")
    parser.add_argument("--audio", metavar="FILE",
                        help="the rendered ceremony (FLAC, WAV, Ogg, MP3); copied beside the page. "
                             "Without it the ceremony is rendered to OUT/<CUES stem>.flac")
    add_selection_argument(parser)
    add_shots_argument(parser)
    parser.add_argument("--no-audio", action="store_true",
                        help="write the page without audio (a notice; the time slider still works)")
    add_mix_argument(parser, GUIDE)


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UserError("exists and is not a folder", file=str(out), key="-o")
    if args.audio and args.no_audio:
        raise UserError("give either --audio FILE or --no-audio, not both", key="--no-audio")
    if args.mix and (args.audio or args.no_audio):
        raise UserError("--mix chooses the mix of the audio the guide renders; with "
                        f"{'--audio FILE' if args.audio else '--no-audio'} it renders none", key="--mix")
    audio = None
    if args.audio:
        audio = Path(args.audio)
        if not audio.is_file():
            raise UserError("no such audio file", file=str(audio), key="--audio")
        if audio.suffix.lower() not in guide.AUDIO_TYPES:
            raise UserError(f"unknown audio type {audio.suffix!r}; expected one of "
                            f"{', '.join(sorted(guide.AUDIO_TYPES))}", file=str(audio), key="--audio")
    source = data_source(args)
    timeline = load_timeline(args, "guide", source)
    if audio is not None:
        audio_of_the_selection(audio, timeline.duration)
    court = courtyard.for_timeline(timeline, source)
    progress = Progress("guide")        # on a terminal: the bar while rendering, a line per stage
    if audio is None and not args.no_audio:
        audio = out / f"{Path(args.cues_file).stem}.flac"
        render_announced(timeline, audio, court.seats(), source, progress, args.mix)
    written = guide.write_site(timeline, out, audio, court=court, source=source)
    progress.stage(f"site written ({out / 'index.html'})")
    cues = f"{len(timeline.cues)} cue" + ("" if len(timeline.cues) == 1 else "s")
    print(f"{out / 'index.html'}: the audio guide, {cues}, {len(written)} files in {out}"
          + (" (no audio: --no-audio)" if audio is None else f" (audio: {audio.name})"))
    return 0


#: what a render adds after its selection's end: the longest ring-out (a bell's 9 s, capped) and the
#: room's latest arrival and tail (the 公宫's gate echo, 0.76 s; the tail, 0.8 s), s
RING_OUT_S = max(synth.RING_CAP_S.values()) + 1.0
LENGTH_SLACK_S = 2.0            # the audio may be this much shorter, or longer besides the ring-out


def audio_of_the_selection(audio: Path, selection_s: float) -> None:
    """Refuse (one line naming both lengths) audio whose length is not the selection's: shorter by
    more than LENGTH_SLACK_S or longer by more than that plus RING_OUT_S (another selection's
    render: its captions and header would name times the player never reaches)."""
    try:
        seconds = sf.info(str(audio)).duration
    except (RuntimeError, sf.LibsndfileError):
        return                          # a format libsndfile does not read (m4a, opus): not checked
    if selection_s - LENGTH_SLACK_S <= seconds <= selection_s + LENGTH_SLACK_S + RING_OUT_S:
        return
    raise UserError(f"the audio is {_clock(seconds)} ({seconds:.1f} s) long but the selection is "
                    f"{_clock(selection_s)} ({selection_s:.1f} s), with up to "
                    f"{LENGTH_SLACK_S + RING_OUT_S:.0f} s of ring-out: render the same cue sheet and "
                    f"--cues, or give --no-audio", file=str(audio), key="--audio")


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def build_step(timeline: Timeline, cues_path: str | Path, out_dir: str | Path, source: DataSource,
               progress: Progress | None = None, mix: str | None = None) -> list[Path]:
    """For ``yuexuan build``: write ``out_dir/guide/``, with the render step's audio if it wrote one
    (in build's ``mix``: the render step's); ``progress``: build's stage lines."""
    out_dir = Path(out_dir)
    stem = Path(cues_path).stem
    audio = next((out_dir / f"{stem}{ext}" for ext in guide.AUDIO_TYPES
                  if (out_dir / f"{stem}{ext}").is_file()),
                 None)
    written = guide.write_site(timeline, out_dir / "guide", audio,
                               court=courtyard.for_timeline(timeline, source), source=source)
    if progress:
        progress.stage(f"guide written ({out_dir / 'guide' / 'index.html'})")
    return written

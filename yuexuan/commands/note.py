"""``yuexuan note INSTRUMENT 律 -o OUT.wav``: audition one note of one instrument (sound design, tests)."""

from __future__ import annotations

import argparse

import numpy as np
import soundfile as sf

from yuexuan import atomic
from yuexuan.audio.engine.output import output_format
from yuexuan.audio.synthesis import synth
from yuexuan.audio.voice import ensemble, takes
from yuexuan.commands.common import data_source
from yuexuan.errors import UserError
from yuexuan.rite import instruments
from yuexuan.rite.tuning import parse_pitch

DEFAULT_HZ = 345.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("instrument", metavar="INSTRUMENT",
                   help="instrument name as in instruments/*.toml, e.g. 笙钟")
    p.add_argument("lv", metavar="律", help="pitch: 黄 大 太 夹 姑 仲 蕤 林 夷 南 无 应 (or 黄钟 …), "
                   "清 for an octave up, 浊 down; ignored for drums")
    p.add_argument("-o", "--output", required=True, metavar="OUT.wav", help=".wav or .flac")
    p.add_argument("--octave", type=int, default=0, metavar="N", help="octaves above the instrument's own")
    p.add_argument("--velocity", type=int, default=100, metavar="V", help="1..127, default 100")
    p.add_argument("--duration", type=float, default=1.5, metavar="S",
                   help="held length for pipe and voice, s (struck bodies ring out)")
    p.add_argument("--huangzhong", type=float, default=DEFAULT_HZ, metavar="HZ",
                   help=f"黄钟 in Hz (default {DEFAULT_HZ}, as cues/dashe.toml)")
    p.add_argument("--lyric", metavar="SYLLABLE",
                   help="syllable for a voice: a character (read in modern Mandarin) or pinyin with a "
                        "tone number, e.g. 好 or hao3")
    p.add_argument("--voices", type=int, metavar="N",
                   help="singers of a voice heard together, unplaced (default: the instrument's count "
                        "for an ensemble, else 1; 1 = one dry singer)")
    p.add_argument("--sample-rate", type=int, default=48000, metavar="HZ")


def run(args: argparse.Namespace) -> int:
    fmt, subtype = output_format(args.output)
    insts = instruments.load_all(data_source(args))
    if args.instrument not in insts:
        raise UserError(f"unknown instrument {args.instrument!r}; one of {', '.join(insts)}")
    inst = insts[args.instrument]
    if not 1 <= args.velocity <= 127:
        raise UserError("velocity must be 1..127", key="--velocity")
    if not 0.01 <= args.duration <= 60:
        raise UserError("duration must be 0.01..60 s", key="--duration")
    if not 8000 <= args.sample_rate <= 192000:
        raise UserError("sample rate must be 8000..192000 Hz", key="--sample-rate")
    if not 20 <= args.huangzhong <= 2000:
        raise UserError("黄钟 must be 20..2000 Hz", key="--huangzhong")
    hz = None
    if inst.pitched:
        pitch = parse_pitch(args.lv).transpose(args.octave)
        hz = pitch.hz(args.huangzhong * 2 ** inst.octave)
        if not 10 <= hz <= 0.45 * args.sample_rate:
            raise UserError(f"{pitch.name} on {inst.name} is {hz:.1f} Hz, outside what can be synthesised")
    seed = synth.seed_of(inst.name, hz, args.velocity)
    if inst.family == "voice":
        count = args.voices if args.voices is not None else \
            (inst.count if ensemble.is_ensemble(inst.family, inst.synth, inst.count) else 1)
        if not 1 <= count <= 64:
            raise UserError("voices must be 1..64", key="--voices")
        try:
            reading = takes.reading_of(args.lyric)
        except ValueError as exc:
            raise UserError(str(exc), key="--lyric") from None
        x = takes.dry_ensemble(inst.synth, reading, hz, args.velocity, args.duration, args.sample_rate,
                               seed, inst.name, count)
    else:
        if args.voices is not None:
            raise UserError(f"{inst.name} is not a voice", key="--voices")
        x = synth.note(inst.family, inst.synth, hz, args.velocity, args.duration, args.sample_rate,
                       seed=seed, lyric=args.lyric)
    x = x * np.float32(10 ** (-1 / 20) * synth.velocity_gain(args.velocity)
                       / max(1e-9, float(np.abs(x).max())))
    try:
        with atomic.atomic_path(args.output) as tmp:
            sf.write(tmp, x, args.sample_rate, subtype=subtype, format=fmt)
    except OSError as exc:
        raise UserError(f"cannot write: {exc.strerror or exc}", file=str(args.output)) from None
    what = f"{hz:.3f} Hz" if hz else "unpitched"
    print(f"{args.output}: {inst.name} ({inst.family}) {what}, {len(x) / args.sample_rate:.2f} s")
    return 0

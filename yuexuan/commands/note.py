"""``yuexuan note INSTRUMENT 律 -o OUT.wav``: audition one note of one instrument (sound design, tests).

INSTRUMENT is a name of instruments/*.toml or its pinyin alias (``shengzhong``); 律 a 律 name or a
Western pitch name (``F4``, ``Bb``), for which the nearest 律 at the given 黄钟 is played and named."""

from __future__ import annotations

import argparse

import numpy as np
import numpy.typing as npt
import soundfile as sf

from yuexuan import atomic, pronunciation
from yuexuan.audio.engine import filter_kernel
from yuexuan.audio.engine.output import output_format
from yuexuan.audio.synthesis import source_level, synth
from yuexuan.audio.voice import ensemble, takes
from yuexuan.commands.common import data_source
from yuexuan.compiler import prosody
from yuexuan.errors import UserError
from yuexuan.rite import instruments, names
from yuexuan.rite.cuesheet_speech import SYLLABLE_S, slots
from yuexuan.rite.tuning import LV_FULL, Pitch, nearest_lv, parse_pitch, parse_western, western_name

DEFAULT_HZ = 345.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("instrument", metavar="INSTRUMENT",
                   help="instrument name as in instruments/*.toml or its pinyin alias: "
                        + names.listing(instruments.aliases(instruments.load_all())))
    p.add_argument("lv", metavar="律", help="pitch: 黄 大 太 夹 姑 仲 蕤 林 夷 南 无 应 (or 黄钟 …), "
                   "清 for an octave up, 浊 down; or a Western name (F4, C#5, Bb: A4 = 440 Hz), which "
                   "takes the nearest 律 and says which (黄钟 = F4 −21 cents at 345 Hz); ignored for drums. "
                   "The words: docs/glossary.md")
    p.add_argument("-o", "--output", required=True, metavar="OUT.wav", help=".wav or .flac")
    p.add_argument("--octave", type=int, default=None, metavar="N",
                   help="octaves above the instrument's own (default 0; not with a Western name's octave)")
    p.add_argument("--velocity", type=int, default=100, metavar="V", help="1..127, default 100")
    p.add_argument("--duration", type=float, default=1.5, metavar="S",
                   help="held length for pipe and voice, s (struck bodies ring out)")
    p.add_argument("--huangzhong", type=float, default=DEFAULT_HZ, metavar="HZ",
                   help=f"黄钟 in Hz (default {DEFAULT_HZ}, as cues/dashe.toml)")
    p.add_argument("--lyric", metavar="SYLLABLE",
                   help="syllable for a voice: a character (read in modern Mandarin) or pinyin with a "
                        "tone number, e.g. 好 or hao3; for a speaking voice also a formula (不鼓不释, "
                        "a pause at punctuation), said with the compiler's prosody a slot of "
                        f"{SYLLABLE_S} s a syllable")
    p.add_argument("--voices", type=int, metavar="N",
                   help="singers of a voice heard together, unplaced (default: the instrument's count "
                        "for an ensemble, else 1; 1 = one dry singer)")
    p.add_argument("--sample-rate", type=int, default=48000, metavar="HZ")


def _spoken(inst: instruments.Instrument, args: argparse.Namespace) -> npt.NDArray[np.float32]:
    """A speaking voice's ``--lyric`` said as the compiler lays it out (:mod:`yuexuan.compiler.prosody`):
    one syllable held ``--duration``, or a formula a slot of :data:`SYLLABLE_S` a syllable."""
    lyric = args.lyric or ""
    try:
        if lyric.isascii():                       # pinyin (or nothing): one syllable
            readings = [takes.reading_of(lyric)]
            said = prosody.utterance(["?"], args.duration / prosody.FILL, readings)
        else:
            chars = slots(lyric)
            step = args.duration / prosody.FILL if len(chars) == 1 else SYLLABLE_S
            readings = list(pronunciation.read_line("".join(c for c in chars if c)))
            said = prosody.utterance(chars, step, readings)
    except ValueError as exc:
        raise UserError(str(exc), key="--lyric") from None
    lines = [(r, s.onset_s, s.duration_s, s.f0_st) for r, s in zip(readings, said)]
    sr = args.sample_rate
    return takes.dry_line(inst.synth, lines, args.velocity, sr, synth.seed_of(inst.name, None, args.velocity),
                          inst.name, lambda x: source_level.level_normalised(x, sr))


def run(args: argparse.Namespace) -> int:
    fmt, subtype = output_format(args.output)
    insts = instruments.load_all(data_source(args))
    inst = insts[names.resolve(args.instrument, instruments.aliases(insts), "instrument")]
    if not 1 <= args.velocity <= 127:
        raise UserError("velocity must be 1..127", key="--velocity")
    if not 0.01 <= args.duration <= 60:
        raise UserError("duration must be 0.01..60 s", key="--duration")
    if not 8000 <= args.sample_rate <= 192000:
        raise UserError("sample rate must be 8000..192000 Hz", key="--sample-rate")
    if not 20 <= args.huangzhong <= 2000:
        raise UserError("黄钟 must be 20..2000 Hz", key="--huangzhong")
    hz, taken = None, ""
    if inst.pitched:
        pitch, taken = _pitch(args.lv, args.octave, args.huangzhong * 2 ** inst.octave)
        hz = pitch.hz(args.huangzhong * 2 ** inst.octave)
        if not 10 <= hz <= 0.45 * args.sample_rate:
            raise UserError(f"{pitch.name} on {inst.name} is {hz:.1f} Hz, outside what can be synthesised")
    with filter_kernel.in_force():         # the render engine's filter kernel (SciPy's own loop)
        x = _sound(inst, hz, args)
    x = x * np.float32(10 ** (-1 / 20) * synth.velocity_gain(args.velocity)
                       / max(1e-9, float(np.abs(x).max())))
    try:
        with atomic.atomic_path(args.output) as tmp:
            sf.write(tmp, x, args.sample_rate, subtype=subtype, format=fmt)
    except OSError as exc:
        raise UserError(f"cannot write: {exc.strerror or exc}", file=str(args.output)) from None
    what = f"{hz:.3f} Hz" if hz else "unpitched"
    if taken:
        print(taken)
    print(f"{args.output}: {inst.name} ({inst.family}) {what}, {len(x) / args.sample_rate:.2f} s")
    return 0


def _sound(inst: instruments.Instrument, hz: float | None,
           args: argparse.Namespace) -> npt.NDArray[np.float32]:
    """The note (or the spoken or sung syllables) as the arguments ask, dry."""
    seed = synth.seed_of(inst.name, hz, args.velocity)
    if inst.family == "voice":
        count = args.voices if args.voices is not None else \
            (inst.count if ensemble.is_ensemble(inst.family, inst.synth, inst.count) else 1)
        if not 1 <= count <= 64:
            raise UserError("voices must be 1..64", key="--voices")
        if hz is None:
            return _spoken(inst, args)
        try:
            reading = takes.reading_of(args.lyric)
        except ValueError as exc:
            raise UserError(str(exc), key="--lyric") from None
        return takes.dry_ensemble(inst.synth, reading, hz, args.velocity, args.duration, args.sample_rate,
                                  seed, inst.name, count)
    if args.voices is not None:
        raise UserError(f"{inst.name} is not a voice", key="--voices")
    return synth.note(inst.family, inst.synth, hz, args.velocity, args.duration, args.sample_rate,
                      seed=seed, lyric=args.lyric)


def _pitch(text: str, octave: int | None, own_huangzhong_hz: float) -> tuple[Pitch, str]:
    """The :class:`Pitch` (relative to the instrument's own octave, whose 黄 sounds at
    ``own_huangzhong_hz``) that ``text`` names, and for a Western name the line saying which 律 it
    took. A Western name without an octave is taken in the instrument's own octave."""
    western = parse_western(text)
    if western is None:
        try:
            return parse_pitch(text).transpose(octave or 0), ""
        except UserError as exc:
            raise UserError(f"{exc.message}; or a Western name such as F4 (A4 = 440 Hz)") from None
    pc, w_octave = western
    if w_octave is not None and octave is not None:
        raise UserError("give the octave in the Western name (F4) or with --octave, not both", key="--octave")
    if w_octave is None:            # in the octave of the instrument's own 黄 … 应 (half a semitone's margin)
        low = own_huangzhong_hz * 2 ** (-50 / 1200)
        key = 60 + pc
        while _key_hz(key) < low:
            key += 12
        while _key_hz(key) >= 2 * low:
            key -= 12
        key += 12 * (octave or 0)
    else:
        key = 12 * (w_octave + 1) + pc
    pitch, off = nearest_lv(_key_hz(key), own_huangzhong_hz)
    name, side = western_name(key), "below" if off > 0 else "above"
    return pitch, (f"{name} ({_key_hz(key):.1f} Hz) taken as {pitch.name} ({LV_FULL[pitch.lv]}), "
                   f"{pitch.hz(own_huangzhong_hz):.1f} Hz, {abs(off):.1f} cents {side} {name} "
                   f"(this instrument's 黄 = {own_huangzhong_hz:.1f} Hz)")


def _key_hz(key: int) -> float:
    """Equal-tempered frequency of MIDI key ``key`` (A4 = 69 = 440 Hz)."""
    return float(440.0 * 2 ** ((key - 69) / 12))

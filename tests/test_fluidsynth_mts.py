"""FluidSynth (Debian fluidsynth + fluid-soundfont-gm) plays our MIDI with the MTS tuning in effect."""

from __future__ import annotations

import math
import shutil
import subprocess

import mido
import numpy as np
import pytest
import soundfile as sf

from yuexuan.midi.smf import write_smf
from yuexuan.rite.tuning import hz_to_midi, parse_pitch
from yuexuan.timeline import Ceremony, Cue, Note, Timeline

SF2 = "/usr/share/sounds/sf2/FluidR3_GM.sf2"
HZ0 = 345.0
SEG_S = 2.5


def _timeline():
    notes = []
    for i, lv in enumerate(["黄", "应", "夷"]):
        hz = parse_pitch(lv).hz(HZ0)
        key, cents = hz_to_midi(hz)
        notes.append(Note(0.5 + i * SEG_S, SEG_S - 0.5, "管", "t", key, hz, 100, lv, cents))
    cue = Cue("t", "test", "奏", 0.0, 0.5 + 3 * SEG_S, ("管",), False, "「test」", beat_s=SEG_S)
    return Timeline(Ceremony("t", "诸侯", "轩县", HZ0), (cue,), tuple(notes), (),
                    {"管": {"gm_program": 19}})      # church organ: a steady, harmonic tone


def _render(mid, wav):
    assert shutil.which("fluidsynth"), "Debian fluidsynth is required (tests/system-deps.sh installs it)"
    subprocess.run(["fluidsynth", "-ni", "-g", "0.5", "-r", "44100", "-F", str(wav), SF2, str(mid)],
                   check=True, capture_output=True, timeout=120)
    y, sr = sf.read(str(wav))
    return (y.mean(axis=1) if y.ndim > 1 else y), sr


def _pitch(y, sr, t0, t1, near_hz):
    """Frequency of the strongest spectral peak within ±60 cents of ``near_hz`` (Hz)."""
    seg = y[int(t0 * sr):int(t1 * sr)] * np.hanning(int(t1 * sr) - int(t0 * sr))
    n = 1 << 20
    spec = np.abs(np.fft.rfft(seg, n))
    f = np.fft.rfftfreq(n, 1 / sr)
    band = (f > near_hz * 2 ** (-60 / 1200)) & (f < near_hz * 2 ** (60 / 1200))
    k = np.flatnonzero(band)[np.argmax(spec[band])]
    a, b, c = np.log(spec[k - 1:k + 2] + 1e-12)
    return f[k] + 0.5 * (a - c) / (a - 2 * b + c) * (f[1] - f[0])


def _untuned(tl, tmp_path):
    """Control render: the same MIDI with the tuning SysEx removed (equal temperament)."""
    mid = tmp_path / "t.mid"
    write_smf(tl, mid)
    mf = mido.MidiFile(mid, charset="utf-8")
    for tr in mf.tracks:
        tr[:] = [m for m in tr if m.type != "sysex"]
    mf.save(str(tmp_path / "plain.mid"))
    return _render(tmp_path / "plain.mid", tmp_path / "plain.wav")


@pytest.mark.parametrize("pitch_bend", [False, True])
def test_fluidsynth_plays_sanfen_sunyi_pitches(tmp_path, pitch_bend):
    """Each note sounds its cents offset away from the equal-tempered render of the same key, and
    the intervals between notes are the 三分损益 ones. (Measured against FluidSynth's own untuned
    render, so the sound font's sample tuning cancels out.)"""
    tl = _timeline()
    mid = tmp_path / "tuned.mid"
    write_smf(tl, mid, pitch_bend=pitch_bend)
    y, sr = _render(mid, tmp_path / "tuned.wav")
    y0, _ = _untuned(tl, tmp_path)
    got = []
    for n in tl.notes:
        et = 440 * 2 ** ((n.midi - 69) / 12)
        tuned = _pitch(y, sr, n.time + 0.5, n.time + n.duration - 0.2, n.hz)
        plain = _pitch(y0, sr, n.time + 0.5, n.time + n.duration - 0.2, et)
        shift = 1200 * math.log2(tuned / plain)
        assert abs(shift - n.cents) < 1.5, f"{n.lv}: shifted {shift:+.2f} cents, expected {n.cents:+.2f}"
        got.append(tuned / plain * et)          # the sound font's per-sample tuning removed
    # 应 over 黄 is 243/128 = 1109.8 cents (not 1100); 夷 over 黄 is 815.6 cents (not 800)
    assert abs(1200 * math.log2(got[1] / got[0]) - 1200 * math.log2(243 / 128)) < 2.0
    assert abs(1200 * math.log2(got[2] / got[0]) - 815.64) < 2.0
    # 黄 = 345 Hz: the sound font's sample tuning aside, far from the equal-tempered 349.2 Hz
    assert tl.notes[0].cents < -20

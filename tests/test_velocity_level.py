"""Loudness follows velocity: every note's waveform as the render plan mixes it (its cached,
spatialised waveform times its gain), measured as a fast-weighted RMS (largest 125 ms frame), gets louder with
velocity across the note cache's velocity buckets, for every instrument; and the
获者's loud 宫 call (velocity 100) is louder than his soft 商 call (velocity 60) from every seat."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from yuexuan.audio.engine import mix, notecache
from yuexuan.audio.engine.plan import Options, plan
from yuexuan.audio.synthesis import drums
from yuexuan.rite import courtyard

RATE = 8000
FRAME, HOP = 1000, 25           # 125 ms frames every 3.1 ms at RATE

#: velocities 4 steps to each side of each boundary of the note cache's buckets (40, 80, 112: the
#: timbre changes there; 4 steps are 1.2–1.9 dB, more than the few tenths of a dB the room's
#: reflections add or take from one waveform against another)
EDGES = sorted({1, 127, *((a + b) // 2 + d for a, b in zip(notecache.VELOCITY_BUCKETS,
                                                            notecache.VELOCITY_BUCKETS[1:]) for d in (-4, 4))})


def levels_db(tl, notes, listener: str = "宾") -> list[float]:
    """Each note's fast-weighted maximum level (dB): the largest RMS over 125 ms frames (a sound
    level meter's F weighting), both channels' energy summed, of the plan as the renderer's mixer
    mixes it (an ensemble's singers at their seats included), in a window from 0.3 s before the
    note's time (a consonant goes before it) to the next note's."""
    p = plan(replace(tl, notes=tuple(notes), selection=None),
             Options(sample_rate=RATE, listener=listener), courtyard.listeners())
    y = np.concatenate([b.mix.copy() for b in mix.blocks(p, 8192)])
    times = [int((n.time - 0.3) * RATE) for n in notes] + [len(y)]
    out = []
    for a, b in itertools.pairwise(times):
        # librosa.feature.rms(frame_length=1000, hop_length=25, center=False) squared and summed
        # over the channels, as running sums (librosa frames the signal 40 times over: 15 s here)
        c = np.concatenate([[0.0], np.cumsum(np.square(y[max(0, a):b], dtype=np.float64).sum(axis=1))])
        starts = np.arange(0, len(c) - FRAME, HOP)
        out.append(10 * np.log10(float(((c[starts + FRAME] - c[starts]) / FRAME).max())))
    return out


def test_a_louder_velocity_is_louder_in_every_bucket(ceremony):
    firsts = {}                                     # one instrument of each synthesis family
    for n in ceremony.notes:
        firsts.setdefault((ceremony.instruments[n.instrument]["family"], n.hz is None), n)
    for name, n in firsts.items():
        notes = [replace(n, time=10.0 * k, velocity=v) for k, v in enumerate(EDGES)]
        db = np.array(levels_db(ceremony, notes))
        if name[0] == "drum":
            # a drum's strokes vary in force by design (yuexuan/audio/synthesis/drums.py, a level
            # SD of 2 dB): each stroke's own force is taken out, the velocity's level remains
            strokes = drums.timeline_strokes([x.instrument for x in notes], {n.instrument})
            db -= [20 * np.log10(drums.stroke_gain(strokes[k])) for k in range(len(notes))]
        assert np.all(np.diff(db) > 0), (name, list(zip(EDGES, np.round(db, 2))))


@pytest.mark.parametrize("listener", ["宾", "公", "中庭"])
def test_the_loud_gong_call_is_louder_than_the_soft_shang_call(ceremony, listener):
    calls = [n for n in ceremony.notes if n.instrument.startswith("获者")][:2]
    assert [c.velocity for c in calls] == [100, 60] and calls[1].hz == pytest.approx(calls[0].hz * 9 / 8)
    # each alone (10 s apart), as the mixer mixes it
    gong, shang = levels_db(ceremony, [replace(c, time=10.0 * (k + 1)) for k, c in enumerate(calls)],
                            listener)
    assert gong > shang + 3

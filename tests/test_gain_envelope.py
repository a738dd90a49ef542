"""A gain envelope on a group of stems (yuexuan/audio/engine/gain_envelope.py): the seam a produced
mix shapes the render by. Rendered with and without a random envelope (seed printed) on one of two
instruments, measured in the files: the shaped stem is the plain one times the envelope (and the
overall loudness gain), the other stem only scaled, and the stems still add up to the mix."""

from __future__ import annotations

import random

import numpy as np
import pytest
import soundfile as sf

from yuexuan.audio.engine import render
from yuexuan.audio.engine.gain_envelope import Envelope, GainEnvelope
from yuexuan.rite import instruments
from yuexuan.timeline import Ceremony, Cue, Note, Timeline

SR = 16000
SHAPED, PLAIN = "颂磬", "建鼓·西"
LSB = 1 / 32767


def _timeline() -> Timeline:
    notes = tuple(Note(0.25 + 0.5 * i, 0.4, SHAPED if i % 2 else PLAIN, "t", 60,
                       460.0 if i % 2 else None, 90) for i in range(8))
    cue = Cue("t", "test", "奏", 0.0, 4.5, (SHAPED, PLAIN), False, "「test」")
    table = instruments.load_all()
    return Timeline(Ceremony("t", "诸侯", "轩县", 345.0), (cue,), notes, (),
                    {name: table[name].facts() for name in (SHAPED, PLAIN)})


def _render(tmp_path, name, envelopes=None):
    opts = render.Options(sample_rate=SR, envelopes=envelopes, target_lufs=-32.0)   # no limiting
    rep = render.render(_timeline(), tmp_path / f"{name}.wav", opts, stems_dir=tmp_path / name)
    mix, _ = sf.read(tmp_path / f"{name}.wav", dtype="float64")
    stems = {n: sf.read(tmp_path / name / f"{n}.wav", dtype="float64")[0] for n in (SHAPED, PLAIN)}
    return rep, mix, stems


def test_an_envelope_shapes_its_stems_and_the_mix(tmp_path):
    seed = random.randrange(2 ** 32)
    rng = random.Random(seed)
    times = sorted(rng.sample(range(1, 45), 5))
    gains = [rng.choice([0.0, rng.uniform(0.05, 1.5)]) for _ in times]
    row = GainEnvelope((SHAPED,), tuple(t / 10 for t in times), tuple(gains))
    seen = []

    def shape(timeline, plan):
        seen.append((len(timeline.notes), plan.names))
        return (row,)

    plain_rep, plain_mix, plain = _render(tmp_path, "plain")
    rep, mix, shaped = _render(tmp_path, "shaped", shape)
    assert seen == [(8, [SHAPED, PLAIN])], seed                   # the timeline's order
    assert plain_rep.limited_s == rep.limited_s == 0.0, seed        # no limiter: gains alone differ
    k = 10 ** ((rep.gain_db - plain_rep.gain_db) / 20)              # the loudness target's new gain
    env = Envelope(row, SR).block(0, len(mix))
    assert env is not None and len(mix) == len(plain_mix)
    tol = (1 + 2 * k) * LSB
    assert np.abs(shaped[PLAIN] - k * plain[PLAIN]).max() <= tol, seed
    assert np.abs(shaped[SHAPED] - k * env[:, None] * plain[SHAPED]).max() <= tol, seed
    assert np.abs(shaped[SHAPED] + shaped[PLAIN] - mix).max() <= 3 * LSB, seed
    assert np.abs(plain[SHAPED] + plain[PLAIN] - plain_mix).max() <= 3 * LSB, seed
    if 0.0 in gains:                # a stretch at gain 0 is silent in the stem
        i = gains.index(0.0)
        lo = int(times[max(0, i - 1)] / 10 * SR) if i and gains[i - 1] == 0.0 else int(times[i] / 10 * SR)
        hi = int(times[i + 1] / 10 * SR) if i + 1 < len(times) and gains[i + 1] == 0.0 else lo + 1
        assert not shaped[SHAPED][lo:hi].any(), seed


def test_envelope_rows_are_checked():
    with pytest.raises(ValueError):
        GainEnvelope((SHAPED,), (1.0, 1.0), (1.0, 0.5))         # not increasing
    with pytest.raises(ValueError):
        GainEnvelope((SHAPED,), (1.0,), (-0.1,))                 # negative gain
    env = Envelope(GainEnvelope((SHAPED,), (1.0, 2.0), (1.0, 0.0)), 10)
    assert env.block(0, 10) is None                             # 1 throughout: nothing to do
    assert np.allclose(env.block(10, 21), np.linspace(1.0, 0.0, 11))
    assert not env.block(25, 30).any()


def test_block_gains_follow_the_breakpoints_for_any_envelope():
    """The mixer's gain over a block (straight lines in float32, one value where the breakpoints
    bearing on the block hold it to 1e-4) against np.interp in float64, for envelopes and blocks
    drawn afresh (seed printed)."""
    seed = random.randrange(2 ** 32)
    rng = np.random.default_rng(seed)
    for _ in range(300):
        times = np.unique(rng.uniform(0.0, 3.0, int(rng.integers(1, 9))))
        gains = rng.uniform(0.0, 4.0, len(times))
        if rng.random() < 0.3:                                  # a held stretch, float noise on it
            gains[1:] = gains[0] * (1 + rng.uniform(-5e-5, 5e-5, len(times) - 1))
        env = Envelope(GainEnvelope((SHAPED,), tuple(times), tuple(gains)), SR)
        b0 = int(rng.integers(0, 3 * SR))
        b1 = b0 + int(rng.integers(1, 2 * SR))
        want = np.interp(np.arange(b0, b1, dtype=np.float64), times * SR, gains)
        got = env.gain(b0, b1)
        err = np.abs(np.asarray(got, dtype=np.float64) - want)
        assert float(err.max()) <= 2e-4 * max(1.0, float(want.max())), (seed, times, gains, b0, b1)

"""The formulas said as speech, not on a metronome (issue 30): in the timeline each syllable's length
follows its place in the phrase (the last the longest) and each spoken note carries its F0 contour,
the formula keeping its span; a dry render follows the contour, its falling tones each their own
fall and the phrase declining (Praat's pitch through parselmouth); tone sandhi inside a phrase.

Families drawn afresh each run: the characters of a dry formula, the 3-3 pairs (seed printed)."""

from __future__ import annotations

import itertools
import random
import tomllib
from pathlib import Path

import numpy as np
import parselmouth
import pytest
import soundfile as sf

from yuexuan.cli import main
from yuexuan.compiler import prosody
from yuexuan.pronunciation import read_line

ROOT = Path(__file__).resolve().parent.parent
PAUSE_S = 0.2                       # a gap this long between two notes of a speaker is a pause
FALLING = "射获命乐释奏大右二若用告誓胜四去"       # tone-4 syllables of the rite's words
LOW = "左首鼓耦酒主与取举打敢使"                     # tone 3


def _phrases(notes):
    """The notes of each phrase of each utterance: one speaker's notes of a cue, split at pauses."""
    by = {}
    for n in notes:
        by.setdefault((n.cue, n.instrument), []).append(n)
    out = []
    for seq in by.values():
        seq.sort(key=lambda n: n.time)
        cur = [seq[0]]
        for a, b in itertools.pairwise(seq):
            if b.time - (a.time + a.duration) > PAUSE_S:
                out.append(cur)
                cur = []
            cur.append(b)
        out.append(cur)
    return out


def test_formulas_have_a_speakers_rhythm_and_keep_their_span(ceremony):
    speech = {c.id for c in ceremony.cues if c.kind == "speech"}
    notes = [n for n in ceremony.notes if n.cue in speech]
    assert notes and all(n.f0_st is not None and len(n.f0_st) >= 3 for n in notes)
    long = [p for p in _phrases(notes) if len(p) >= 4]
    assert len(long) >= 4
    cvs, last_longest = [], 0
    for p in long:
        d = np.array([n.duration for n in p])
        cvs.append(float(d.std() / d.mean()))
        last_longest += int(d.argmax() == len(d) - 1)
    print("phrases", ["".join(n.lyric for n in p) for p in long], "CV", np.round(cvs, 2))
    assert min(cvs) >= 0.15
    assert last_longest >= 0.9 * len(long)
    # the span of each utterance is the cue sheet's: a slot of syllable_seconds a syllable and pause
    sheet = tomllib.loads((ROOT / "cues" / "dashe.toml").read_text(encoding="utf-8"))
    for cue in sheet["cue"]:
        if cue.get("kind") != "speech" or cue["id"] not in speech \
                or any("{" in u.get("words", "") for u in cue["speech"]):   # the rank's formula: below
            continue
        c = ceremony.cue(cue["id"])
        end, spans = 0.0, []
        for u in cue["speech"]:
            if "words" in u:
                step = u.get("syllable_seconds", 0.4)
                span = len(u["words"].rstrip("，。")) * step
            else:
                step, span = u["seconds"] / 8, u["seconds"]
            start = u["at"] if "at" in u else (end + step if spans else 0.0)   # no `at`: after the last
            spans.append(start + span)
            end = max(end, start + span)
        assert c.end - c.start == pytest.approx(max(spans), abs=1e-6), c.id


def test_an_utterance_keeps_its_span():
    """Any words (pauses included), any slot: the last syllable ends its span, the first starts it."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    for _ in range(20):
        slots = [rng.choice(FALLING + LOW + "之于若不一") if rng.random() > 0.15 else None
                 for _ in range(rng.randint(1, 12))]
        while slots and slots[-1] is None:
            slots.pop()
        while slots and slots[0] is None:
            slots.pop(0)
        slots = [s for k, s in enumerate(slots) if s is not None or slots[k - 1] is not None]
        if not slots:
            continue
        step = rng.uniform(0.2, 0.6)
        said = prosody.utterance(slots, step)
        assert said[0].onset_s == 0.0, (seed, slots)
        last = said[-1]
        end = last.onset_s + last.duration_s / prosody.FILL
        assert end == pytest.approx(len(slots) * step), (seed, slots)
        assert all(a.onset_s + a.duration_s <= b.onset_s for a, b in itertools.pairwise(said)), (seed, slots)


def test_spoken_calls_carry_their_contour(ceremony):
    calls = [n for n in ceremony.notes if n.hz is None and n.lyric in ("留", "扬", "方", "诺")]
    assert calls and all(n.f0_st is not None for n in calls)
    liu = next(n for n in calls if n.lyric == "留")                 # liú, a rising tone
    assert liu.f0_st[-1] - min(liu.f0_st) > 3.0


def test_sandhi_in_a_phrase():
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    for _ in range(5):
        a, b = rng.sample(LOW, 2)
        said = prosody.utterance([a, b], 0.4)
        assert [s.tone for s in said] == [2, 3], (seed, a + b)
        rise = said[0].f0_st
        assert rise[-1] - rise[0] > 2.0, (seed, a + b, rise)          # said rising
    x = rng.choice(FALLING)
    assert [s.tone for s in prosody.utterance(["不", x], 0.4)] == [2, 4], (seed, x)
    assert [s.tone for s in prosody.utterance(list("间若一"), 0.4)][-1] == 1      # 一 at the end
    assert next(s.tone for s in prosody.utterance(list("一奇"), 0.4)) == 4


def _pitch_st(path: Path) -> tuple[np.ndarray, np.ndarray]:
    x, sr = sf.read(path)
    p = parselmouth.Sound(x, sr).to_pitch_ac(time_step=0.005, pitch_floor=60.0, pitch_ceiling=500.0)
    f = p.selected_array["frequency"]
    return p.xs(), np.where(f > 0, 12 * np.log2(np.maximum(f, 1e-9) / 100.0), np.nan)


def test_a_dry_formula_of_falling_tones_falls_each_its_own_and_declines(tmp_path, capsys):
    seed = random.randrange(2**32)
    words = "".join(random.Random(seed).sample(FALLING, 4))
    assert all(r.tone == 4 for r in read_line(words)), words
    out = tmp_path / "f.wav"
    assert main(["note", "司射", "黄", "--lyric", words, "-o", str(out)]) == 0
    capsys.readouterr()
    t, st = _pitch_st(out)
    said = prosody.utterance(list(words), 0.4)
    from yuexuan.audio.voice.takes import lead_samples
    lead = lead_samples(read_line(words)[0], 48000) / 48000
    falls, means, errors = [], [], []
    for s in said:
        inside = (t >= s.onset_s + lead) & (t < s.onset_s + lead + s.duration_s)
        v = st[inside]
        ok = ~np.isnan(v)
        assert ok.mean() > 0.7, (seed, words, s.syllable)
        falls.append(np.nanmax(v) - v[ok][-1])
        means.append(np.nanmean(v))
        model = np.interp(np.linspace(0, 1, inside.sum()), np.linspace(0, 1, len(s.f0_st)), s.f0_st)
        errors.append(np.nanmedian(np.abs(v - model - np.nanmedian(v - model))))
    print(seed, words, "falls", np.round(falls, 1), "means", np.round(means, 1), "off the contour",
          np.round(errors, 2))
    assert np.std(falls) >= 1.0, (seed, words, falls)
    assert means[0] - means[-1] >= 1.0, (seed, words, means)
    assert max(errors) < 1.0, (seed, words, errors)          # the audio follows the note's contour

"""Each cue's ``beat_s`` is the one beat of the MIDI tempo map and the MusicXML metronome.

Evidence: the Standard MIDI File read back with mido (set_tempo at each cue's marker tick) and the
MusicXML read back with ElementTree (the metronome mark beside each cue's rehearsal mark), for the
default cue sheet and for a saved timeline in which one cue's beat_s was edited by hand.
"""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET

import mido
import pytest

from yuexuan import cli

EDITED_CUE, EDITED_BEAT_S = "lishou", 0.75       # 貍首: 1.0 s a syllable compiled, 0.75 s edited


def midi_beats(path) -> dict:
    """{cue id: seconds per quarter from its marker on}, read with mido from the conductor track:
    the set_tempo events at the marker's tick, the last of them as a sequencer applies them."""
    mf = mido.MidiFile(path, charset="utf-8")
    tick, events = 0, []
    for m in mf.tracks[0]:
        tick += m.time
        events.append((tick, m))
    out = {}
    for at, m in events:
        if m.type == "marker":
            tempi = [e.tempo for t, e in events if e.type == "set_tempo" and t == at]
            assert tempi, m.text                           # every cue sets its tempo at its marker
            out[m.text.split(":")[0]] = tempi[-1] / 1e6
    return out


def midi_note_seconds(path) -> list:
    """(seconds, channel, key) of every note-on, by mido's own tempo handling (merged tracks)."""
    t, out = 0.0, []
    for m in mido.MidiFile(path, charset="utf-8"):
        t += m.time
        if m.type == "note_on" and m.velocity > 0:
            out.append((t, m.channel, m.note))
    return sorted(out)


@functools.lru_cache(maxsize=4)       # the default score is read by both tests
def score_beats(path, cue_ids: tuple) -> dict:
    """{cue id: seconds per quarter of the metronome mark at its rehearsal mark}, read from the
    MusicXML's first part (ElementTree; music21's parse of the whole score took 4 s): each
    rehearsal mark's ``<direction>`` and the metronome's right after it, with no note, backup or
    forward between them (so at the same offset); the rehearsal marks are in cue order."""
    part = ET.parse(path).getroot().find("part")
    out, marks, sections = {}, 0, []
    pending = None                       # the cue whose rehearsal mark came last, its metronome not yet
    for measure in part.iter("measure"):
        for el in measure:
            if el.tag in ("note", "backup", "forward"):
                pending = None
            elif el.tag == "direction":
                rehearsal = el.find("direction-type/rehearsal")
                metronome = el.find("direction-type/metronome")
                if rehearsal is not None:
                    sections.append(rehearsal.text)
                    pending = cue_ids[len(sections) - 1] if len(sections) <= len(cue_ids) else None
                if metronome is not None:
                    marks += 1
                    # the beat unit is a plain quarter note
                    assert metronome.findtext("beat-unit") == "quarter", ET.tostring(metronome)
                    assert metronome.find("beat-unit-dot") is None, ET.tostring(metronome)
                    if pending is not None:
                        out[pending] = 60.0 / float(metronome.findtext("per-minute"))
                        pending = None
    assert len(sections) == len(cue_ids) == marks == len(out), (len(sections), len(cue_ids), marks, len(out))
    return out


@pytest.fixture(scope="module")
def default_outputs(default_build):
    """The default cue sheet's MIDI, timeline and score as ``yuexuan build`` wrote them
    (tests/conftest.py: the suite's one default build)."""
    return default_build


@pytest.fixture(scope="module")
def edited_outputs(tmp_path_factory, default_outputs):
    doc = json.loads((default_outputs / "dashe.json").read_text(encoding="utf-8"))
    cue = next(c for c in doc["cues"] if c["id"] == EDITED_CUE)
    assert cue["beat_s"] == 1.0 and EDITED_BEAT_S != cue["beat_s"]
    cue["beat_s"] = EDITED_BEAT_S
    d = tmp_path_factory.mktemp("edited")
    (d / "e.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    assert cli.main(["compile", str(d / "e.json"), "-o", str(d / "e.mid")]) == 0
    assert cli.main(["score", str(d / "e.json"), "-o", str(d / "e.musicxml")]) == 0
    return d


def test_default_midi_and_score_give_every_cue_its_beat_s(default_outputs, default_timeline):
    ids = tuple(c.id for c in default_timeline.cues)
    beat = {c.id: c.beat_s for c in default_timeline.cues}
    midi = midi_beats(default_outputs / "dashe.mid")
    score = score_beats(default_outputs / "dashe.musicxml", ids)
    assert tuple(midi) == ids and tuple(score) == ids            # every cue, in order
    for cid in ids:
        assert midi[cid] == pytest.approx(beat[cid], abs=1e-6), cid
        assert score[cid] == pytest.approx(beat[cid], rel=1e-3), cid   # printed to four figures
    # the compiled beats: a syllable (歌 1.2 s), a note (1.0 s), the calls' 0.5 s grid, an arrow
    # (4.0 s), and 貍首's syllable = jie_seconds / syllables_per_jie = 4.0 / 4
    assert (beat["luming"], beat["sixia_bin"], beat["round1_quhou"], beat["round1"], beat["lishou"]) == \
        (1.2, 1.0, 0.5, 4.0, 1.0)


def test_an_edited_beat_s_is_followed_by_midi_and_score(default_outputs, edited_outputs, default_timeline):
    ids = tuple(c.id for c in default_timeline.cues)
    before_midi, after_midi = midi_beats(default_outputs / "dashe.mid"), midi_beats(edited_outputs / "e.mid")
    before_score = score_beats(default_outputs / "dashe.musicxml", ids)
    after_score = score_beats(edited_outputs / "e.musicxml", ids)
    assert after_midi[EDITED_CUE] == pytest.approx(EDITED_BEAT_S, abs=1e-6)
    assert after_score[EDITED_CUE] == pytest.approx(EDITED_BEAT_S, rel=1e-3)
    assert before_midi[EDITED_CUE] == before_score[EDITED_CUE] == 1.0
    for cid in ids:
        if cid != EDITED_CUE:
            assert after_midi[cid] == before_midi[cid] and after_score[cid] == before_score[cid], cid
    # a beat is a label on time, not time: every note sounds at the same second as before
    before, after = midi_note_seconds(default_outputs / "dashe.mid"), midi_note_seconds(edited_outputs / "e.mid")
    assert len(after) == len(before) == len(default_timeline.notes)
    assert all(a[1:] == b[1:] and abs(a[0] - b[0]) <= 0.002 for a, b in zip(after, before))

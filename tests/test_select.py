"""``--cues`` with a saved timeline (``yuexuan.timeline.select`` through ``read_timeline``), and the
one-line refusal of a timeline of another schema."""

from __future__ import annotations

import json

import mido
import pytest

from yuexuan.timeline import save_json, select


@pytest.fixture(scope="module")
def saved(default_timeline, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "dashe.json"
    save_json(default_timeline, path)
    return path


def _note_ons(path) -> list:
    """(seconds, key) of every sounding note-on of a MIDI file, read back with mido."""
    out, t = [], 0.0
    for msg in mido.MidiFile(str(path)):           # iterating a MidiFile yields delta seconds
        t += msg.time
        if msg.type == "note_on" and msg.velocity > 0:
            out.append((round(t, 3), msg.note))
    return sorted(out)


def test_compile_a_saved_timeline_with_cues_writes_only_those(cli, tmp_path, saved, default_timeline,
                                                               default_cues):
    """compile saved.json --cues lishou: the MIDI holds 貍首's notes alone, from time 0 (its start),
    note for note what compiling the cue sheet with --cues lishou writes."""
    out, js = tmp_path / "cut.mid", tmp_path / "cut.json"
    r = cli("compile", saved, "--cues", "lishou", "-o", out, "--timeline", js)
    assert r.returncode == 0, r.stderr
    lishou = default_timeline.cue("lishou")
    expected = sorted((round(n.time - lishou.start, 3), n.midi) for n in default_timeline.notes
                      if n.cue == "lishou" and n.velocity > 0)
    got = _note_ons(out)
    assert len(got) == len(expected) > 1000
    assert all(g[1] == e[1] and abs(g[0] - e[0]) <= 0.002 for g, e in zip(got, expected))
    doc = json.loads(js.read_text(encoding="utf-8"))
    assert [c["id"] for c in doc["cues"]] == ["lishou"] and doc["cues"][0]["start"] == 0.0
    assert {n["cue"] for n in doc["notes"]} == {"lishou"}
    assert len(doc["beats"]) == sum(b.cue == "lishou" for b in default_timeline.beats) > 0

    sheet = tmp_path / "sheet.mid"
    assert cli("compile", default_cues, "--cues", "lishou", "-o", sheet).returncode == 0
    assert all(a[1] == b[1] and abs(a[0] - b[0]) <= 0.002 for a, b in zip(got, _note_ons(sheet)))
    assert len(_note_ons(sheet)) == len(got)


def test_an_unknown_cue_of_a_saved_timeline_is_one_line_naming_the_file(cli, tmp_path, saved):
    out = tmp_path / "x.mid"
    r = cli("compile", saved, "--cues", "lishou,nope", "-o", out)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"yuexuan compile: {saved}: --cues: unknown cue 'nope'; the cues are: ")
    assert not out.exists()


def test_select_keeps_the_space_between_chosen_cues(default_timeline):
    """Cut, not recompiled: the chosen cues keep their distance, with their own notes and beats."""
    cut = select(default_timeline, ["sixia_gong", "lishou"])
    a, b = default_timeline.cue("sixia_gong"), default_timeline.cue("lishou")
    assert [c.id for c in cut.cues] == ["sixia_gong", "lishou"]
    assert cut.cues[0].start == 0.0 and cut.cues[1].start == pytest.approx(b.start - a.start)
    assert cut.cues[1].phrases == pytest.approx([t - a.start for t in b.phrases])
    kept = [n for n in default_timeline.notes if n.cue in ("sixia_gong", "lishou")]
    assert [(n.cue, n.midi) for n in cut.notes] == [(n.cue, n.midi) for n in kept]
    assert [n.time for n in cut.notes] == pytest.approx([n.time - a.start for n in kept])
    assert [x.time for x in cut.beats] == pytest.approx(
        [x.time - a.start for x in default_timeline.beats if x.cue == "lishou"])
    assert select(default_timeline, None) is default_timeline
    assert cut.instruments == default_timeline.instruments


def test_play_reads_a_cut_saved_timeline_as_the_cut_cue_sheet(saved, default_cues):
    """The one loader: a saved timeline cut to one cue is the cue sheet compiled for that cue, so
    play's --from means the same second for either."""
    from yuexuan.commands.common import read_timeline

    cut = read_timeline(str(saved), "play", ["wusuan"])
    sheet = read_timeline(str(default_cues), "play", ["wusuan"])
    assert [c.id for c in cut.cues] == [c.id for c in sheet.cues] == ["wusuan"]
    (c, s), = zip(cut.cues, sheet.cues)
    assert (c.start, c.end) == pytest.approx((s.start, s.end), abs=1e-5)
    assert [(n.instrument, n.midi) for n in cut.notes] == [(n.instrument, n.midi) for n in sheet.notes]
    assert [n.time for n in cut.notes] == pytest.approx([n.time for n in sheet.notes], abs=1e-5)


def test_a_timeline_of_another_schema_is_one_unwrapped_line(cli, tmp_path, saved):
    """The schema number's refusal is already a whole sentence: told as it is, naming the file."""
    doc = json.loads(saved.read_text(encoding="utf-8"))
    doc["schema"] = 1
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    r = cli("compile", old, "-o", tmp_path / "x.mid")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"yuexuan compile: {old}: schema: timeline schema 1 is no longer read; "
                               "recompile the cue sheet with `yuexuan compile"), r.stderr
    doc["schema"] = 2
    doc["notes"][0]["time"] = "x"                     # any other fault keeps its wrapping
    old.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    r = cli("compile", old, "-o", tmp_path / "x.mid")
    assert r.returncode == 2 and f"{old}: not a yuexuan timeline JSON (notes[0].time: " in r.stderr, r.stderr

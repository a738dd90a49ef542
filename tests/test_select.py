"""``--cues``: one rule for a cue sheet and a saved timeline (``yuexuan.timeline.select`` through
``read_timeline``: cut from the whole ceremony, the ceremony's spaces unless ``--compact``), the cut's
place in the ceremony (``selection``), and the one-line refusal of a timeline of another schema."""

from __future__ import annotations

import json

import mido
import pytest

from yuexuan.commands.common import read_timeline
from yuexuan.timeline import at_ceremony_times, from_dict, save_json, select, to_dict


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
    doc["schema"] = 2                                 # the schema before the cut's selection
    old.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    r = cli("compile", old, "-o", tmp_path / "x.mid")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"yuexuan compile: {old}: schema: timeline schema 2 is no longer read; "
                               "recompile the cue sheet with `yuexuan compile"), r.stderr
    doc["schema"] = 3
    doc["notes"][0]["time"] = "x"                     # any other fault keeps its wrapping
    old.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    r = cli("compile", old, "-o", tmp_path / "x.mid")
    assert r.returncode == 2 and f"{old}: not a yuexuan timeline JSON (notes[0].time: " in r.stderr, r.stderr


def _same(a, b) -> None:
    """Two timelines hold the same cues, notes and beats at the same times (to the microsecond the
    JSON keeps) and the same place in the ceremony."""
    assert [(c.id, c.kind) for c in a.cues] == [(c.id, c.kind) for c in b.cues]
    assert [t for c in a.cues for t in (c.start, c.end)] == pytest.approx(
        [t for c in b.cues for t in (c.start, c.end)], abs=2e-6)
    assert [(n.cue, n.instrument, n.midi) for n in a.notes] == \
        [(n.cue, n.instrument, n.midi) for n in b.notes]
    assert [n.time for n in a.notes] == pytest.approx([n.time for n in b.notes], abs=2e-6)
    assert [(x.cue, x.archer, x.arrow) for x in a.beats] == [(x.cue, x.archer, x.arrow) for x in b.beats]
    assert [x.time for x in a.beats] == pytest.approx([x.time for x in b.beats], abs=2e-6)
    assert a.selection.compact == b.selection.compact
    assert a.selection.origin_s == pytest.approx(b.selection.origin_s, abs=2e-6)
    assert a.selection.closed_s == pytest.approx(b.selection.closed_s, abs=2e-6)
    assert a.duration == pytest.approx(b.duration, abs=2e-6)


@pytest.mark.parametrize("compact", [False, True])
def test_a_cue_sheet_and_its_saved_timeline_give_the_same_selection(saved, default_cues,
                                                                     default_timeline, compact):
    """--cues luming,lishou (with and without --compact): the cue sheet and its saved timeline
    give the same cues, notes, beats and times. Without --compact the space between the two is
    the ceremony's (time 0 at 鹿鸣's start, 貍首 where the whole ceremony has it, less that);
    with it, 貍首 starts the sheet's gap after 鹿鸣 ends, as a compiler placing only these two
    would put it."""
    ids = ["luming", "lishou"]
    sheet = read_timeline(str(default_cues), "compile", ids, compact=compact)
    cut = read_timeline(str(saved), "compile", ids, compact=compact)
    _same(sheet, cut)
    luming, lishou = default_timeline.cue("luming"), default_timeline.cue("lishou")
    assert sheet.cues[0].start == 0.0 and sheet.selection.origin_s == pytest.approx(luming.start)
    gap = default_timeline.ceremony.gap_s
    assert gap == 5.0                                    # the default sheet's gap_seconds
    if compact:
        assert sheet.cues[1].start == pytest.approx(sheet.cues[0].end + gap)
        assert sheet.duration == pytest.approx(600.8, abs=0.05)
        assert sheet.selection.closed_s[1] == pytest.approx(lishou.start - luming.end - gap)
    else:
        assert sheet.cues[1].start == pytest.approx(lishou.start - luming.start)
        assert sheet.duration == pytest.approx(1334.3, abs=0.05)   # with 108.8 s of the officers' formulas
        assert sheet.selection.closed_s == pytest.approx((0.0, 0.0))
    # either way each cue's music is its music in the whole ceremony, moved as one block
    for c in sheet.cues:
        whole = [n.time - default_timeline.cue(c.id).start for n in default_timeline.notes if n.cue == c.id]
        assert [n.time - c.start for n in sheet.notes if n.cue == c.id] == pytest.approx(whole, abs=2e-6)
    # and the selection saved and read back is the same timeline
    _same(from_dict(to_dict(sheet)), sheet)


@pytest.mark.parametrize("compact", [False, True])
def test_a_selection_knows_its_seconds_in_the_ceremony(default_timeline, compact):
    """Timeline.ceremony_s puts any time of a cut (a shot's, a beat's) back on the whole
    ceremony, cue by cue; at_ceremony_times moves the whole cut there (the times a shot log
    holds): every 射节 beat of 貍首 at its time in the whole ceremony."""
    cut = select(default_timeline, ["sixia_bin", "lishou"], compact=compact)
    lishou = cut.cue("lishou")
    whole = [b.time for b in default_timeline.beats if b.cue == "lishou"]
    assert [cut.ceremony_s(b.time) for b in cut.beats] == pytest.approx(whole, abs=1e-9)
    assert cut.ceremony_s(lishou.start + 1.0) == pytest.approx(default_timeline.cue("lishou").start + 1.0)
    assert cut.ceremony_s(1.0) == pytest.approx(default_timeline.cue("sixia_bin").start + 1.0)
    back = at_ceremony_times(cut)
    assert [b.time for b in back.beats] == pytest.approx(whole, abs=1e-9)
    whole_cues = [c for c in default_timeline.cues if c.id in ("sixia_bin", "lishou")]
    assert [c.id for c in back.cues] == [c.id for c in whole_cues]
    assert [t for c in back.cues for t in (c.start, c.end)] == pytest.approx(
        [t for c in whole_cues for t in (c.start, c.end)])
    assert back.ceremony_s(42.0) == 42.0 and at_ceremony_times(default_timeline) is default_timeline
    again = select(cut, ["lishou"])                       # a cut of a cut: still the ceremony's seconds
    assert again.ceremony_s(0.0) == pytest.approx(default_timeline.cue("lishou").start)


def test_the_timeline_holds_each_targets_arrow_flight(default_timeline, saved):
    """The compiler decides the flight of an arrow to each 侯 (its 侯道, distance_bu 貍步 × bu_m
    of ceremony/courtyard.toml, at the default 60 m/s): 干 50 步, 参 70 步, 大侯 90 步."""
    import tomllib

    from yuexuan.data import DataSource

    yard = tomllib.loads(DataSource().path("ceremony", "courtyard.toml").read_text(encoding="utf-8"))
    bu_m = yard["bu_m"]
    distances = {t["name"]: t["distance_bu"] for t in yard["target"]}
    assert distances == {"干": 50, "参": 70, "大侯": 90}
    for name, bu in distances.items():
        t = default_timeline.targets[name]
        assert t["distance_m"] == pytest.approx(bu * bu_m) and t["arrow_speed_m_s"] == 60.0
        assert t["flight_s"] == pytest.approx(bu * bu_m / 60.0, abs=1e-6)
    assert json.loads(saved.read_text(encoding="utf-8"))["targets"] == default_timeline.targets


def test_a_selection_of_another_length_than_the_cues_is_refused(cli, tmp_path, saved):
    cut = tmp_path / "cut.json"
    assert cli("compile", saved, "--cues", "luming,lishou", "-o", tmp_path / "c.mid",
               "--timeline", cut).returncode == 0
    doc = json.loads(cut.read_text(encoding="utf-8"))
    assert doc["selection"]["origin_s"] > 0 and len(doc["selection"]["closed_s"]) == 2
    doc["selection"]["closed_s"].append(0.0)
    cut.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    r = cli("compile", cut, "-o", tmp_path / "x.mid")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "selection.closed_s: expected one number per cue (2), got 3" in r.stderr


def test_check_reads_a_saved_selection_at_the_ceremonys_seconds(cli, tmp_path, saved, default_cues, root):
    """A shot log holds the whole ceremony's seconds: check judges it the same against the cue
    sheet and against a saved --cues selection of the rounds it shoots (with --compact too)."""
    shots = root / "tests" / "data" / "shots_example.csv"
    whole = cli("check", default_cues, shots, "--format", "csv")
    assert whole.returncode == 0, whole.stderr
    rounds = "round2_sanou,round2_rest,lishou"
    for extra in ((), ("--compact",)):
        cut = tmp_path / f"cut{len(extra)}.json"
        assert cli("compile", saved, "--cues", rounds, *extra, "-o", tmp_path / "c.mid",
                   "--timeline", cut).returncode == 0
        r = cli("check", cut, shots, "--format", "csv")
        assert r.returncode == 0, r.stderr
        assert r.stdout == whole.stdout and r.stderr == whole.stderr


@pytest.mark.parametrize("compact", [False, True])
def test_shots_with_cues_are_the_whole_ceremonys_seconds(default_cues, root, compact):
    """compile --shots LOG --cues …: the log's times are the whole ceremony's (as check reads them),
    so the selected cues sound exactly the calls the whole ceremony compiled with the log sounds in
    them, moved with their cue, and no row is left unsounded for lack of its cue."""
    log = str(root / "tests" / "data" / "shots_example.csv")
    whole = read_timeline(str(default_cues), "compile", shots=log)
    ids = ["round2_rest", "lishou"]
    cut = read_timeline(str(default_cues), "compile", ids, shots=log, compact=compact)
    back = at_ceremony_times(cut)
    calls = ("获者·大侯", "获者·参", "获者·干", "大射正")
    want = [(n.cue, n.instrument, n.midi, n.time) for n in whole.notes
            if n.cue in ids and n.instrument in calls]
    got = [(n.cue, n.instrument, n.midi, n.time) for n in back.notes if n.instrument in calls]
    assert len(want) > 4 and [w[:3] for w in want] == [g[:3] for g in got]
    assert [w[3] for w in want] == pytest.approx([g[3] for g in got], abs=1e-9)
    # and they differ from the cue sheet's hits strings: the log made them
    plain = read_timeline(str(default_cues), "compile", ids)
    assert [(n.cue, n.time) for n in plain.notes if n.instrument in calls] != \
        [(n.cue, n.time) for n in cut.notes if n.instrument in calls]

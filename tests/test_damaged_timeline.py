"""Damaged saved timelines (issue 20, item 5): every command that reads one either runs or refuses it
in one line naming the file and the field, exit 2 — never a traceback.

The base is the default ceremony's round3_quhou and lishou cut out (``select``) and shortened to 24 s,
so a full run of render, build, guide or play on an undamaged example costs seconds. The targeted
mutations break one cross-check each (yuexuan/timeline_checks.py, the schema's, and the saved
variants'); the random ones (hypothesis) break anything. The commands run in this process through
``yuexuan.cli.main``; ``play`` plays to a private JACK server (tests/jack_support.py) with no operator.
``YX_EXAMPLES`` raises the example counts for a deep local run.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import shutil
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from jack_support import jack_server

from yuexuan import cli, timeline_checks
from yuexuan.formats.midimessages import tuning_table
from yuexuan.timeline import from_dict, select, to_dict
from yuexuan.timeline_checks import DamagedTimeline, key_clash

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "tests" / "data" / "shots_example.jsonl"
END_S = 24.0                   # the base timeline is cut here
EXAMPLES = int(os.environ.get("YX_EXAMPLES", "0")) or None
COMMANDS = ("compile", "build", "render", "score", "layout", "guide", "check", "play")


def run(*argv) -> tuple[int | str, str]:
    """``yuexuan ARGV`` in this process: (exit status, or "traceback"; stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str = cli.main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:          # what must never happen, reported as such
            code = "traceback"
            err.write(traceback.format_exc())
    return code, err.getvalue()


def argv(command: str, src: Path, out: Path) -> list:
    """The command line of ``command`` reading ``src``, its outputs in the folder ``out``."""
    return {
        "compile": ["compile", src, "-o", out / "t.mid", "--timeline", out / "t2.json"],
        "build": ["build", src, "-o", out / "build"],
        "render": ["render", src, "--sample-rate", "8000", "-o", out / "t.wav"],
        "score": ["score", src, "-o", out / "t.musicxml"],
        "layout": ["layout", src, "-o", out / "t.svg"],
        "guide": ["guide", src, "--no-audio", "-o", out / "guide"],
        "check": ["check", src, SHOTS, "--format", "json", "-o", out / "verdict.json"],
        "play": ["play", src, "--api", "jack", "--auto", "--no-realtime", "--from", "19",
                 "--until", "19.5"],
    }[command]


def outputs(out: Path) -> list:
    """Every file written under ``out`` (the saved timeline aside)."""
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "t.json")


def assert_clean(command: str, code, err: str, src: Path, options: tuple = ()) -> str:
    """Exit 0, or exit 2 with one line (compiler warnings aside) naming ``src`` (or one of the
    command line's ``options``, such as play's window); returns that line. ``options`` None: any
    line of the command (the render's own refusals, which depend on its options, e.g. a note above
    0.45 × --sample-rate, name the note, not the file)."""
    assert code != "traceback", err
    assert code in (0, 2), (code, err)
    lines = [ln for ln in err.splitlines() if ": warning: " not in ln]
    if code == 2:
        assert len(lines) == 1, err
        wheres = ("",) if options is None else (f"{src}: ", *options)
        assert any(lines[0].startswith(f"yuexuan {command}: {where}") for where in wheres), lines[0]
        return lines[0]
    return ""


# -- the base ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def base(ceremony) -> dict:
    """round3_quhou and lishou of the default ceremony, cut to END_S seconds: 2 cues, ~140 notes
    (pitched and drums), 9 射节 beats of which 3 shooting."""
    d = to_dict(select(ceremony, ["round3_quhou", "lishou"], compact=True))   # the officers' formulas between them left out
    d["notes"] = [n for n in d["notes"] if n["time"] + n["duration"] <= END_S - 0.5]
    d["beats"] = [b for b in d["beats"] if b["time"] < END_S - 0.5]
    for c in d["cues"]:
        c["end"] = min(c["end"], END_S)
        c["phrases"] = [t for t in c["phrases"] if t < END_S]
    assert any(b["shoot"] for b in d["beats"]) and any(n["hz"] for n in d["notes"])
    from_dict(copy.deepcopy(d))          # the base itself is sound
    return d


def save(d: dict, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "t.json"
    src.write_text(json.dumps(d, ensure_ascii=False), encoding="utf-8")
    return src


# -- one targeted mutation per cross-check -------------------------------------------------------
# Each breaks one rule in place and returns (the field the refusal must name, a fragment of the
# reason). Indices are found in the base, not assumed.

def _pitched(d: dict) -> list:
    return [i for i, n in enumerate(d["notes"]) if n["hz"] is not None]


def two_hz_on_one_key(d):
    """The issue's case: a later pitched note moved onto the MIDI key of the first one."""
    i = _pitched(d)[0]
    j = next(j for j in _pitched(d) if j > i and d["notes"][j]["midi"] != d["notes"][i]["midi"])
    d["notes"][j]["midi"] = d["notes"][i]["midi"]
    return f"notes[{j}].hz", "expected one Hz per MIDI key"


def untunable_hz(d):
    i = _pitched(d)[0]
    d["notes"][i]["hz"] = 20000.0        # above key 127's 12.5 kHz
    return f"notes[{i}].hz", "what MIDI tuning can carry"


def pitched_note_without_hz(d):
    i = _pitched(d)[0]
    d["notes"][i]["hz"] = None
    return f"notes[{i}].hz", "is pitched"


def note_of_unknown_instrument(d):
    d["notes"][3]["instrument"] = "无此"
    return "notes[3].instrument", "not among the timeline's instruments"


def note_outside_its_cue(d):
    k = next(k for k, n in enumerate(d["notes"]) if n["cue"] == "lishou")
    d["notes"][k]["cue"] = "round3_quhou"          # 0 .. 1.2 s; the note is at lishou's 6.2 s
    return f"notes[{k}].time", "outside its cue 'round3_quhou'"


def notes_out_of_order(d):
    notes = d["notes"]
    k = next(k for k in range(len(notes) - 1) if notes[k]["time"] < notes[k + 1]["time"])
    notes[k], notes[k + 1] = notes[k + 1], notes[k]
    return f"notes[{k + 1}].time", "expected notes sorted by time"


def note_past_a_day(d):
    d["notes"][-1]["duration"] = 90000.0
    return f"notes[{len(d['notes']) - 1}].duration", "past a day"


def note_of_unknown_cue(d):
    d["notes"][0]["cue"] = "无此"
    return "notes[0].cue", "is not the id of a cue"


def negative_duration(d):
    d["notes"][0]["duration"] = -1.0
    return "notes[0].duration", "expected a value ≥ 0"


def nan_time(d):
    d["notes"][0]["time"] = math.nan                 # json.dumps writes NaN; Python's json reads it
    return "notes[0].time", "expected a finite number"


def velocity_out_of_range(d):
    d["notes"][0]["velocity"] = 200
    return "notes[0].velocity", "≤ 127"


def cue_ends_before_it_starts(d):
    d["cues"][1]["end"] = d["cues"][1]["start"] - 1.0
    return "cues[1].end", "before the cue's start"


def cues_overlap(d):
    d["cues"][0]["end"] = d["cues"][1]["start"] + 1.0
    return "cues[1].start", "before the end of the cue before it"


def cue_past_a_day(d):
    d["cues"][1]["end"] = 90000.0
    return "cues[1].end", "past a day"


def duplicate_cue_id(d):
    d["cues"][1]["id"] = d["cues"][0]["id"]
    return "cues[1].id", "the id of an earlier cue too"


def phrase_outside_its_cue(d):
    n = len(d["cues"][1]["phrases"])
    d["cues"][1]["phrases"].append(END_S + 1.0)
    return f"cues[1].phrases[{n}]", "outside the cue"


def phrases_out_of_order(d):
    d["cues"][1]["phrases"].reverse()
    return "cues[1].phrases[1]", "expected ascending times"


def beat_s_too_short(d):
    d["cues"][1]["beat_s"] = 1e-5
    return "cues[1].beat_s", "expected 0.001 s"


def cue_of_unknown_instrument(d):
    n = len(d["cues"][1]["instruments"])
    d["cues"][1]["instruments"].append("无此")
    return f"cues[1].instruments[{n}]", "not among the timeline's instruments"


def place_of_unknown_instrument(d):
    d["cues"][1]["places"]["无此"] = {"where": "堂上", "position_m": [0.0, 0.0, 0.0]}
    return "cues[1].places['无此']", "not among the timeline's instruments"


def instrument_without_position(d):
    name = next(iter(d["instruments"]))
    del d["instruments"][name]["position_m"]
    return f"instruments[{name!r}]", "missing field 'position_m'"


def instrument_far_away(d):
    name = next(iter(d["instruments"]))
    d["instruments"][name]["position_m"] = [1e9, 0.0, 0.0]     # the render would wait 34 days
    return f"instruments[{name!r}].position_m", "within 1000 m"


def place_far_away(d):
    c = next(c for c in d["cues"] if c["places"])
    k, name = d["cues"].index(c), next(iter(c["places"]))
    c["places"][name]["position_m"] = [0.0, -5000.0, 0.0]
    return f"cues[{k}].places[{name!r}].position_m", "within 1000 m"


def beat_in_a_cue_without_shejie(d):
    d["beats"][0]["cue"] = "round3_quhou"
    return "beats[0].cue", "expected a cue of kind shejie"


def beat_outside_its_cue(d):
    d["beats"][-1]["time"] = END_S + 1.0
    return f"beats[{len(d['beats']) - 1}].time", "outside its cue 'lishou'"


def beats_out_of_order(d):
    d["beats"][0], d["beats"][1] = d["beats"][1], d["beats"][0]
    return "beats[1].time", "expected beats sorted by time"


def beat_of_unknown_cue(d):
    d["beats"][0]["cue"] = "无此"
    return "beats[0].cue", "is not the id of a cue"


def shooting_beat_without_archer(d):
    k = next(k for k, b in enumerate(d["beats"]) if b["shoot"])
    d["beats"][k]["archer"] = None
    return f"beats[{k}].archer", "a shooting 节 (shoot true) needs its archer"


def shooting_beat_with_a_fifth_arrow(d):
    k = next(k for k, b in enumerate(d["beats"]) if b["shoot"])
    d["beats"][k]["arrow"] = 5
    return f"beats[{k}].arrow", "expected 1 .. 4"


def unknown_variant_option(d):
    key = next(iter(d["ceremony"]["variants"]))
    d["ceremony"]["variants"][key] = "无此"
    return f"ceremony.variants[{key!r}]", "unknown option '无此'"


def unknown_variant(d):
    d["ceremony"]["variants"]["无此"] = "郑玄"
    return "ceremony.variants", "unknown variant '无此'"


TARGETED = [two_hz_on_one_key, untunable_hz, pitched_note_without_hz, note_of_unknown_instrument, note_outside_its_cue,
            notes_out_of_order, note_past_a_day, note_of_unknown_cue, negative_duration, nan_time,
            velocity_out_of_range, cue_ends_before_it_starts, cues_overlap, cue_past_a_day,
            duplicate_cue_id, phrase_outside_its_cue, phrases_out_of_order, beat_s_too_short,
            cue_of_unknown_instrument, place_of_unknown_instrument, instrument_without_position,
            instrument_far_away, place_far_away,
            beat_in_a_cue_without_shejie, beat_outside_its_cue, beats_out_of_order,
            beat_of_unknown_cue, shooting_beat_without_archer, shooting_beat_with_a_fifth_arrow,
            unknown_variant_option, unknown_variant]


@pytest.mark.parametrize("mutation", TARGETED, ids=lambda f: f.__name__)
def test_each_cross_check_is_one_line_from_every_command(base, tmp_path, mutation):
    """Every command refuses the damaged file before writing anything (or opening a port), in one
    line naming the file, the field and the reason."""
    d = copy.deepcopy(base)
    field, reason = mutation(d)
    src = save(d, tmp_path)
    for command in COMMANDS:
        code, err = run(*argv(command, src, tmp_path))
        line = assert_clean(command, code, err, src)
        assert code == 2, (command, err)
        assert f": {field}: " in line or f"({field}: " in line, (command, field, line)
        assert reason in line, (command, reason, line)
    assert outputs(tmp_path) == []


def test_two_hz_on_one_midi_key_compile_and_build(base, tmp_path, monkeypatch):
    """The issue's case, as its 'done when' words it: one line, exit 2, from compile and build
    (before: a traceback from the tuning table); the MIDI file is not written."""
    d = copy.deepcopy(base)
    two_hz_on_one_key(d)
    src = save(d, tmp_path)
    for command in ("compile", "build"):
        code, err = run(*argv(command, src, tmp_path))
        assert code == 2 and len(err.splitlines()) == 1, err
        assert "would need both" in err and "expected one Hz per MIDI key" in err, err
    assert not (tmp_path / "t.mid").exists() and outputs(tmp_path) == []
    # the tuning table applies the same rule to a Timeline built in code (a programming error)
    monkeypatch.setattr(timeline_checks, "check", lambda d, file=None: None)
    with pytest.raises(ValueError, match="would need both"):
        tuning_table(from_dict(d))


def test_a_damaged_timeline_is_a_value_error_and_a_user_error(base):
    """from_dict keeps its promise to library callers (ValueError) while the commands print the
    same error as a UserError line naming the file."""
    d = copy.deepcopy(base)
    field, _ = two_hz_on_one_key(d)
    with pytest.raises(ValueError, match=r"notes\[\d+\]\.hz"):
        from_dict(d)
    try:
        from_dict(d, file="saved.json")
    except DamagedTimeline as exc:
        assert str(exc).startswith(f"saved.json: {field}: MIDI key ")
    else:
        raise AssertionError("not refused")


# -- the base runs, and every compiled timeline passes -------------------------------------------

def test_the_undamaged_base_runs_through_every_command_but_play(base, tmp_path):
    src = save(base, tmp_path)
    for command in COMMANDS[:-1]:
        code, err = run(*argv(command, src, tmp_path))
        assert code == 0, (command, err)
    assert {"t.mid", "t.wav", "t.musicxml", "t.svg", "verdict.json", "guide/index.html",
            "build/t.mid"} <= set(outputs(tmp_path))


def test_compiled_timelines_pass_the_checks(ceremony):
    """What the compiler writes holds every cross-check: the whole ceremony and cuts of it."""
    for cut in (None, ["lishou"], ["luming", "lishou", "ao"], ["round1", "wusuan"]):
        tl = ceremony if cut is None else select(ceremony, cut)
        from_dict(json.loads(json.dumps(to_dict(tl))), file="x.json")
        if cut:
            from_dict(json.loads(json.dumps(to_dict(select(ceremony, cut, compact=True)))))


# -- one Hz per key: the vectorised rule against a plain loop --------------------------------------

def _clash_by_hand(keys, hz):
    first: dict = {}
    for k, (key, f) in enumerate(zip(keys, hz)):
        if math.isnan(f):
            continue
        i = first.setdefault(key, k)
        if abs(hz[i] - f) > 1e-6 * f:
            return i, k
    return None


@settings(max_examples=EXAMPLES or 200, deadline=None)
@given(st.lists(st.tuples(st.integers(60, 64), st.sampled_from([math.nan, 100.0, 100.00005, 101.0, 200.0])),
                max_size=12))
def test_key_clash_is_the_rule_written_out(notes):
    keys, hz = [k for k, _ in notes], np.array([f for _, f in notes], dtype=float)
    assert key_clash(keys, hz) == _clash_by_hand(keys, hz)


# -- huangzhong_hz: a cue sheet whose 黄钟 puts two 律 on one key --------------------------------

@pytest.mark.parametrize("hz, pair", [(358.0, "大 and 太"), (359.4, "应 and 黄清")])
def test_a_huangzhong_putting_two_lv_on_one_key_is_refused(default_cues, tmp_path, hz, pair):
    text = default_cues.read_text(encoding="utf-8")
    start = text.index("huangzhong_hz = ")
    sheet = tmp_path / "s.toml"
    sheet.write_text(text[:start] + f"huangzhong_hz = {hz}" + text[text.index("\n", start):],
                     encoding="utf-8")
    code, err = run("compile", sheet, "-o", tmp_path / "s.mid")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"{sheet}:9: ceremony.huangzhong_hz: {hz:g} Hz puts {pair} on one MIDI key" in err, err


@settings(max_examples=EXAMPLES or 60, deadline=None)
@given(st.floats(20.0, 2000.0))
def test_an_accepted_huangzhong_gives_every_pitch_its_own_key(hz):
    """Refused exactly when two 律 of octaves -3..3 would share a MIDI key (the oracle: every
    pitch's nearest key, computed here)."""
    from yuexuan.errors import UserError
    from yuexuan.rite import ranks
    from yuexuan.rite.cuesheet_setting import ceremony as read_ceremony
    from yuexuan.rite.tomlfile import Fields
    from yuexuan.rite.tuning import RATIOS

    keys = [round(69 + 12 * math.log2(hz * float(r) * 2.0 ** o / 440)) for o in range(-3, 4) for r in RATIOS]
    fields = Fields({"name": "x", "rank": "诸侯", "huangzhong_hz": hz}, "s.toml", "", "ceremony")
    try:
        read_ceremony(fields, ranks.load())
    except UserError as exc:
        assert "on one MIDI key" in str(exc)
        assert len(set(keys)) < len(keys)
    else:
        assert len(set(keys)) == len(keys)


# -- random damage ------------------------------------------------------------------------------

def _records(d: dict) -> list:
    """(container, key) of every scalar field of the cues, notes, beats and instrument facts."""
    out = []
    for group in ("cues", "notes", "beats"):
        for r in d[group]:
            out += [(r, k) for k, v in r.items() if not isinstance(v, (dict, list))]
    for c in d["cues"]:
        out += [(c["phrases"], k) for k in range(len(c["phrases"]))]
        out += [(c["instruments"], k) for k in range(len(c["instruments"]))]
    for facts in d["instruments"].values():
        out += [(facts, k) for k in ("position_m", "family", "pitched", "gm_program") if k in facts]
    out += [(d["ceremony"], k) for k in d["ceremony"] if k != "variants"]
    return out


@st.composite
def damaged(draw, base: dict) -> dict:
    """``base`` with one to three fields given another value of the kind the file holds: another
    record's value, an edge (0, -1, a day, NaN), a near miss, or junk; or two records swapped."""
    d = copy.deepcopy(base)
    fields = _records(d)
    names = sorted({n["instrument"] for n in d["notes"]}) + ["无此", ""]
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 5)) == 0:                         # two records swapped
            group = d[draw(st.sampled_from(["notes", "beats", "cues"]))]
            i, j = draw(st.integers(0, len(group) - 1)), draw(st.integers(0, len(group) - 1))
            group[i], group[j] = group[j], group[i]
            continue
        holder, key = draw(st.sampled_from(fields))
        old = holder[key]
        if isinstance(old, bool) or old is None:
            new = draw(st.sampled_from([True, False, None, 1, "x"]))
        elif isinstance(old, (int, float)):
            new = draw(st.one_of(
                st.sampled_from([0, -1, 1, 5, 127, 128, 86400.0, 90000.0, 1e-5, math.nan, None]),
                st.floats(-5.0, END_S + 5.0), st.integers(0, 127).map(lambda k: k if isinstance(old, int) else float(k)),
                st.just(old * 2)))
        elif isinstance(old, str):
            new = draw(st.one_of(st.sampled_from(names + ["round3_quhou", "lishou", "music", "shejie", "上射"]),
                                 st.text(max_size=3)))
        else:                                                   # position_m
            new = draw(st.sampled_from([[0.0, 0.0], [1.0, 2.0, "x"], None, [1e9, 0.0, 0.0]]))
        holder[key] = new
    return d


def _seconds(d: dict) -> float:
    """How long the damaged timeline would last (0 when it does not load): long ones are set
    aside, as rendering a day of audio is a real render's cost, not a robustness question."""
    try:
        return from_dict(copy.deepcopy(d)).duration
    except Exception:      # refused: the command must refuse it too, cheaply
        return 0.0


@settings(max_examples=EXAMPLES or 30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), command=st.sampled_from(COMMANDS[:-1]))
def test_any_damage_runs_or_is_one_line(tmp_path_factory, base, data, command):
    d = data.draw(damaged(base))
    assume(_seconds(d) <= 2 * END_S)
    out = tmp_path_factory.mktemp("damaged")
    src = save(d, out)
    code, err = run(*argv(command, src, out))
    assert_clean(command, code, err, src, None if command in ("render", "build") else ())
    event(f"{command}: exit {code}")
    if code == 2:
        assert outputs(out) == []
    shutil.rmtree(out)                 # a long run makes hundreds of these: keep the disk free


# -- play: to a private JACK server --------------------------------------------------------------

@pytest.fixture(scope="module")
def jack():
    """The environment of a private JACK server for play (in this process)."""
    with jack_server(sync=True) as env:
        yield {k: v for k, v in env.items() if k.startswith("JACK")}


@contextlib.contextmanager
def playing(jack: dict):
    """play's world: the JACK server's environment, and an empty stdin (play reads keys there)."""
    with pytest.MonkeyPatch.context() as mp, open(os.devnull, encoding="utf-8") as empty:
        for k, v in jack.items():
            mp.setenv(k, v)
        mp.setattr(sys, "stdin", empty)
        yield


def test_play_runs_the_base_and_refuses_the_issue_case(base, tmp_path, jack):
    src = save(base, tmp_path / "ok")
    with playing(jack):
        code, err = run(*argv("play", src, tmp_path))
    assert code == 0, err
    d = copy.deepcopy(base)
    two_hz_on_one_key(d)
    src = save(d, tmp_path / "bad")
    with playing(jack):
        code, err = run(*argv("play", src, tmp_path))
    assert code == 2 and "expected one Hz per MIDI key" in assert_clean("play", code, err, src)


@settings(max_examples=EXAMPLES or 8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_play_any_damage_runs_or_is_one_line(tmp_path_factory, base, jack, data):
    d = data.draw(damaged(base))
    assume(_seconds(d) <= 2 * END_S)
    out = tmp_path_factory.mktemp("damaged-play")
    src = save(d, out)
    with playing(jack):
        code, err = run(*argv("play", src, out))
    assert_clean("play", code, err, src, ("--cues: ", "--from", "--until"))   # the window's own
    event(f"play: exit {code}")


@pytest.mark.parametrize("command", ["render", "build", "compile"])
def test_an_unreadable_syllable_is_one_line(base, tmp_path, command):
    """A sung or spoken syllable the voices cannot read (a digit, a tone past 5, a sign with no
    Mandarin reading; drawn afresh, seed printed) is refused on reading, naming the note: the
    render used to stop on it with a traceback (found by test_any_damage_runs_or_is_one_line)."""
    import random

    seed = random.randrange(2 ** 32)
    rng = random.Random(seed)
    d = copy.deepcopy(base)
    sung = [i for i, n in enumerate(d["notes"]) if n.get("lyric")]
    i = rng.choice(sung)
    d["notes"][i]["lyric"] = rng.choice(["0", "7", "nuo9", "n4o", "★", "é", "ａ"])
    src = save(d, tmp_path)
    code, err = run(*argv(command, src, tmp_path))
    assert code == 2, (seed, err)
    assert err.strip().splitlines() == [err.strip()] and \
        f"{src}: notes[{i}].lyric: expected a syllable" in err, (seed, err)
    assert outputs(tmp_path) == [], (seed, outputs(tmp_path))

"""timeline.schema.json: the documented contract of the timeline JSON, applied by from_dict.

Evidence: jsonschema's own draft 2020-12 validator and meta-schema, the CLI's exit status and
stderr for a refused file, and the dataclasses the JSON is read into.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from importlib import resources
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yuexuan import timeline, timeline_schema
from yuexuan.compiler import compile_file
from yuexuan.timeline import Beat, Ceremony, Cue, Note, Selection, from_dict, to_dict

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "tests" / "data" / "shots_example.csv"
SCHEMA_PATH = ROOT / "yuexuan" / "timeline.schema.json"


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def small() -> dict:
    """A short compiled timeline as JSON (the round-3 call and 貍首), read back as Python reads it."""
    return json.loads(json.dumps(to_dict(compile_file(ROOT / "cues" / "dashe.toml", ["round3_quhou", "lishou"]))))


def test_the_schema_is_a_valid_draft_2020_12_schema(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # the package reads the same file through importlib.resources
    packaged = json.loads((resources.files("yuexuan") / "timeline.schema.json").read_text(encoding="utf-8"))
    assert packaged == schema == timeline_schema.schema()


def test_a_compiled_timeline_validates(schema, default_timeline):
    doc = json.loads(json.dumps(to_dict(default_timeline)))
    jsonschema.Draft202012Validator(schema).validate(doc)       # plain jsonschema, no project code
    assert doc["schema"] == 3 and all(c["beat_s"] > 0 for c in doc["cues"])
    assert to_dict(from_dict(doc)) == doc


def test_the_schema_describes_the_dataclasses(schema):
    """Every record field is in the schema and nothing else; the schema's defaults are the
    dataclasses' (so a field added later as optional reads old files the same way)."""
    for cls, name in ((Ceremony, "ceremony"), (Cue, "cue"), (Note, "note"), (Beat, "beat"),
                      (Selection, "selection")):
        node = schema["$defs"][name]
        assert node["additionalProperties"] is False
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert set(node["properties"]) == set(fields), name
        for fname, f in fields.items():
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            prop = node["properties"][fname]
            if fname in node["required"]:
                continue            # required in JSON (beat_s has a Python default for hand-built cues)
            assert has_default, (name, fname)
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            assert prop.get("default", "<none>") == (list(default) if isinstance(default, tuple) else default)
        assert {k for k, f in fields.items() if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING} <= set(node["required"])
    assert "beat_s" in schema["$defs"]["cue"]["required"]
    assert schema["$defs"]["cue"]["properties"]["beat_s"]["exclusiveMinimum"] == 0


def test_instrument_facts_stay_open(small):
    """Outputs may add facts of their own to an instrument (e.g. synthesis tables)."""
    doc = copy.deepcopy(small)
    name = next(iter(doc["instruments"]))
    doc["instruments"][name]["synth"] = {"partials": [1.0, 2.76], "decay_s": 3.5}
    assert from_dict(doc).instruments[name]["synth"]["decay_s"] == 3.5
    doc["instruments"][name]["gm_program"] = 128
    with pytest.raises(ValueError, match=r"instruments\[.*\]\.gm_program"):
        from_dict(doc)


@pytest.mark.parametrize("damage,named", [
    (lambda d: d["cues"][1].update(beat_s=0), "cues[1].beat_s"),
    (lambda d: d["cues"][1].pop("beat_s"), "missing field 'beat_s'"),
    (lambda d: d["notes"][3].update(velocity="loud"), "notes[3].velocity"),
    (lambda d: d["notes"][3].update(midi=60.0), "notes[3].midi"),       # an integer has no fraction
    (lambda d: d["notes"][3].update(time=-1.0), "notes[3].time"),
    (lambda d: d["notes"][3].update(cue="nosuch"), "notes[3].cue"),
    (lambda d: d["notes"][3].update(colour="red"), "unknown field 'colour'"),
    (lambda d: d["beats"][2].update(jie=0), "beats[2].jie"),
    (lambda d: d["cues"][1].update(id="round3_quhou"), "cues[1].id"),
])
def test_a_damaged_field_is_named(small, damage, named):
    doc = copy.deepcopy(small)
    damage(doc)
    with pytest.raises(ValueError) as exc:
        from_dict(doc)
    assert named in str(exc.value) and "\n" not in str(exc.value)


def test_nan_and_infinity_are_refused(small, tmp_path, cli):
    """Python's json reads NaN and Infinity; the schema's numbers are finite."""
    doc = copy.deepcopy(small)
    doc["notes"][4]["time"] = math.inf
    doc["cues"][0]["phrases"] = [math.nan]
    for key, where in (("notes", "notes[4].time"), ("cues", "cues[0].phrases[0]")):
        one = copy.deepcopy(small)
        one[key] = doc[key]
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps(one), encoding="utf-8")           # writes NaN / Infinity
        r = cli("check", path, SHOTS)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        assert where in r.stderr and "finite" in r.stderr and str(path) in r.stderr


@pytest.mark.parametrize("version", [1, 2, None, 4])
def test_another_schema_number_is_one_line_telling_to_recompile(small, tmp_path, cli, version):
    doc = copy.deepcopy(small)
    if version is None:
        del doc["schema"]
    else:
        doc["schema"] = version
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    r = cli("check", old, SHOTS)
    assert r.returncode == 2 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(old) in r.stderr and "recompile" in r.stderr and "yuexuan compile" in r.stderr
    if version in (1, 2):
        assert f"schema {version} is no longer read" in r.stderr


def test_a_hand_built_dict_with_numpy_numbers_is_read(small):
    """The fast check wants JSON's own types; anything else goes to jsonschema, which decides."""
    doc = copy.deepcopy(small)
    doc["notes"][0]["time"] = np.float64(doc["notes"][0]["time"])
    assert from_dict(doc).notes[0].time == small["notes"][0]["time"]


# -- the fast check of notes and beats agrees with jsonschema ------------------------------------

JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.integers(-2, 130),
                        st.floats(allow_nan=True, allow_infinity=True), st.floats(-1, 200),
                        st.text(max_size=4), st.sampled_from(["", "lishou", "建鼓·东", "上射"]),
                        st.lists(st.integers(), max_size=2), st.just({}))


@st.composite
def damaged_record(draw, records: list):
    record = dict(draw(st.sampled_from(records)))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["value", "value", "delete", "add"]))
        if op == "value" and record:
            record[draw(st.sampled_from(sorted(record)))] = draw(JSON_VALUES)
        elif op == "delete" and record:
            del record[draw(st.sampled_from(sorted(record)))]
        elif op == "add":
            record[draw(st.text(max_size=5))] = draw(JSON_VALUES)
    return record


def test_notes_and_beats_take_the_fast_check():
    assert set(timeline_schema._fast_arrays()) == {"notes", "beats"}


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_fast_check_agrees_with_jsonschema(small, data):
    key = data.draw(st.sampled_from(["notes", "beats"]))
    record = data.draw(damaged_record(small[key]))
    fast = timeline_schema._fast_arrays()[key](record)
    doc = {**small, "notes": [], "beats": [], key: [record]}      # the record is the only one
    assert fast == timeline_schema.validator().is_valid(doc), record


def test_to_dict_writes_the_schema_number():
    assert timeline.SCHEMA_VERSION == 3 == timeline_schema.SCHEMA_VERSION

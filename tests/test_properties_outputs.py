"""Property tests for the commands that write files: ``render``, ``guide`` and ``play --auto``.

Any mutated cue sheet either gives complete outputs (read back here: the audio with soundfile,
the site's JSON, SVG and captions, the play report) or fails with exit status 2 and one line
naming the sheet — never a traceback, a hang, or a partial or temporary file; on failure the
previous outputs in the folder are left byte for byte. Commands run in a child process with a
timeout per run (see cli_support.CliWorker). Short selections (``--cues ao`` …) and
8 kHz keep CI cost low; examples whose compiled selection would run past a few minutes of
audio (a mutated ``open_ended_seconds``) are set aside, as their cost is that of a real render,
not a robustness question. ``YX_EXAMPLES`` raises the counts for a deep local run.
"""

from __future__ import annotations

import html.parser
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from cli_support import CliWorker
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from property_support import (
    PREVIOUS,
    assert_clean_failure,
    examples,
    mutated_sheet,
    mutated_timeline,
    small_timeline,
    worker,
)

SELECTIONS = ["ao", "round3_quhou", "round1_quhou", "sixia_bin"]
MAX_AUDIO_S = 300.0          # longer selections are set aside (see the module docstring)


def compiled(src: Path, cue: str):
    """The sheet's compiled selection, or None where it does not compile (the command must then
    fail cleanly) — only used to set aside examples too long to render in a test."""
    from yuexuan.compiler import compile_file
    try:
        return compile_file(src, [cue])
    except Exception:
        return None


def folder_with_previous(d: Path, names) -> Path:
    out = d / "out"
    out.mkdir()
    for n in names:
        (out / n).write_bytes(PREVIOUS)
    return out


def assert_previous_intact(out: Path, names) -> None:
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    assert all((out / n).read_bytes() == PREVIOUS for n in names)


# -- render ------------------------------------------------------------------------------------

@settings(max_examples=examples(30), deadline=None, suppress_health_check=list(HealthCheck))
@given(sheet=mutated_sheet(), cue=st.sampled_from(SELECTIONS), ext=st.sampled_from([".wav", ".flac"]),
       listener=st.sampled_from(["宾", "公", "中庭"]))
def test_render_any_sheet(tmp_path_factory, sheet, cue, ext, listener):
    d = tmp_path_factory.mktemp("render")
    src = d / "s.toml"
    src.write_text(sheet, encoding="utf-8")
    tl = compiled(src, cue)
    assume(tl is None or tl.duration <= MAX_AUDIO_S)
    names = [f"mix{ext}", "mix.vtt", "mix.cue"]
    out = folder_with_previous(d, names)
    code, stdout, err = worker().run(["render", src, "--cues", cue, "--sample-rate", "8000",
                                      "--listener", listener, "-o", out / names[0]], timeout=120)
    assert_clean_failure("render", code, err, [src])
    event(f"exit {code}")
    if code == 2:
        assert_previous_intact(out, names)
        return
    assert sorted(p.name for p in out.iterdir()) == sorted(names)   # nothing hidden left
    audio, sr = sf.read(out / names[0], always_2d=True)
    assert sr == 8000 and audio.shape[1] == 2
    assert np.isfinite(audio).all() and np.abs(audio).max() <= 1.0
    assert tl is not None
    # the file lasts the compiled selection (plus at most a few seconds of decay)
    assert tl.duration - 0.01 <= len(audio) / sr <= tl.duration + 10.0, (len(audio) / sr, tl.duration)
    if tl.notes:
        assert np.abs(audio).max() > 1e-3                          # not silence
    assert f"{len(audio) / sr:.1f} s" in stdout
    vtt = (out / "mix.vtt").read_text(encoding="utf-8")
    assert vtt.startswith("WEBVTT") and all(c.id in vtt for c in tl.cues)
    cue_sheet = (out / "mix.cue").read_text(encoding="utf-8")
    assert cue_sheet.count("TRACK ") == len(tl.cues) and f'FILE "{names[0]}"' in cue_sheet


# -- guide -------------------------------------------------------------------------------------

GUIDE_FILES = ["index.html", "app.js", "style.css", "layout.svg", "captions.vtt", "timeline.json", "glossary.html"]


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(v for k, v in attrs if k == "id")


@settings(max_examples=examples(30), deadline=None, suppress_health_check=list(HealthCheck))
@given(sheet=mutated_sheet(), cue=st.sampled_from(SELECTIONS))
def test_guide_any_sheet(tmp_path_factory, sheet, cue):
    d = tmp_path_factory.mktemp("guide")
    src = d / "s.toml"
    src.write_text(sheet, encoding="utf-8")
    site = folder_with_previous(d, ["index.html"])
    code, stdout, err = worker().run(["guide", src, "--cues", cue, "--no-audio", "-o", site],
                                     timeout=120)
    assert_clean_failure("guide", code, err, [src])
    event(f"exit {code}")
    if code == 2:
        assert_previous_intact(site, ["index.html"])
        return
    assert sorted(p.name for p in site.iterdir()) == sorted(GUIDE_FILES)   # nothing hidden left
    page = (site / "index.html").read_text(encoding="utf-8")
    tags = _Tags()
    tags.feed(page)
    assert page.rstrip().endswith("</html>") and "caption" in tags.ids
    from yuexuan.timeline import from_dict
    tl = from_dict(json.loads((site / "timeline.json").read_text(encoding="utf-8")))
    assert [c.id for c in tl.cues] == [cue]
    assert (site / "captions.vtt").read_text(encoding="utf-8").startswith("WEBVTT")
    assert ET.parse(site / "layout.svg").getroot().tag.endswith("svg")


# -- play --auto -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def jack_worker(jack_async):
    """A worker whose commands see the session's asynchronous private JACK server (the worker's
    time-outs kill: tests/conftest.py, tests/jack_support.py)."""
    w = CliWorker(env=jack_async)
    try:
        yield w
    finally:
        w.close()


WINDOW_S = 1.0


@settings(max_examples=examples(25), deadline=None, suppress_health_check=list(HealthCheck))
@given(sheet=mutated_sheet(), cue=st.sampled_from(["ao", "round3_quhou", "round1_quhou"]),
       start=st.sampled_from([0.0, 0.5, 1.0]))
def test_play_auto_any_sheet(tmp_path_factory, jack_worker, sheet, cue, start):
    """A short window of a mutated sheet played to a virtual JACK port with no operator."""
    d = tmp_path_factory.mktemp("play")
    src = d / "s.toml"
    src.write_text(sheet, encoding="utf-8")
    tl = compiled(src, cue)
    if tl is not None:        # the run lasts until the last note started in the window ends
        ends = [n.time + n.duration for n in tl.notes if start <= n.time < start + WINDOW_S]
        assume(max(ends, default=0.0) - start <= 5.0)
    out = folder_with_previous(d, ["report.json"])
    code, stdout, err = jack_worker.run(
        ["play", src, "--api", "jack", "--cues", cue, "--from", start, "--until", start + WINDOW_S,
         "--auto", "--no-realtime", "--report", out / "report.json"], timeout=60)
    assert_clean_failure("play", code, err, [src, "--cues: ", "--from", "--until"])
    event(f"exit {code}")
    if code == 2:
        assert stdout == ""                    # failed before any port was opened or note sent
        assert_previous_intact(out, ["report.json"])
        return
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert tl is not None                      # it played, so the sheet compiles
    assert f"done {cue}" in stdout or not any(start <= n.time < start + WINDOW_S for n in tl.notes)
    # what must have gone out, counted from the timeline: the setup (tuning, programs), a note-on
    # and its note-off for every sounding note started in the window (a velocity-0 note-on is a
    # note-off: nothing sounds), then All Notes Off on every channel used
    from yuexuan.formats.midimessages import assign_tracks, setup_messages
    setup = setup_messages(tl)
    channel = {t.name: t.channel for t in assign_tracks(tl)}
    window = [n for n in tl.notes if start <= n.time < start + WINDOW_S]
    channels = {m.channel for _, m in setup if hasattr(m, "channel")}
    channels |= {channel[n.instrument] for n in window}
    sounding = sum(n.velocity > 0 for n in window)
    assert report["dropped"] == 0
    # (and first CC 123 and CC 120 on all 16 channels: what a killed run may have left sounding)
    assert report["sent"] == 32 + len(setup) + 2 * sounding + len(channels), (
        f"sent {report['sent']}: 32 resets, {len(setup)} setup, {sounding} notes, "
        f"{len(channels)} channels")


@settings(max_examples=examples(30), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_play_auto_any_saved_timeline(tmp_path_factory, jack_worker, data):
    """A damaged saved timeline (the JSON contract) played for a second: the run, or one line
    naming the file, before any port is opened."""
    text = data.draw(mutated_timeline(small_timeline()))
    d = tmp_path_factory.mktemp("play-json")
    src = d / "t.json"
    src.write_text(text, encoding="utf-8")
    try:                       # set aside a long note in the window (the run waits for its end)
        notes = json.loads(text)["notes"]
        assume(max((n["time"] + n["duration"] for n in notes if 6.0 <= n["time"] < 7.0),
                   default=0.0) <= 12.0)
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    out = folder_with_previous(d, ["report.json"])
    code, stdout, err = jack_worker.run(
        ["play", src, "--api", "jack", "--from", "6", "--until", "7", "--auto", "--no-realtime",
         "--report", out / "report.json"], timeout=60)
    assert_clean_failure("play", code, err, [src, "--cues: ", "--from", "--until"])
    event(f"exit {code}")
    if code == 2:
        assert stdout == ""
        assert_previous_intact(out, ["report.json"])
        return
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["dropped"] == 0

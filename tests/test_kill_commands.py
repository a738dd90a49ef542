"""Interrupting any command that writes files leaves every earlier output intact (issue 7).

Each test starts a command over existing output files, waits for a kill point at which the command
is working (compiling, synthesising, rendering, engraving, writing a temporary file, playing),
sends SIGTERM, SIGINT or SIGKILL, and then checks:

* every output is byte-for-byte the previous one, or else complete and valid (the same bytes as an
  uninterrupted run, or parsed back where the bytes are not reproducible);
* the exit status is 143 (SIGTERM), 130 (SIGINT) or -9 (SIGKILL) — or 0 with every output
  complete, when the command had already finished as the signal arrived;
* no traceback on stderr;
* after SIGTERM or SIGINT nothing but the outputs is left in the output folders (no ``.NAME.*``
  temporary files); after SIGKILL only such temporary files may remain.

``compile`` is covered in tests/test_kill_compile.py, SIGTERM and SIGKILL of a render's mix in
tests/test_render.py; here render adds SIGINT, stems and the chapter sidecars.
"""

from __future__ import annotations

import json
import signal
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from cache_support import artefact
from cli_support import DEFAULT_CUES as DASHE
from cli_support import run_cli
from kill_support import SIGNALS, case_id, digest, kill_run, old, replaced, running_for, same_as, writing
from sheet_support import make_log, scaled_sheet

# The kill points late in a render (writing the audio, the guide after it) are reached with a
# prepared small input: the timeline of these cues saved as JSON (build and guide read it like a
# cue sheet), 5 minutes of audio instead of the ceremony's 25. The early points keep the default
# cue sheet itself.
SMALL_CUES = "xingong,lishou"


def tree_digests(folder: Path) -> dict:
    """{relative path: SHA-256} of every file under ``folder``."""
    return {str(p.relative_to(folder)): digest(p.read_bytes()) for p in folder.rglob("*") if p.is_file()}


# -- build: every output of the default ceremony into one folder ---------------------------------

@pytest.fixture(scope="module")
def small_input(artefact_root) -> Path:
    """SMALL_CUES of the default cue sheet, their timeline saved as ``dashe.json``."""
    def build(d: Path) -> None:
        r = run_cli("compile", DASHE, "--cues", SMALL_CUES, "-o", d / "dashe.mid", "--timeline",
                    d / "dashe.json", fork=False)
        assert r.returncode == 0, r.stderr
    return artefact(artefact_root, "kill-input", (SMALL_CUES,), build) / "dashe.json"


@pytest.fixture(scope="module")
def references(default_build, small_input, artefact_root) -> dict:
    """Each input → what an uninterrupted ``yuexuan build`` of it writes: {relative path: SHA-256}."""
    def build(d: Path) -> None:
        r = run_cli("build", small_input, "-o", d / "out", fork=False)     # a new process (forkserver.py)
        assert r.returncode == 0, r.stderr
    small = artefact(artefact_root, "kill-build", (SMALL_CUES,), build) / "out"
    refs = {DASHE: tree_digests(default_build), small_input: tree_digests(small)}
    for ref in refs.values():
        assert {"dashe.mid", "dashe.json", "dashe.flac", "guide/index.html"} <= set(ref)
    return refs


BUILD_POINTS = {
    "compiling": lambda out: running_for(0.1),
    "rendering": lambda out: writing(out / "dashe.flac", after_s=0.3),
    "guide": lambda out: replaced(out / "dashe.flac"),
}
# every signal early; the later points (seconds each) with some of the signals, on the small input
BUILD_CASES = [(s, "compiling") for s in SIGNALS] + [
    (signal.SIGTERM, "rendering"), (signal.SIGKILL, "rendering"), (signal.SIGINT, "guide")]


@pytest.mark.parametrize("sig,point", BUILD_CASES, ids=case_id)
def test_killed_build_leaves_each_file_old_or_complete(references, small_input, tmp_path, sig, point):
    cues = DASHE if point == "compiling" else small_input
    out = tmp_path / "out"
    outputs = {out / rel: (old(rel), same_as(h)) for rel, h in references[cues].items()}
    o = kill_run(["build", cues, "-o", out], sig, BUILD_POINTS[point](out), outputs, dirs=[out])
    states = {str(p.relative_to(out)): s for p, s in o.files.items()}
    assert states["dashe.json"] == "old" or states["dashe.mid"] == "new"     # written in that order
    if point in ("compiling", "rendering"):        # the audio takes seconds more
        assert states["dashe.flac"] == states["guide/index.html"] == "old"
    if point == "rendering":                       # MIDI and timeline came first, then the mix
        assert states["dashe.mid"] == states["dashe.json"] == "new"
    if point == "guide":
        assert states["dashe.flac"] == "new"


# -- check -o FILE over a large shot log ---------------------------------------------------------

SHOTS_N = 100_000        # judged in about 2 s, written in about 0.1 s (JSON)


@pytest.fixture(scope="module")
def shot_log(tmp_path_factory, ceremony) -> Path:
    beats = np.array([b.time for b in ceremony.beats])
    p = tmp_path_factory.mktemp("shots") / "shots.csv"
    make_log(p, SHOTS_N, beats)
    return p


def _check_report(data: bytes) -> bool:
    try:
        doc = json.loads(data)
    except ValueError:
        return False
    return len(doc["shots"]) == SHOTS_N and doc["tallies"]


@pytest.mark.parametrize("point", ["judging", "writing"])
@pytest.mark.parametrize("sig", SIGNALS, ids=case_id)
def test_killed_check_keeps_the_previous_report(shot_log, tmp_path, sig, point):
    out = tmp_path / "out" / "verdict.json"
    ready = running_for(0.5) if point == "judging" else writing(out)
    o = kill_run(["check", DASHE, shot_log, "--format", "json", "-o", out], sig, ready,
                 {out: (old("verdict"), _check_report)}, dirs=[out.parent])
    if point == "judging":
        assert o.files[out] == "old"


# -- note: a long note at 192 kHz: the voice while it synthesises; while it writes, the pipe (簜),
# whose minute takes half the voice's CPU to reach the same minute of FLAC to write ----------------

def _note_flac(data: bytes) -> bool:
    import io
    try:
        x, rate = sf.read(io.BytesIO(data), dtype="float32")
    except RuntimeError:
        return False
    return rate == 192000 and len(x) >= 60 * rate and np.abs(x).max() > 0.5


@pytest.mark.parametrize("point", ["synthesising", "writing"])
@pytest.mark.parametrize("sig", SIGNALS, ids=case_id)
def test_killed_note_keeps_the_previous_file(tmp_path, sig, point):
    out = tmp_path / "out" / "ge.flac"
    ready = running_for(0.5) if point == "synthesising" else writing(out)
    sound = ["歌", "夷", "--lyric", "乐"] if point == "synthesising" else ["簜", "夷"]
    o = kill_run(["note", *sound, "--duration", "60", "--sample-rate", "192000",
                  "-o", out], sig, ready, {out: (old("note"), _note_flac)}, dirs=[out.parent])
    if point == "synthesising":
        assert o.files[out] == "old"


# -- layout of a sheet with a 100-fold roster (near the 24-hour limit: about a second to compile) -

@pytest.fixture(scope="module")
def big_sheet(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("big") / "big.toml"
    p.write_text(scaled_sheet(DASHE.read_text(encoding="utf-8"), 100), encoding="utf-8")
    return p


def _svg(data: bytes) -> bool:
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return False
    return root.tag.endswith("svg") and "笙钟" in data.decode("utf-8")


@pytest.mark.parametrize("sig", SIGNALS, ids=case_id)
def test_killed_layout_keeps_the_previous_drawing(big_sheet, tmp_path, sig):
    out = tmp_path / "out" / "layout.svg"
    o = kill_run(["layout", big_sheet, "-o", out], sig, running_for(0.3),
                 {out: (old("layout"), _svg)}, dirs=[out.parent])
    assert o.files[out] == "old"


# -- guide of the whole ceremony, rendering its own audio ----------------------------------------

GUIDE_POINTS = {
    "rendering": lambda out: running_for(2.0),
    "writing-audio": lambda out: writing(out / "dashe.flac", after_s=0.2),
    "site": lambda out: replaced(out / "dashe.flac"),
}
# every signal early in the default ceremony's render; the points after it on the small input
GUIDE_CASES = [(s, "rendering") for s in SIGNALS] + [
    (signal.SIGTERM, "site"), (signal.SIGINT, "writing-audio"), (signal.SIGKILL, "writing-audio")]


@pytest.mark.parametrize("sig,point", GUIDE_CASES, ids=case_id)
def test_killed_guide_leaves_each_file_old_or_complete(references, small_input, tmp_path, sig, point):
    # the standalone guide writes what build writes into guide/, plus the render's chapter sidecars
    # beside its audio (the same files build writes beside its own)
    cues = DASHE if point == "rendering" else small_input
    build_reference = references[cues]
    ref = {rel.removeprefix("guide/"): h for rel, h in build_reference.items() if rel.startswith("guide/")}
    ref.update({n: build_reference[n] for n in ("dashe.vtt", "dashe.cue")})
    out = tmp_path / "site"
    outputs = {out / rel: (old(rel), same_as(h)) for rel, h in ref.items()}
    o = kill_run(["guide", cues, "-o", out], sig, GUIDE_POINTS[point](out), outputs, dirs=[out])
    if point != "site":
        assert o.files[out / "dashe.flac"] == "old" and o.files[out / "index.html"] == "old"


# -- score: the whole ceremony as MusicXML; a short selection engraved with LilyPond --------------

def _musicxml(data: bytes, parts_min: int = 2) -> bool:
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return False
    return root.tag == "score-partwise" and len(root.findall("part")) >= parts_min and \
        len(root.findall("part/measure/note")) > 100


SCORE_CASES = [(s, "building") for s in SIGNALS] + [(signal.SIGTERM, "writing"), (signal.SIGINT, "writing")]


@pytest.mark.parametrize("sig,point", SCORE_CASES, ids=case_id)
def test_killed_score_keeps_the_previous_musicxml(tmp_path, sig, point):
    """Building: the whole ceremony (5 s of music21). Writing: the two sung cues, whose MusicXML
    takes 0.8 s to write once notated (1.5 s), killed 0.2 s into it."""
    out = tmp_path / "out" / "dashe.musicxml"
    ready = running_for(2.0) if point == "building" else writing(out, after_s=0.2)
    cues = [] if point == "building" else ["--cues", "luming,lishou"]
    o = kill_run(["score", DASHE, *cues, "-o", out], sig, ready, {out: (old("score"), _musicxml)},
                 dirs=[out.parent])
    assert o.files[out] == "old"


def _pdf(data: bytes) -> bool:
    return data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:]


def _ours(tmpdir: Path) -> list:
    """Processes whose command line names ``tmpdir`` (musicxml2ly, lilypond)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if str(tmpdir).encode() in cmd:
                found.append((d.name, cmd.replace(b"\0", b" ").decode(errors="replace")))
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=case_id)
def test_killed_score_pdf_keeps_the_previous_pdf(tmp_path, sig):
    """Killed while LilyPond engraves: the MusicXML is the new one, the PDF the previous one, and
    LilyPond is stopped with its temporary folder removed. (LilyPond is a CI dependency,
    tests/system-deps.sh. SIGKILL is left out: it would orphan a LilyPond run of some 20 s.)"""
    out = tmp_path / "out" / "luming.musicxml"
    pdf = out.with_suffix(".pdf")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    o = kill_run(["score", DASHE, "--cues", "luming", "--pdf", "-o", out], sig, replaced(out, after_s=1.0),
                 {out: (old("score"), lambda d: _musicxml(d, parts_min=1)), pdf: (old("pdf"), _pdf)},
                 dirs=[out.parent], env={"TMPDIR": str(tmp)})
    assert o.files == {out: "new", pdf: "old"}
    deadline = time.monotonic() + 5
    while _ours(tmp) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _ours(tmp), "LilyPond still running"
    assert list(tmp.iterdir()) == []


# -- render: SIGINT, stems and chapter sidecars ---------------------------------------------------

@pytest.mark.parametrize("sig", SIGNALS, ids=case_id)
def test_killed_render_keeps_mix_sidecars_and_stems(tmp_path, sig):
    out = tmp_path / "out"
    mix, stems = out / "r.flac", out / "stems"
    names = ["建鼓·东", "笙钟", "歌"]
    outputs = {p: (old(p.name), lambda d: False)
               for p in [mix, mix.with_suffix(".vtt"), mix.with_suffix(".cue")]
               + [stems / f"{n}.flac" for n in names]}
    o = kill_run(["render", DASHE, "--cues", "luming,xingong", "--stems", stems, "-o", mix], sig,
                 writing(mix, min_bytes=1), outputs, dirs=[out])
    assert set(o.files.values()) == {"old"}


# -- play: SIGINT, SIGTERM and SIGKILL mid-show, with --report, over a private JACK server --------

@pytest.fixture
def jack_servers(jack, jack_async):
    """The session's two private JACK servers (tests/conftest.py): synchronous (no MIDI lost when a
    client is late, so "nothing left sounding" can be checked) and asynchronous (a synchronous one
    wedges when a client is SIGKILLed); tests/jack_support.py has the measurements."""
    return {True: jack, False: jack_async}


@pytest.mark.parametrize("sig", SIGNALS, ids=case_id)
def test_killed_play_reports_and_leaves_nothing_sounding(jack_servers, tmp_path, sig):
    """SIGINT and SIGTERM end the show (exit 130, as an operator's Ctrl-C): all notes off, then the
    report of the show so far replaces the previous one. SIGKILL leaves the previous report."""
    from jack_support import Recorder
    from play_support import Play, as_messages, assert_nothing_left_sounding, note_ons

    jack = jack_servers[sig != signal.SIGKILL]
    rep_dir = tmp_path / "report"
    rep_dir.mkdir()
    report = rep_dir / "r.json"
    report.write_bytes(old("report"))
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    try:
        play = Play(jack, "--port", "rec", "--cues", "lishou", "--from", "40", "--auto", report=report)
        try:
            play.expect(r"^playing lishou")
            time.sleep(1.0)
            assert play.proc.poll() is None
            sent = time.monotonic()
            play.proc.send_signal(sig)
            rc = play.proc.wait(15)
        finally:
            if play.proc.poll() is None:
                play.proc.kill()
                play.proc.wait()
        err = play.proc.stderr.read()
    finally:
        msgs = as_messages(rec.stop())
    assert "Traceback" not in err, err
    assert len(note_ons(msgs)) > 10                      # it was playing
    assert [p.name for p in rep_dir.iterdir()] == ["r.json"]
    if sig == signal.SIGKILL:
        assert rc == -signal.SIGKILL
        assert report.read_bytes() == old("report")
        print(f"play {sig.name}: exit {rc}; report old")
        return
    assert rc == 130 and "interrupted; all notes off" in err, err
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert [a["cues"] for a in doc["anchors"]] == [["lishou"]] and doc["sent"] > 10
    assert doc["timing_ms"]["count"] > 10
    late = [m for t, m in msgs if m.type == "note_on" and m.velocity and t > sent + 0.05]
    assert not late, f"{len(late)} notes began after the signal"
    assert_nothing_left_sounding(msgs)
    print(f"play {sig.name}: exit {rc}; report new, {doc['sent']} messages sent")

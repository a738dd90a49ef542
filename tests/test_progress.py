"""Progress on a terminal: build, guide and render draw a bar while they render and a line per stage;
piped, they print nothing extra on stderr. The terminal is a real pseudo-terminal (os.openpty)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import soundfile as sf

from yuexuan.commands.progress import Progress
from yuexuan.timeline import from_dict

ROOT = Path(__file__).resolve().parent.parent
CUES = ROOT / "cues" / "dashe.toml"
CUE = "gai"                  # 陔: one 40 s cue, a few seconds to build
FRAME = re.compile(r"(\w+) \[([#.]{25})\] +(\d+)% ")


@pytest.fixture(scope="module")
def one_cue(tmp_path_factory) -> Path:
    """The timeline of the one cue, saved as JSON (build reads a saved timeline like a cue sheet)."""
    d = tmp_path_factory.mktemp("one-cue")
    r = subprocess.run([sys.executable, "-m", "yuexuan", "compile", str(CUES), "--cues", CUE,
                        "-o", str(d / f"{CUE}.mid"), "--timeline", str(d / f"{CUE}.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return d / f"{CUE}.json"


def run_on_terminal(args: list) -> tuple:
    """Run ``yuexuan ARGS`` with stderr a pseudo-terminal: (returncode, stdout, what the terminal
    received)."""
    master, slave = os.openpty()
    received = bytearray()

    def read():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:              # EIO: every writer of the slave has closed it
                return
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        p = subprocess.run([sys.executable, "-m", "yuexuan", *map(str, args)], stdout=subprocess.PIPE,
                           stderr=slave, stdin=subprocess.DEVNULL, text=True, timeout=300)
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return p.returncode, p.stdout, received.decode("utf-8", errors="replace")


def bar_frames(terminal: str, command: str) -> list:
    """The percentages of the bar's frames, in the order drawn; each frame starts with a carriage
    return and its cells agree with its percentage."""
    frames = []
    for piece in terminal.split("\r")[1:]:
        m = FRAME.match(piece)
        if m and m.group(1) == command:
            pct = int(m.group(3))
            assert m.group(2).count("#") == pct * 25 // 100, piece
            frames.append(pct)
    return frames


def stage_lines(terminal: str, command: str) -> list:
    lines = [s.strip() for s in re.split(r"[\r\n]", terminal)]
    return [s.removeprefix(f"{command}: ") for s in lines if s.startswith(f"{command}: ")]


def test_build_on_a_terminal_shows_the_bar_and_its_stages(one_cue, tmp_path):
    out = tmp_path / "out"
    rc, stdout, terminal = run_on_terminal(["build", one_cue, "-o", out])
    assert rc == 0, terminal
    frames = bar_frames(terminal, "build")
    assert len(frames) >= 3 and frames[-1] == 100, terminal
    assert frames == sorted(set(frames)), frames               # only forward, each drawn once
    assert stage_lines(terminal, "build") == [
        "MIDI and timeline written", "rendering the audio…", f"audio written ({CUE}.flac)",
        f"guide written ({out / 'guide' / 'index.html'})", f"score written ({CUE}.musicxml)",
        f"layout written ({CUE}.svg)"]
    # the bar is drawn between "rendering" and "audio written", and cleared before the next line
    assert terminal.index("rendering the audio…") < terminal.index("build [") \
        < terminal.index("audio written")
    assert re.search(r"100% \w*\s*\r {20,}\r" + re.escape("build: audio written"), terminal), terminal
    # it accompanied a real render: the audio is the cue's length (soundfile), stdout lists the files
    info = sf.info(str(out / f"{CUE}.flac"))
    assert 39.0 < info.duration < 60.0
    assert str(out / f"{CUE}.flac") in stdout.splitlines()
    assert "\r" not in stdout and "build [" not in stdout


def test_build_piped_prints_no_progress(one_cue, tmp_path):
    r = subprocess.run([sys.executable, "-m", "yuexuan", "build", str(one_cue), "-o", str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert (tmp_path / "out" / f"{CUE}.flac").is_file()


def test_guide_on_a_terminal_shows_the_bar_while_it_renders(one_cue, tmp_path):
    out = tmp_path / "site"
    rc, _, terminal = run_on_terminal(["guide", one_cue, "-o", out])
    assert rc == 0, terminal
    frames = bar_frames(terminal, "guide")
    assert len(frames) >= 3 and frames[-1] == 100 and frames == sorted(set(frames)), terminal
    assert stage_lines(terminal, "guide") == [
        "rendering the audio…", f"audio written ({CUE}.flac)", f"site written ({out / 'index.html'})"]
    assert sf.info(str(out / f"{CUE}.flac")).duration > 39.0


def test_guide_with_its_audio_given_draws_no_bar(one_cue, tmp_path):
    audio = tmp_path / "given.wav"           # as long as the cue (guide refuses another length)
    seconds = from_dict(json.loads(one_cue.read_text(encoding="utf-8"))).duration
    sf.write(str(audio), [0.0] * int(seconds * 8000), 8000)
    rc, _, terminal = run_on_terminal(["guide", one_cue, "-o", tmp_path / "site", "--audio", audio])
    assert rc == 0, terminal
    assert bar_frames(terminal, "guide") == []
    assert stage_lines(terminal, "guide") == [f"site written ({tmp_path / 'site' / 'index.html'})"]


def test_render_on_a_terminal_shows_the_bar_and_clears_it(one_cue, tmp_path):
    rc, stdout, terminal = run_on_terminal(["render", one_cue, "-o", tmp_path / "x.wav",
                                            "--sample-rate", "8000"])
    assert rc == 0, terminal
    frames = bar_frames(terminal, "render")
    assert len(frames) >= 3 and frames[-1] == 100 and frames == sorted(set(frames)), terminal
    assert terminal.rstrip(" ").endswith("\r")           # the last thing drawn is the cleared line
    assert stdout.startswith(str(tmp_path / "x.wav"))


def test_progress_is_silent_off_a_terminal_and_goes_only_forward():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    quiet = io.StringIO()
    p = Progress("build", quiet)
    p(0.5, "mix")
    p.stage("done")
    p.done()
    assert quiet.getvalue() == ""

    term = Terminal()
    p = Progress("build", term)
    for f in (0.1, 0.1, 0.6, 0.55, 1.0):         # a repeat and a step back (a second gain pass)
        p(f, "level")
    assert bar_frames(term.getvalue(), "build") == [10, 60, 100]

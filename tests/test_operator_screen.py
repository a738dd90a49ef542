"""The operator's screen of ``yuexuan play``, read through a terminal emulator (tmux, 80×24) while
the show plays to a private JACK server and a separate recorder, with junk and a long name sent
over OSC (loopback only, a bounded handful of datagrams)."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from jack_support import Recorder
from osc_support import free_udp_port
from prompt_toolkit.utils import get_cwidth
from pythonosc.udp_client import SimpleUDPClient

ROOT = Path(__file__).resolve().parent.parent
DASHE = ROOT / "cues" / "dashe.toml"
ROWS, COLUMNS = 24, 80


class Tmux:
    """A tmux server of this test's own (its own socket), one window running ``argv``."""

    def __init__(self, argv: list[str], env: dict, cwd: Path, columns: int = COLUMNS,
                 rows: int = ROWS):
        if shutil.which("tmux") is None:
            pytest.fail("tmux is not installed (tests/system-deps.sh)")
        self.socket = f"yx-{uuid.uuid4().hex[:8]}"
        keep = {k: v for k, v in env.items() if k.startswith(("JACK_", "YUEXUAN_"))}
        command = " ".join(["cd", shlex.quote(str(cwd)), "&&", "exec", "env",
                            *(shlex.quote(f"{k}={v}") for k, v in keep.items()),
                            *map(shlex.quote, argv)])
        self._tmux("-f", "/dev/null", "new-session", "-d", "-s", "yx", "-x", str(columns),
                   "-y", str(rows), command)
        self._tmux("set-option", "-t", "yx", "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout

    def screen(self) -> list[str]:
        return self._tmux("capture-pane", "-p", "-t", "yx").rstrip("\n").split("\n")

    def wait_for(self, text: str, timeout: float = 15.0) -> list[str]:
        end = time.monotonic() + timeout
        while True:
            lines = self.screen()
            if any(text in line for line in lines):
                return lines
            if time.monotonic() > end:
                raise AssertionError(f"no {text!r} on the screen:\n" + "\n".join(lines))
            time.sleep(0.1)

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "yx", *keys)

    def dead(self) -> bool:
        return self._tmux("display-message", "-p", "-t", "yx", "#{pane_dead}").strip() == "1"

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


def test_screen_keeps_its_lines_under_junk_and_a_long_name(jack, tmp_path):
    port = free_udp_port()
    rec = Recorder(jack, "rec", tmp_path / "rec.jsonl")
    term = Tmux([sys.executable, "-m", "yuexuan", "play", str(DASHE), "--api", "jack", "--port",
                 "rec", "--cues", "lishou", "--from", "11", "--osc", str(port), "--auto",
                 "--report", str(tmp_path / "r.json")], jack, ROOT)
    try:
        term.wait_for("NOW   lishou")
        client = SimpleUDPClient("127.0.0.1", port)
        client.send_message("/yuexuan/shot", ["上耦上射", "士", "上射", "干", "贯"])
        term.wait_for("shot 1")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for i in range(8):                                  # 8 junk datagrams
                s.sendto(b"junk %d" % i, ("127.0.0.1", port))
        client.send_message("/yuexuan/shot", ["射" * 1500, "士", "上射", "干", "贯"])
        client.send_message("/yuexuan/go", [])      # --auto: no cue left; shown with its source
        term.wait_for("bad input: 9")
        lines = term.wait_for("remote GO from 127.0.0.1:")
        text = "\n".join(lines)
        assert len(lines) <= ROWS
        assert all(sum(get_cwidth(c) for c in line) <= COLUMNS for line in lines), text
        assert lines[0].startswith("乐县 yuexuan play — PLAYING"), text
        assert "cue clock" in lines[0], text
        assert any(line.startswith("NOW   lishou") and "show clock" in line for line in lines), text
        for part in ("NOW   lishou", "NEXT STROKE", "shot 1", "osc 127.0.0.1:%d" % port,
                     "log none", "out: rec"):
            assert part in text, f"{part!r} not on the screen:\n{text}"
        # one q asks; the show goes on
        term.keys("q")
        after = term.wait_for("press q again")
        assert not term.dead() and "PLAYING" in after[0], "\n".join(after)
        term.keys("q")                                          # asked twice: it ends
        end = time.monotonic() + 10
        while not term.dead() and time.monotonic() < end:
            time.sleep(0.1)
        assert term.dead(), "\n".join(term.screen())
    finally:
        term.kill()
        rec.stop()


def _is_english(text: str) -> bool:
    return all(get_cwidth(c) == 1 for c in text)


def test_english_screen_shows_each_cue_in_english_and_labels_the_clocks(jack, ceremony, tmp_path):
    """``play --lang en`` at 100×30: the cue playing and the next one each with its English gloss,
    the playing one's English condition to end (open-ended) and the next one's to start, no quote
    of the text in Chinese, and both clocks labelled."""
    now, nxt = ceremony.cue("sixia_gong"), ceremony.cue("luming")
    columns, rows = 100, 30
    term = Tmux([sys.executable, "-m", "yuexuan", "play", str(DASHE), "--api", "jack", "--cues",
                 f"{now.id},{nxt.id}", "--auto", "--lang", "en", "--report", str(tmp_path / "r.json")],
                jack, ROOT, columns, rows)
    try:
        lines = term.wait_for(f"NOW   {now.id}")
        text = "\n".join(lines)
        assert len(lines) <= rows and all(sum(get_cwidth(c) for c in line) <= columns for line in lines)
        assert "cue clock" in lines[0] and any(
            line.startswith(f"NOW   {now.id}") and "show clock" in line for line in lines), text
        wanted = [now.gloss, f"open-ended: soft stop (乐阕) when {now.ends_when_en}", nxt.gloss,
                  f"GO when {nxt.starts_when_en}"]
        for want in wanted:
            head = want[:60]
            assert any(line.strip().startswith(head) for line in lines), f"{head!r}:\n{text}"
        assert all(_is_english(w.replace("(乐阕)", "")) for w in wanted)
        assert now.source[:8] not in text and nxt.starts_when[:8] not in text, text
        # the NOW line, then its gloss and its condition, then NEXT, its gloss and its condition
        at = [next(i for i, line in enumerate(lines) if line.strip().startswith(w[:60])) for w in wanted]
        assert at == sorted(at), text
    finally:
        term.kill()

"""``play``'s rig and process-wide settings: whatever was opened is closed, and whatever was
changed for the process is restored, when ``play`` ends — here when its MIDI port cannot open, after
the shots log and the OSC port have (no JACK server: none is started)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys

import pytest

from yuexuan import cli
from yuexuan.live import process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _settings() -> tuple[object, ...]:
    return (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM),
            signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGQUIT),
            sys.getswitchinterval(), tuple(logging.getLogger().handlers))


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_process_settings_are_set_in_one_place_and_restored():
    before = _settings()
    with contextlib.ExitStack() as stack:
        process.settings(stack, quiet_root_logger=True)
        # SIGTERM, SIGHUP (the terminal closed) and SIGQUIT end it as Ctrl-C
        assert all(signal.getsignal(s) is process.on_term
                   for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT))
        assert sys.getswitchinterval() == pytest.approx(0.0005)
        assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger().handlers)
        process.ignore_stop_signals()                                  # as on the way out
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert _settings() == before


def test_a_port_that_does_not_open_closes_the_log_and_the_osc_port(tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.setenv("JACK_NO_START_SERVER", "1")                 # no server: the port fails
    monkeypatch.delenv("JACK_DEFAULT_SERVER", raising=False)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "shots.csv"
    before, fds = _settings(), _open_fds()
    rc = cli.main(["play", os.path.join(ROOT, "cues", "dashe.toml"), "--cues", "lishou",
                   "--api", "jack", "--port", "yuexuan-test-none", "--osc", str(port),
                   "--shots-log", str(log)])
    err = capsys.readouterr().err.strip().splitlines()
    # no backend (or, with a default server running, no such port): one line either way
    assert rc == 2 and len(err) == 1 and err[0].startswith("yuexuan play: --") and "MIDI" in err[0]
    # the log file itself is written with its first row (scoring/logwrite.py); what opening it
    # made, the reserve beside it, was given back on the way out
    assert not log.exists() and not (tmp_path / "shots.csv.reserve").exists()
    assert _open_fds() <= fds                                        # … and closed, as the socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", port))                                  # the OSC port is free again
    assert _settings() == before

"""OSC on the test's side of a live show: a free UDP port and an inbox that records what the show sends."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_server import BlockingOSCUDPServer


class ToOne:
    """A receiver of the show's OSC listener (yuexuan.live.osc.Receiver) that hands every record,
    whatever its kind, to one function."""

    def __init__(self, deliver):
        self.deliver = deliver

    def on_loose(self, record):
        return self.deliver(record)

    on_shot = on_correction = on_command = on_bad = on_loose


def free_udp_port() -> int:
    """A UDP port on 127.0.0.1 that nothing is bound to now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OscInbox:
    """An OSC server on a thread in this process: every message as (monotonic arrival s, address, args)."""

    def __init__(self):
        d = Dispatcher()
        d.set_default_handler(lambda address, *args: self.got.append(
            (time.monotonic(), address, list(args))))
        self.got: list = []
        self.server = BlockingOSCUDPServer(("127.0.0.1", 0), d)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def wait_for(self, address: str, timeout: float) -> tuple:
        """The first message to ``address``, waiting up to ``timeout`` s (AssertionError after)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for m in list(self.got):
                if m[1] == address:
                    return m
            time.sleep(0.002)
        raise AssertionError(f"no {address} within {timeout} s; got {self.got[:5]}")

    def of(self, address: str) -> list:
        return [m for m in self.got if m[1] == address]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def bound_sender(host: str) -> socket.socket:
    """A UDP socket sending from ``host`` (127.0.0.2: a foreign source, still loopback)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((host, 0))
    return s


@contextlib.contextmanager
def tiny_tmpfs(where: Path, size: str = "64k"):
    """A tmpfs of ``size`` mounted at ``where`` (root only: skipped otherwise), unmounted after."""
    import pytest

    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                            str(where)], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> int:
    """Fill the file system of ``folder`` with a filler file; the bytes written."""
    n = 0
    with open(folder / "filler", "wb", buffering=0) as f:
        try:
            while True:
                n += f.write(b"\0" * 4096) or 0
        except OSError:
            pass
    return n

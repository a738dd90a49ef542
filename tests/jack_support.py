"""JACK for the live-MIDI tests: a private dummy-backend server and a recording client.

``jack_server()`` starts ``jackd --no-realtime -d dummy -p 64`` under a private server name
(clients find it through ``JACK_DEFAULT_SERVER``). ``Recorder`` runs this file as a separate
process (``python tests/jack_support.py record CLIENT OUT.jsonl``) that opens a JACK MIDI input
``CLIENT:in`` and writes every message it receives, stamped with ``time.monotonic()`` on
arrival, when it gets SIGTERM.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

PERIOD_FRAMES = 64
RATE_HZ = 48000


def jack_env(server: str) -> dict:
    env = dict(os.environ)
    env["JACK_DEFAULT_SERVER"] = server
    env["JACK_NO_AUDIO_RESERVATION"] = "1"
    env["JACK_NO_START_SERVER"] = "1"
    return env


@contextlib.contextmanager
def jack_server(period: int = PERIOD_FRAMES, rate: int = RATE_HZ):
    """Run a private JACK dummy server; yields the environment for its clients."""
    if shutil.which("jackd") is None:
        raise RuntimeError("jackd is not installed (Debian jackd2; see tests/system-deps.sh)")
    name = f"yx{uuid.uuid4().hex[:10]}"
    env = jack_env(name)
    proc = subprocess.Popen(["jackd", "-n", name, "--no-realtime", "-d", "dummy",
                             "-p", str(period), "-r", str(rate)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                raise RuntimeError("jackd exited: " + proc.stderr.read().decode(errors="replace"))
            ok = subprocess.run(["jack_lsp"], env=env, capture_output=True, timeout=5)
            if ok.returncode == 0 and b"system:" in ok.stdout:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("jackd did not come up within 10 s")
            time.sleep(0.1)
        yield env
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Recorder:
    """A separate process recording a JACK MIDI input named ``client:in``."""

    def __init__(self, env: dict, client: str, out: Path):
        self.out = Path(out)
        self.client = client
        self.proc = subprocess.Popen([sys.executable, __file__, "record", client, str(self.out)],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"recorder failed: {line}{self.proc.stderr.read()}")

    def stop(self) -> list[tuple[float, list[int]]]:
        """Stop recording; ``(arrival monotonic s, message bytes)`` in arrival order."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        rows = []
        for line in self.out.read_text().splitlines():
            t, data = json.loads(line)
            rows.append((t, data))
        return rows

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _record(client: str, out: str) -> None:
    import threading

    import rtmidi

    received = []
    lock = threading.Lock()

    def on_message(event, _data):
        now = time.monotonic()
        with lock:
            received.append((now, event[0]))

    midi_in = rtmidi.MidiIn(rtmidi.API_UNIX_JACK, name=client)
    midi_in.ignore_types(sysex=False, timing=False, active_sense=True)
    midi_in.set_callback(on_message)
    midi_in.open_virtual_port("in")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print("ready", flush=True)
    while not stop.wait(0.1):
        pass
    time.sleep(0.05)
    midi_in.cancel_callback()
    midi_in.close_port()
    with lock:
        rows = list(received)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        for t, data in rows:
            f.write(json.dumps([t, list(data)]) + "\n")
    os.replace(tmp, out)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "record":
        _record(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: jack_support.py record CLIENT OUT.jsonl")

"""The watching process of :class:`yuexuan.live.jack_server.ServerWatch`:
``python -m yuexuan.live.jack_watch RETRY_S``.

It holds a never-activated JACK-Client client and says on stdout, a line each, ``ready``,
``error MESSAGE`` (at start), ``lost T`` when the server shuts down and ``back T`` when a client
of a new server opened (T: ``time.monotonic()``, the system-wide clock). It ends, without running
libjack's clean-up, when its stdin closes (the show ended, or died).

A process of its own because libjack (the system's, loaded by JACK-Client) and the copy that
python-rtmidi's wheel bundles do not share one process safely: once in ~20 shows closing this
client blocked on a libjack mutex, and once in ~4 test runs ``play`` never exited afterwards.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from typing import Any

NAME = "yuexuan-server"        # the watching client's name


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def _open(jack: Any, down: threading.Event) -> Any:
    client = jack.Client(NAME, no_start_server=True)

    def on_shutdown(status: object, reason: str) -> None:     # libjack's thread: only note it
        _say(f"lost {time.monotonic():.6f}")
        down.set()
    client.set_shutdown_callback(on_shutdown)
    return client


OPEN_TRIES = 3                 # a server busy with other clients may fail an open once (as
OPEN_RETRY_S = 0.3             # yuexuan.live.rtmidi_clients.open_client): tried again, s apart


def main(retry_s: float) -> None:
    down = threading.Event()
    try:
        import jack  # JACK-Client

        for attempt in range(OPEN_TRIES):
            try:
                client: Any = _open(jack, down)
                break
            except jack.JackError:
                if attempt + 1 == OPEN_TRIES:
                    raise
                time.sleep(OPEN_RETRY_S)
    except Exception as exc:        # ImportError, OSError, JackError: each said as it is
        _say(f"error {exc}".replace("\n", " "))
        os._exit(1)
    _say("ready")
    dead = []                      # clients of servers that shut down: never closed (libjack's
    while True:                    # close of such a client may block), kept from the collector
        ready, _, _ = select.select([0], [], [], retry_s)
        if ready and not os.read(0, 4096):
            os._exit(0)            # stdin closed: no libjack clean-up (it is what may block)
        if not down.is_set():
            continue
        fresh = threading.Event()
        try:
            new = _open(jack, fresh)
        except jack.JackError:
            continue
        dead.append(client)
        client, down = new, fresh
        _say(f"back {time.monotonic():.6f}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.1)

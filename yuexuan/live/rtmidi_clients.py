"""python-rtmidi's clients on the ALSA or JACK backend: opening one (with retries on a busy JACK
server, libjack's and alsa-lib's chatter on stderr silenced), listing and finding ports, and a
realtime thread for the ones that poll. :mod:`yuexuan.live.midi_out` and
:mod:`yuexuan.live.midi_in` build the show's output and inputs on them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import rtmidi

from yuexuan.errors import UserError

APIS = {"alsa": rtmidi.API_LINUX_ALSA, "jack": rtmidi.API_UNIX_JACK}
CLIENT = "yuexuan"
JACK_OPEN_TRIES = 3     # opens of a JACK client before "cannot open" (see open_client)
JACK_RETRY_S = 0.3      # between them, s


def api_id(api: str) -> int:
    """The rtmidi API constant for ``alsa`` or ``jack``, checked against this build."""
    if api not in APIS:
        raise UserError(f"unknown MIDI API {api!r}; expected one of {', '.join(APIS)}", key="--api")
    if APIS[api] not in rtmidi.get_compiled_api():
        raise UserError(f"this python-rtmidi was built without {api.upper()} support", key="--api")
    return APIS[api]


class Silencer:
    """fd 2 pointed at /dev/null while any thread is inside, restored when the last one leaves.
    fd 2 is the process's own, so this is one object for the process: two threads saving and
    restoring it each on their own (a dead JACK client closing on its thread while the operator's
    loop opens a new one) could leave it pointing at /dev/null for good."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved = -1

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                sys.stderr.flush()
                self._saved = os.dup(2)
                with open(os.devnull, "wb") as null:
                    os.dup2(null.fileno(), 2)
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    os.dup2(self._saved, 2)
                    os.close(self._saved)


# Silence what the C libraries (libjack, alsa-lib) print on fd 2 while a client opens or closes.
quiet_stderr = Silencer()


def open_client(kind: str, api: str, name: str, **options: Any) -> Any:    # an rtmidi MidiOut or MidiIn
    cls = rtmidi.MidiOut if kind == "out" else rtmidi.MidiIn
    # a JACK server busy with other clients on a loaded machine sometimes fails a client's open
    # once ("JACK server not running?": twice in the suite's runs of 2026-12-02, the next open
    # fine): tried again, JACK_OPEN_TRIES times in all, before the one-line error
    tries = JACK_OPEN_TRIES if api == "jack" else 1
    for attempt in range(tries):
        try:
            with quiet_stderr():
                return cls(api_id(api), name=name, **options)
        except rtmidi.SystemError as exc:
            if attempt + 1 < tries:
                time.sleep(JACK_RETRY_S)
                continue
            hint = " (is a JACK server running? start one with: jackd -d dummy)" if api == "jack" \
                else " (is the ALSA sequencer, snd-seq, available?)"
            raise UserError(f"cannot open the {api.upper()} MIDI backend: {exc}{hint}",
                            key="--api") from None
    raise AssertionError("unreachable")


def list_ports(api: str) -> dict[str, list[str]]:
    """``{"outputs": [...], "inputs": [...]}``: names of destinations and of sources."""
    out, inp = open_client("out", api, CLIENT + "-list"), open_client("in", api, CLIENT + "-list")
    try:
        return {"outputs": out.get_ports(), "inputs": inp.get_ports()}
    finally:
        out.delete()
        inp.delete()


def find_port(names: list[str], fragment: str) -> int | None:
    """Index of the first name containing ``fragment``, or None."""
    for i, n in enumerate(names):
        if fragment in n:
            return i
    return None


def realtime_thread(priority: int | None) -> bool:
    """Ask SCHED_FIFO at ``priority`` for the calling thread (Linux; pid 0 is this thread); False
    when ``priority`` is None or the system refuses."""
    if priority is None or not hasattr(os, "sched_setscheduler"):
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except OSError:
        return False

"""MIDI ports through python-rtmidi: listing and opening on the ALSA or JACK backend.

A destination is chosen by a name fragment (the first port whose name contains it). Without a
name, a virtual port named ``yuexuan`` is created for other programs to connect to.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import rtmidi

from yuexuan.errors import UserError
from yuexuan.live import jack_server

CLOSE_DRAIN_S = 0.1   # wait before closing an output port, seconds

APIS = {"alsa": rtmidi.API_LINUX_ALSA, "jack": rtmidi.API_UNIX_JACK}
CLIENT = "yuexuan"
SETTLE_S = 0.25         # after connecting, before the first message (s)
JACK_OPEN_TRIES = 3     # opens of a JACK client before "cannot open" (see _client)
JACK_RETRY_S = 0.3      # between them, s


def api_id(api: str) -> int:
    """The rtmidi API constant for ``alsa`` or ``jack``, checked against this build."""
    if api not in APIS:
        raise UserError(f"unknown MIDI API {api!r}; expected one of {', '.join(APIS)}", key="--api")
    if APIS[api] not in rtmidi.get_compiled_api():
        raise UserError(f"this python-rtmidi was built without {api.upper()} support", key="--api")
    return APIS[api]


class _Silencer:
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
_quiet_stderr = _Silencer()


def _client(kind: str, api: str, name: str) -> Any:          # an rtmidi MidiOut or MidiIn
    cls = rtmidi.MidiOut if kind == "out" else rtmidi.MidiIn
    # a JACK server busy with other clients on a loaded machine sometimes fails a client's open
    # once ("JACK server not running?": twice in the suite's runs of 2026-12-02, the next open
    # fine): tried again, JACK_OPEN_TRIES times in all, before the one-line error
    tries = JACK_OPEN_TRIES if api == "jack" else 1
    for attempt in range(tries):
        try:
            with _quiet_stderr():
                return cls(api_id(api), name=name)
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
    out, inp = _client("out", api, CLIENT + "-list"), _client("in", api, CLIENT + "-list")
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


class Output:
    """A MIDI output that survives its destination going away and coming back.

    ``send`` never raises for a missing destination: while the port is gone messages are
    dropped (and counted); :meth:`check` (called from a watcher thread) notices loss and
    return, reopening the port held until :meth:`resume`.
    """

    def __init__(self, api: str, fragment: str | None):
        self.api = api
        self.fragment = fragment
        self._lock = threading.Lock()
        self._out = _client("out", api, CLIENT)
        self._watch: Any = None if fragment is None else _client("out", api, CLIENT + "-watch")
        self.dropped = 0
        self.connected = False
        self._held = False                   # reopened after a loss, not yet resumed
        self.port_name: str | None = None
        self._server: jack_server.ServerWatch | None = None    # --api jack: is the server there
        self._dead: list[Any] = []          # rtmidi clients of a JACK server that shut down
        self._inputs: list[Input] = []      # inputs whose clients die and return with the server
        self._inputs_lost = False           # their dead clients not yet deleted
        if api == "jack":
            try:
                self._server = jack_server.ServerWatch()
            except (ImportError, OSError, RuntimeError) as exc:   # no JACK-Client, libjack, server
                self._out.delete()
                if self._watch is not None:
                    self._watch.delete()
                raise UserError(f"cannot watch the JACK server: {exc}", key="--api") from None
        if fragment is None:
            self._open_virtual()
        else:
            names = self._out.get_ports()
            i = find_port(names, fragment)
            if i is None:
                listing = "; ".join(names) or "none"
                self._out.delete()
                assert self._watch is not None        # a fragment was given: a watcher was opened
                self._watch.delete()
                raise UserError(f"no MIDI output port contains {fragment!r}; ports: {listing}",
                                key="--port")
            self._open(i, names[i])

    def _open_virtual(self, hold: bool = False) -> None:
        self._out.open_virtual_port("out")
        self.port_name = f"{CLIENT}:out (virtual)"
        self._held = hold
        self.connected = not hold

    @property
    def server_down(self) -> bool:
        """True from the moment the JACK server shut down (libjack's callback) until
        :meth:`check` has re-created the clients on a new one."""
        return self._server is not None and (self._server.down.is_set() or self._out is None)

    def server_outages(self) -> list[tuple[float, float | None]]:
        """The JACK server's outages, (lost, back) monotonic s; [] on ALSA."""
        return [] if self._server is None else list(self._server.outages)

    def _open(self, index: int, name: str, hold: bool = False) -> None:
        """Connect to destination ``index``; JACK and ALSA connect asynchronously, so wait
        ``SETTLE_S`` before anything is sent (or the tuning would go nowhere). With ``hold``,
        :meth:`send` keeps dropping until :meth:`resume`."""
        self._out.open_port(index, "out")
        time.sleep(SETTLE_S)
        self.port_name = name
        self._held = hold
        self.connected = not hold

    def send(self, data: Sequence[int]) -> bool:
        """Send raw bytes; False (and counted as dropped) while the destination is gone."""
        with self._lock:
            if not self.connected or (self._server is not None and self._server.down.is_set()):
                self.dropped += 1
                return False
            self._out.send_message(data)
            return True

    def check(self) -> str | None:
        """Look for the destination; returns "lost", "back", "server-lost", "server-back" or None
        (no change). After "server-back" the port is looked for again on the next call."""
        if self._server is not None:
            self._bury()
            change = self._server.poll()
            if change == "lost":
                with self._lock:
                    self.connected = self._held = False
                    self._dead += [c for c in (self._out, self._watch) if c is not None]
                    self._out = self._watch = None
                self._inputs_lost = bool(self._inputs)
                return "server-lost"
            if change == "back":
                with _quiet_stderr():
                    out = _client("out", self.api, CLIENT)
                    watch = None if self.fragment is None else _client("out", self.api,
                                                                     CLIENT + "-watch")
                with self._lock:
                    self._out, self._watch = out, watch
                if self.fragment is None:
                    self._open_virtual(hold=True)
                return "server-back"
            if self._out is None:
                return None
            for inp in self._inputs:
                if not inp.is_open:
                    inp.reopen()
        if self._watch is None:
            return "back" if self._held and self.fragment is None else None
        names = self._watch.get_ports()
        present = [n for n in names if self.fragment in n and not n.startswith(CLIENT + ":")]
        with self._lock:
            if (self.connected or self._held) and self.port_name not in names:
                self.connected = self._held = False
                self._out.close_port()
                return "lost"
            if self.connected or self._held or not present:
                return None
        mine = self._out.get_ports()         # not connected: send() leaves _out alone
        if present[0] not in mine:
            return None
        self._open(mine.index(present[0]), present[0], hold=True)
        return "back"

    def _bury(self) -> None:
        """Delete the clients of a server that shut down, while no server runs: each waits about
        1 s for it, holding the GIL (python-rtmidi), and one deleted once a new server of that
        name runs corrupts libjack (the next client deleted segfaults, measured). :meth:`check`
        calls this on its call after "server-lost" (0.1 s later: the operator saw the notice)."""
        if self._dead:
            with _quiet_stderr():
                for client in self._dead:
                    client.delete()
            self._dead.clear()
        if self._inputs_lost:
            self._inputs_lost = False
            for inp in self._inputs:
                inp.server_lost()

    def follow(self, inp: Input) -> None:
        """Let ``inp`` (a --control or --hits-midi input on the same JACK server) lose its
        client with the server and get it back with it (:meth:`check` does both)."""
        self._inputs.append(inp)

    def resume(self) -> None:
        """After :meth:`check` said "back": let messages through again. Call it where nothing
        else can send before the setup (tuning) that must come first (the show holds its lock)."""
        with self._lock:
            self._held = False
            self.connected = True

    def close(self) -> None:
        # let the backend deliver what was just sent (the final stop, CC 123) before the port
        # goes: closing at once could drop the last JACK period's events
        time.sleep(CLOSE_DRAIN_S)
        with self._lock:
            self.connected = False
            if self._server is not None and self._server.down.is_set():
                self._dead += [c for c in (self._out, self._watch) if c is not None]
            else:
                if self._out is not None:
                    self._out.close_port()
                    self._out.delete()
                if self._watch is not None:
                    self._watch.delete()
            self._out = self._watch = None
        self._bury()
        if self._server is not None:
            self._server.close()


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


class Input:
    """An incoming MIDI port (foot switch, show controller) delivering messages to a callback.

    rtmidi's queue is polled from a thread every ``POLL_S`` rather than using rtmidi's callback
    mode, which garbles bursts of JACK MIDI events. When the JACK server shuts down
    (:meth:`Output.follow`), :meth:`server_lost` deletes the dead client while no server runs and
    :meth:`reopen` opens it again once the server and the port are back.
    """

    POLL_S = 0.001

    def __init__(self, api: str, fragment: str, callback: Callable[[list[int]], object],
                 option: str = "--control",
                 role: str = "control", rt_priority: int | None = None):
        """``option`` names the command-line option in errors; ``role`` the client
        (``yuexuan-control``, ``yuexuan-hits``); ``rt_priority``: the polling thread asks for
        SCHED_FIFO at it (a hit sensor's calls should not wait behind other processes)."""
        self._rt_priority = rt_priority
        self.realtime = False
        self._api, self._fragment, self._name = api, fragment, f"{CLIENT}-{role}"
        self._callback = callback
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._in: Any = None
        client = _client("in", api, self._name)
        names = client.get_ports()
        i = find_port(names, fragment)
        if i is None:
            listing = "; ".join(names) or "none"
            client.delete()
            raise UserError(f"no MIDI input port contains {fragment!r}; ports: {listing}",
                            key=option)
        self.port_name = names[i]
        self._open(client, i)

    def _open(self, client: Any, index: int) -> None:
        client.ignore_types(sysex=False, timing=True, active_sense=True)
        client.open_port(index, "in")
        self._in = client
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, args=(client, self._stop),
                                        daemon=True, name="yuexuan-midi-in")
        self._thread.start()

    @property
    def is_open(self) -> bool:
        return self._in is not None

    def _poll(self, client: Any, stop: threading.Event) -> None:
        self.realtime = realtime_thread(self._rt_priority)
        while not stop.is_set():
            msg = client.get_message()
            if msg is None:
                time.sleep(self.POLL_S)
            else:
                self._callback(msg[0])

    def _halt(self) -> Any:
        """Stop polling; the client (or None)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        client, self._in = self._in, None
        return client

    def server_lost(self) -> None:
        """The JACK server shut down: the dead client is deleted now, while no server runs (see
        :meth:`Output._bury`: about 1 s, and never once a new server runs)."""
        client = self._halt()
        if client is not None:
            with _quiet_stderr():
                client.delete()

    def reopen(self) -> bool:
        """With the server back: open the port again (the first whose name contains the
        fragment); False while it is not there."""
        if self._in is not None:
            return True
        with _quiet_stderr():
            client = _client("in", self._api, self._name)
        names = client.get_ports()
        i = find_port(names, self._fragment)
        if i is None:
            client.delete()
            return False
        self.port_name = names[i]
        self._open(client, i)
        return True

    def close(self) -> None:
        client = self._halt()
        if client is not None:
            client.close_port()
            client.delete()

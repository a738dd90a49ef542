"""The show's MIDI output: a destination that may go away and come back (a port lost and found,
a JACK server shut down and started again), whose last messages are confirmed delivered before it
closes (:mod:`yuexuan.live.delivery`).

A destination is chosen by a name fragment (the first port whose name contains it). Without a
name, a virtual port named ``yuexuan:out`` is created for other programs to connect to.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import rtmidi

from yuexuan.errors import UserError
from yuexuan.live import delivery, jack_server
from yuexuan.live.rtmidi_clients import CLIENT, find_port, open_client, quiet_stderr

if TYPE_CHECKING:
    from yuexuan.live.midi_in import Input

PORT = "out"            # the output port's name (yuexuan:out)
SETTLE_S = 0.25         # after connecting, before the first message (s)


class Output:
    """A MIDI output that survives its destination going away and coming back.

    ``send`` never raises for a missing destination: while the port is gone messages are
    dropped (and counted); :meth:`check` (called from a watcher thread) notices loss and
    return, reopening the port held until :meth:`resume`. :meth:`close` first confirms that what
    was sent has left the port (:attr:`delivery`), through a witness of ours connected to it.
    """

    def __init__(self, api: str, fragment: str | None):
        self.api = api
        self.fragment = fragment
        self._lock = threading.Lock()
        self._out = open_client("out", api, CLIENT)
        self._watch: Any = None if fragment is None else open_client("out", api, CLIENT + "-watch")
        self.dropped = 0
        self.connected = False
        self._held = False                   # reopened after a loss, not yet resumed
        self.port_name: str | None = None
        self._server: jack_server.ServerWatch | None = None    # --api jack: is the server there
        self._dead: list[Any] = []          # rtmidi clients of a JACK server that shut down
        self._inputs: list[Input] = []      # inputs whose clients die and return with the server
        self._inputs_lost = False           # their dead clients not yet deleted
        self._witness: delivery.Witness | None = None   # our input on our own output port
        self._no_witness = "no witness client could be opened on the output"  # why, when None
        self.delivery: delivery.Delivery | None = None  # how the last messages went (close)
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
        token = _token()
        self._out.open_virtual_port(token)
        self._attach_witness(token)
        self.port_name = f"{CLIENT}:{PORT} (virtual)"
        self._held = hold
        self.connected = not hold

    def _attach_witness(self, token: str) -> None:
        """Connect the witness (opened on first use) to our port, found by the name ``token`` it
        was opened with, then give the port its public name, ``out``. Without a witness (its
        client would not open) the show runs as before; :meth:`close` says the last messages
        were not confirmed."""
        try:
            if self._witness is None:
                with quiet_stderr():
                    client = open_client("in", self.api, CLIENT + "-witness",
                                     queue_size_limit=delivery.QUEUE_LIMIT)
                self._witness = delivery.Witness(client)
            if not self._witness.attach(token):
                self._drop_witness()
                self._no_witness = (f"the witness did not find our port listed within "
                                    f"{delivery.LISTED_WITHIN_S:g} s")
        except (UserError, rtmidi.RtMidiError) as exc:
            self._drop_witness()
            self._no_witness = f"no witness client could be opened on the output: {exc}"
        self._out.set_port_name(PORT)

    def _drop_witness(self) -> None:
        if self._witness is not None:
            with quiet_stderr():
                self._witness.close()
            self._witness = None

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
        token = _token()
        self._out.open_port(index, token)
        self._attach_witness(token)
        time.sleep(SETTLE_S)
        self.port_name = name
        self._held = hold
        self.connected = not hold

    def read_witness(self) -> None:
        """Read away what the witness received (the operator's loop calls this through
        :meth:`check`, so that its queue never fills)."""
        if self._witness is not None:
            self._witness.discard()

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
                    if self._witness is not None:
                        self._dead.append(self._witness.client)
                    self._out = self._watch = self._witness = None
                self._inputs_lost = bool(self._inputs)
                return "server-lost"
            if change == "back":
                with quiet_stderr():
                    out = open_client("out", self.api, CLIENT)
                    watch = None if self.fragment is None else open_client("out", self.api,
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
        self.read_witness()
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
            with quiet_stderr():
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

    def confirm_delivery(self, again: Iterable[Sequence[int]] = (),
                         bound_s: float = delivery.BOUND_S) -> delivery.Delivery | None:
        """Wait until everything sent so far, and ``again`` after it, has left the port
        (:func:`yuexuan.live.delivery.confirm`, at most ``bound_s``); None when nothing can go
        out (the port or the JACK server gone: what was sent meanwhile is counted as dropped)."""
        if not self.connected or self.server_down:
            return None

        def send(data: Sequence[int]) -> None:
            with self._lock:
                self._out.send_message(data)
        return delivery.confirm(send, self._witness, again, bound_s, no_witness=self._no_witness)

    def close(self, again: Iterable[Sequence[int]] = ()) -> None:
        """Confirm delivery (:attr:`delivery`; ``again``: see :meth:`confirm_delivery`), then
        close the port and the clients."""
        self.delivery = self.confirm_delivery(again)
        with self._lock:
            self.connected = False
            if self._server is not None and self._server.down.is_set():
                self._dead += [c for c in (self._out, self._watch) if c is not None]
                if self._witness is not None:
                    self._dead.append(self._witness.client)
                self._witness = None
            else:
                if self._out is not None:
                    self._out.close_port()
                    self._out.delete()
                if self._watch is not None:
                    self._watch.delete()
                self._drop_witness()
            self._out = self._watch = None
        self._bury()
        if self._server is not None:
            self._server.close()


def _token() -> str:
    """A port name no other port has: the output's while its witness finds it (then ``out``)."""
    return f"{PORT}-{os.getpid()}-{secrets.token_hex(4)}"

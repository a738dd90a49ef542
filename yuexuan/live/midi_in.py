"""An incoming MIDI port (a foot switch, a show controller, a hit sensor) delivering each message to
a callback from a polling thread, which follows its JACK server through an outage
(:meth:`yuexuan.live.midi_out.Output.follow`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from yuexuan.errors import UserError
from yuexuan.live.rtmidi_clients import CLIENT, find_port, open_client, quiet_stderr, realtime_thread


class Input:
    """An incoming MIDI port (foot switch, show controller) delivering messages to a callback.

    rtmidi's queue is polled from a thread every ``POLL_S`` rather than using rtmidi's callback
    mode, which garbles bursts of JACK MIDI events. When the JACK server shuts down
    (:meth:`yuexuan.live.midi_out.Output.follow`), :meth:`server_lost` deletes the dead client
    while no server runs and :meth:`reopen` opens it again once the server and the port are back.
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
        client = open_client("in", api, self._name)
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
        :meth:`yuexuan.live.midi_out.Output.check`: about 1 s, and never once a new server runs)."""
        client = self._halt()
        if client is not None:
            with quiet_stderr():
                client.delete()

    def reopen(self) -> bool:
        """With the server back: open the port again (the first whose name contains the
        fragment); False while it is not there."""
        if self._in is not None:
            return True
        with quiet_stderr():
            client = open_client("in", self._api, self._name)
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

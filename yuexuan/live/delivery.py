"""Delivery before close: evidence that the messages handed to a MIDI port have left it.

A message handed to python-rtmidi reaches the destination later: on JACK it waits in a ring
buffer until the client's next process cycle copies it into the port's buffer (closing the port
before that cycle has run drops it, and rtmidi's own close waits at most 1 s for one cycle, then
closes anyway and says nothing); on ALSA, in a non-blocking sequencer client, an event the kernel
did not take stays in alsa-lib's output buffer. No API of rtmidi says when a message has gone.

So the port is watched from outside, as a destination sees it: a :class:`Witness` is an input
client of ours connected to our own output port. Before the port closes, :func:`confirm` sends a
marker after everything else — an Active Sensing byte (0xFE): the show never sends one, and a
receiver that gets one and then silence for 300 ms turns its voices off (MIDI 1.0), harmless at
the end of a show — and waits until the witness has received it. Messages leave a port in the
order they were handed to it (rtmidi's ring buffer, ALSA's output buffer), so the marker's
arrival means every earlier message was taken by the same or an earlier process cycle (JACK) or
written to the sequencer (ALSA), whose subscribers get it then. A second marker, sent once the
first arrived, is taken by a later cycle: on a synchronous JACK server (``jackd -S``) that cycle
begins only after every client, the destination too, has finished the one before. The messages
given as ``again`` (the show's All Notes Off) go out once more just before the second marker: an
asynchronous JACK server (JACK2's default) runs a cycle without a client that has not finished
the one before, and that client never sees the cycle's MIDI — a second chance, one cycle later,
for a destination that missed the first. The wait is bounded (:data:`BOUND_S`); when the bound is
hit the show says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MARKER = (0xFE,)                # Active Sensing
BOUND_S = 1.0                   # the longest the end of a show waits for its last messages, s
POLL_S = 0.0005                 # the witness's queue read this often while waiting, s
QUEUE_LIMIT = 1 << 14           # messages the witness may hold between two reads
LISTED_WITHIN_S = 0.5           # the longest a new port may take to be listed (JACK2 lists it
                                # from the graph's state, switched by the server's next cycle)


@dataclass(frozen=True)
class Delivery:
    """How the closing messages went: ``confirmed`` (the witness received the markers) within
    ``seconds``; ``why`` they were not (the bound hit, no witness)."""

    confirmed: bool
    seconds: float
    why: str = ""

    def line(self) -> str | None:
        """The words for the end of the show when delivery was not confirmed, else None."""
        if self.confirmed:
            return None
        return f"the last messages were not confirmed delivered ({self.why})"


class Witness:
    """An input client connected to our own output port: it receives what the port delivers.

    ``client``: an rtmidi MidiIn of the output's API (not yet opened). Only markers are counted;
    everything else it receives is read away (:meth:`discard`: the show's messages, a few a
    second, read by the operator's loop so the queue never fills). Clock, MTC and SysEx are
    ignored by rtmidi before they are queued.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        client.ignore_types(sysex=True, timing=True, active_sense=False)
        self.markers = 0

    def attach(self, token: str, within_s: float = LISTED_WITHIN_S,
               clock: Callable[[], float] = time.monotonic) -> bool:
        """Connect to the output port whose name holds ``token`` (a name only this output
        uses while it opens); False when no such port is listed within ``within_s``."""
        deadline = clock() + within_s
        while True:
            names = self.client.get_ports()
            found = [i for i, n in enumerate(names) if token in n]
            if found:
                break
            if clock() >= deadline:
                return False
            time.sleep(POLL_S)
        if self.client.is_port_open():
            self.client.close_port()
        self.client.open_port(found[0], "in")
        return True

    def discard(self) -> int:
        """Read away what has arrived; the markers seen so far."""
        while True:
            msg = self.client.get_message()
            if msg is None:
                return self.markers
            if tuple(msg[0]) == MARKER:
                self.markers += 1

    def close(self) -> None:
        self.client.close_port()
        self.client.delete()


def confirm(send: Callable[[Sequence[int]], object], witness: Witness | None,
            again: Iterable[Sequence[int]] = (), bound_s: float = BOUND_S,
            clock: Callable[[], float] = time.monotonic,
            no_witness: str = "no witness client could be opened on the output") -> Delivery:
    """Send a marker through ``send`` (the output's raw send) and wait until ``witness`` has
    received it; then ``again`` and a second marker the same way (see the module's docstring);
    at most ``bound_s`` in all. Without a witness, nothing is confirmed: ``no_witness`` says why."""
    start = clock()
    if witness is None:
        return Delivery(False, 0.0, no_witness)
    deadline = start + bound_s
    seen = witness.discard()
    for k in range(2):
        for data in again if k else ():
            send(data)
        send(MARKER)
        seen += 1
        while witness.discard() < seen:
            if clock() >= deadline:
                return Delivery(False, clock() - start,
                                f"the MIDI backend did not pass them on within {bound_s:g} s")
            time.sleep(POLL_S)
    return Delivery(True, clock() - start)

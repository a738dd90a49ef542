"""Is the JACK server there? A watcher for ``play --api jack`` (docs/play.md, "Nothing left
hanging").

python-rtmidi has no way to learn that the JACK server shut down: its clients stay open, dead, and
its port list comes back empty, just as when the destination alone went away. libjack tells a
client through ``jack_on_shutdown``, which the JACK-Client package (``jack``) exposes: a client of
it, never activated (so it adds nothing to the server's process cycle), is told at once. The
package is imported here only, when ``--api jack`` is used: ALSA users never load libjack.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

NAME = "yuexuan-server"        # the watching client's name
CLOSE_WITHIN_S = 1.0            # how long closing it may hold up the end of a show (s)


class ServerWatch:
    """A never-activated JACK client whose shutdown callback marks the server gone.

    :attr:`down` is set from libjack's thread the moment the server shuts down; :meth:`poll`
    (the caller's thread) then tries, at most every ``retry_s``, to open a new client, which
    succeeds once a server of that name runs again (``JACK_NO_START_SERVER`` semantics: this never
    starts one). ``quiet()`` wraps each libjack call that prints on fd 2 while the server is gone.
    """

    def __init__(self, quiet: Callable[[], AbstractContextManager[None]],
                 clock: Callable[[], float] = time.monotonic, retry_s: float = 0.1) -> None:
        import jack  # JACK-Client: only for --api jack

        self._jack = jack
        self._quiet = quiet
        self._clock = clock
        self.retry_s = retry_s
        self.down = threading.Event()
        self.reason = ""
        self.lost_at: float | None = None            # monotonic s of the latest shutdown
        self.outages: list[tuple[float, float | None]] = []   # (lost, back) monotonic s
        self._next_try = 0.0
        try:
            with quiet():
                self._client: Any = self._open()
        except jack.JackError as exc:
            raise RuntimeError(str(exc)) from None

    def _open(self) -> Any:
        client = self._jack.Client(NAME, no_start_server=True)
        client.set_shutdown_callback(self._on_shutdown)
        return client

    def _on_shutdown(self, status: object, reason: str) -> None:
        # libjack's thread: no JACK call here, only note it
        self.reason = reason
        self.lost_at = self._clock()
        self.down.set()

    def poll(self) -> str | None:
        """``"lost"`` once after a shutdown, ``"back"`` once a server runs again, else None."""
        if self._client is not None and self.down.is_set():
            dead, self._client = self._client, None
            assert self.lost_at is not None              # set with down
            self.outages.append((self.lost_at, None))
            close_within(dead)              # while the server is down (after it: see ports)
            self._next_try = self._clock() + self.retry_s
            return "lost"
        if self._client is None and self._clock() >= self._next_try:
            self._next_try = self._clock() + self.retry_s
            try:
                with self._quiet():
                    client = self._open()
            except self._jack.JackError:
                return None
            self.down.clear()
            self._client = client
            self.outages[-1] = (self.outages[-1][0], self._clock())
            return "back"
        return None

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            close_within(client)


def close_within(client: Any, timeout_s: float = CLOSE_WITHIN_S) -> bool:
    """Close a JACK-Client client on a daemon thread, waiting at most ``timeout_s``; False when
    it did not return in time. Seen once in ~20 runs: ``jack_client_close`` of this never-activated
    client blocked for good at the end of a show, on a libjack mutex still held by a thread that
    had ended (the system's libjack, loaded by JACK-Client, beside the copy python-rtmidi's wheel
    bundles). The show is over by then, but ``play`` must still exit and write its report; the
    thread keeps the only reference, so the client's ``__del__`` never runs it again."""
    done = threading.Event()

    def run() -> None:
        client.close()
        done.set()
    threading.Thread(target=run, daemon=True, name="yuexuan-jack-close").start()
    return done.wait(timeout_s)


def outages_report(outages: list[tuple[float, float | None]]) -> Iterator[dict[str, float | None]]:
    """Each outage for the report: when the server went and came back (monotonic s, None: not)."""
    for lost, back in outages:
        yield {"lost_monotonic": lost, "back_monotonic": back,
               "seconds": None if back is None else back - lost}

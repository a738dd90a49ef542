"""Is the JACK server there? A watcher for ``play --api jack`` (docs/play.md, "Nothing left
hanging").

python-rtmidi has no way to learn that the JACK server shut down: its clients stay open, dead, and
its port list comes back empty, just as when the destination alone went away. libjack tells a
client through ``jack_on_shutdown``, which the JACK-Client package (``jack``) exposes: a client of
it, never activated (so it adds nothing to the server's process cycle), is told at once. That
client lives in a process of its own (:mod:`yuexuan.live.jack_watch`): the system's libjack,
which JACK-Client loads, and the copy python-rtmidi bundles did not share ``play``'s process
safely (closing the client blocked on a libjack mutex once in ~20 shows; ``play`` did not exit
once in ~4 test runs). ALSA users never start it.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import IO

START_WITHIN_S = 10.0           # how long the watching process may take to start (s)
CLOSE_WITHIN_S = 1.0            # how long ending it may hold up the end of a show (s)


class ServerWatch:
    """A never-activated JACK client, in a process of its own, whose shutdown marks the server gone.

    :attr:`down` is set (by a reader thread) the moment the watching process says the server shut
    down; it then tries, every ``retry_s``, to open a new client, which succeeds once a server of
    that name runs again (``JACK_NO_START_SERVER`` semantics: it never starts one); :meth:`poll`
    (the caller's thread) reports both, once each. Raises RuntimeError if it cannot start (no
    JACK-Client, no libjack, no server).
    """

    def __init__(self, retry_s: float = 0.1) -> None:
        self.retry_s = retry_s
        self.down = threading.Event()
        self.reason = ""
        self.lost_at: float | None = None            # monotonic s of the latest shutdown
        self.outages: list[tuple[float, float | None]] = []   # (lost, back) monotonic s
        self._events: queue.SimpleQueue[tuple[str, float]] = queue.SimpleQueue()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "yuexuan.live.jack_watch", str(retry_s)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self._proc.stdout is not None
        first = _line_within(self._proc.stdout, START_WITHIN_S)
        if first != "ready":
            self.close()
            raise RuntimeError(first.removeprefix("error ") if first else
                               "the JACK watcher did not start")
        threading.Thread(target=self._read, args=(self._proc.stdout,), daemon=True,
                         name="yuexuan-jack-watch").start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            word, _, value = raw.decode(errors="replace").strip().partition(" ")
            if word not in ("lost", "back"):
                continue
            t = float(value)
            if word == "lost":
                self.reason = "the JACK server shut down"
                self.lost_at = t
                self.down.set()
            self._events.put((word, t))

    def poll(self) -> str | None:
        """``"lost"`` once after a shutdown, ``"back"`` once a server runs again, else None."""
        try:
            word, t = self._events.get_nowait()
        except queue.Empty:
            return None
        if word == "lost":
            self.outages.append((t, None))
        else:
            self.down.clear()
            if self.outages:
                self.outages[-1] = (self.outages[-1][0], t)
        return word

    def close(self) -> None:
        """End the watching process (at most ``CLOSE_WITHIN_S``, then it is killed)."""
        proc = self._proc
        if proc.poll() is None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(CLOSE_WITHIN_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _line_within(stream: IO[bytes], timeout_s: float) -> str:
    """The first line of ``stream`` ("" at its end or after ``timeout_s``)."""
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return got[0].decode(errors="replace").strip() if got else ""


def outages_report(outages: list[tuple[float, float | None]]) -> Iterator[dict[str, float | None]]:
    """Each outage for the report: when the server went and came back (monotonic s, None: not)."""
    for lost, back in outages:
        yield {"lost_monotonic": lost, "back_monotonic": back,
               "seconds": None if back is None else back - lost}

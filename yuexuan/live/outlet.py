"""The show's side of its MIDI output: counts, sounding notes, and the port going and returning.

Every note-on that went out is remembered (by cue, channel and key) until its note-off, so
:meth:`Outlet.silence` can release whatever still sounds. Not thread-safe: the show calls it
under its own lock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from yuexuan.live.queue_items import Send

NOTE_OFF = 0x80
CONTROL_CHANGE = 0xB0
ALL_NOTES_OFF = 123          # CC number
ALL_SOUND_OFF = 120          # CC number
MIDI_CHANNELS = range(16)


class Outlet:
    """``send(bytes) -> bool`` delivers one raw message; False means it was dropped."""

    def __init__(self, send: Send, channels: Iterable[int], port_name: str = "") -> None:
        self._send = send
        self.channels = tuple(channels)     # MIDI channels (0-based) the show uses
        self.port_name = port_name
        self.port_ok = True
        self.server_ok = True               # --api jack: the JACK server is there
        self.sent = 0
        self.dropped = 0
        self.notes_dropped = 0              # note-ons that could not be sent (port or server gone)
        self._sounding: Counter[tuple[str, int, int]] = Counter()  # (cue, channel, note) -> count

    def send(self, data: Sequence[int]) -> bool:
        ok = self._send(data)
        if ok:
            self.sent += 1
        else:
            self.dropped += 1
        return ok

    def note_on(self, cue: str, key: tuple[int, int], data: Sequence[int]) -> bool:
        """Send a note-on of ``cue``; ``key`` is (channel, note)."""
        if not self.send(data):
            self.notes_dropped += 1
            return False
        self._sounding[(cue, *key)] += 1
        return True

    def note_off(self, cue: str, key: tuple[int, int], data: Sequence[int]) -> bool:
        """Send a note-off of ``cue`` unless its note was released already (hold, cut, port)."""
        k = (cue, *key)
        if not self._sounding[k]:
            del self._sounding[k]
            return False
        self._sounding[k] -= 1
        if not self._sounding[k]:
            del self._sounding[k]
        return self.send(data)

    def silence(self, cue: str | None = None) -> None:
        """A note-off for every sounding note (of ``cue``, or of every cue)."""
        for (cid, ch, note), n in list(self._sounding.items()):
            if cue is None or cid == cue:
                for _ in range(n):
                    self.send((NOTE_OFF | ch, note, 0))
                del self._sounding[(cid, ch, note)]

    def all_notes_off(self) -> None:
        """CC 123 (All Notes Off) on every channel the show uses."""
        for data in self.releases():
            self.send(data)

    def releases(self) -> list[tuple[int, int, int]]:
        """The messages of :meth:`all_notes_off`."""
        return [(CONTROL_CHANGE | ch, ALL_NOTES_OFF, 0) for ch in self.channels]

    def reset(self) -> None:
        """CC 123 (All Notes Off) and CC 120 (All Sound Off) on all 16 channels: before a show's
        first note, since a run that was killed (SIGKILL, a crash) may have left any channel
        sounding, not only the ones this show uses."""
        for ch in MIDI_CHANNELS:
            self.send((CONTROL_CHANGE | ch, ALL_NOTES_OFF, 0))
            self.send((CONTROL_CHANGE | ch, ALL_SOUND_OFF, 0))

    # -- the port going and returning ----------------------------------------------------------
    def port_lost(self) -> str:
        """The destination has gone: whatever sounded went with it. Returns the notice."""
        self.port_ok = False
        self._sounding.clear()
        return (f"MIDI output {self.port_name} has gone; the show runs on, "
                "output resumes when it returns")

    def port_back(self, setup: Iterable[Sequence[int]], resume: Callable[[], None] | None = None) -> str:
        """The destination is back: ``resume()`` reopens it, then All Notes Off / All Sound Off
        on every channel (what sounded at the loss is released: a destination that came back may
        be one a server restart left sounding) and the setup (tuning, programs: it may be a
        restarted synthesiser) go out before anything else, as at the start. Returns the
        notice."""
        self.port_ok = True
        if resume is not None:
            resume()
        self.reset()
        for data in setup:
            self.send(data)
        return f"MIDI output {self.port_name} is back; output resumed"

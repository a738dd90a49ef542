"""The show's sync streams on the show clock: MIDI clock, MIDI Time Code, MSC GO.

The show clock starts at the first GO (with ``--auto``, at the start of the run; show time is then
timeline time) and stands still while the show is held: show time ``s`` is due at monotonic
``anchor + s``. The MIDI clock (24 pulses a quarter note) follows each cue's ``Cue.beat_s``
(seconds a quarter note) unless a fixed beat overrides it: the tempo changes where a cue starts,
which has a pulse on its first beat, and between cues the clock keeps the last cue's tempo. Pulse
times come from :func:`yuexuan.live.timecode.cue_clock_times` and quarter-frame times from
:func:`yuexuan.live.timecode.mtc_index_time`; both are queued a stretch of ``CHUNK_S`` at a time, half
a stretch ahead. Not thread-safe: the show calls it under its own lock.
"""

from __future__ import annotations

from collections.abc import Iterable

from yuexuan.live import timecode
from yuexuan.live.queue_items import SYNC_KINDS, Kind, Payload, Send
from yuexuan.live.scheduler import Scheduler

CHUNK_S = 1.0                # show seconds of pulses and quarter frames queued at a time
CLOCK_START, CLOCK_CONTINUE, CLOCK_STOP, CLOCK_PULSE = (0xFA,), (0xFB,), (0xFC,), (0xF8,)


class SyncStreams:
    """Clock, MTC and MSC for one show; ``send(bytes) -> bool`` delivers a raw message."""

    def __init__(self, sched: Scheduler, send: Send, clock: bool = False, clock_beat_s: float | None = None,
                 mtc_fps: int | None = None, msc_device: int | None = None) -> None:
        self._sched = sched
        self._send = send
        self._clock = clock
        self._beat_override = clock_beat_s     # fixed quarter note, s; None = each cue's beat_s
        self._mtc_fps = mtc_fps
        self._msc_device = msc_device
        self.anchor: float | None = None       # monotonic time of show time 0
        self._gen = 0                          # queued payloads of older generations are stale
        self._segments: list[timecode.ClockSegment] = []     # by start
        self._queued_to = 0.0                  # show time up to which the streams are queued
        self._mtc_next = 0                     # next quarter-frame index to queue
        self._running = False                  # the clock started and did not stop since
        self._held_at: float | None = None

    @property
    def started(self) -> bool:
        return self.anchor is not None

    def begin(self, at: float, show_s: float, segments: Iterable[timecode.ClockSegment]) -> None:
        """Start the show clock: monotonic ``at`` is show time ``show_s``; ``segments``
        (:class:`yuexuan.live.timecode.ClockSegment`) are the tempi of the cues known so far."""
        self.anchor = at - show_s
        self._segments = ([timecode.ClockSegment(show_s, self._beat_override)]
                          if self._beat_override else sorted(segments, key=lambda g: g.start_s))
        self._start_streams(show_s, CLOCK_START)

    def cue_starts(self, at: float, beat_s: float) -> None:
        """A cue GO'd to start at monotonic ``at``: from there the clock runs at its ``beat_s``."""
        if self._beat_override or self.anchor is None:
            return
        show_s = at - self.anchor
        self._segments.append(timecode.ClockSegment(show_s, beat_s))
        if not (self._clock and self._running):
            return
        gen = self._gen
        self._sched.cancel(lambda p: p.kind == Kind.CLOCK and p.gen == gen and p.t >= show_s
                           and p.data == CLOCK_PULSE)
        self._sched.add_many(self._pulses(show_s, self._queued_to))

    def hold(self, now: float) -> None:
        """The show freezes at monotonic ``now``: nothing more is sent; the clock gets Stop."""
        if self.anchor is None:
            return
        self._drop_queued()
        self._held_at = now
        self._stop_clock()

    def resume(self, now: float) -> None:
        """The show goes on at monotonic ``now`` from the show time it froze at: MTC re-locates,
        the clock gets Continue and its pulses go on from there."""
        if self.anchor is None or self._held_at is None:
            return
        self.anchor += now - self._held_at
        self._held_at = None
        self._start_streams(now - self.anchor, CLOCK_CONTINUE)

    def stop(self) -> None:
        """The end of the show: nothing more is sent; the clock gets Stop if it runs."""
        self._drop_queued()
        self._stop_clock()

    def msc_go(self, cue_number: int) -> bool:
        """Send an MSC GO for ``cue_number`` (if an MSC device was given)."""
        if self._msc_device is None:
            return False
        return self._send(tuple(timecode.msc_message("go", self._msc_device, cue_number).bytes()))

    def dispatch(self, p: Payload) -> bool:
        """Handle a due sync payload; True when something was sent."""
        if p.gen != self._gen:
            return False
        if p.kind == Kind.CLOCK:
            assert isinstance(p.data, tuple)            # a clock payload carries its byte
            return self._send(p.data)
        if p.kind == Kind.MTC:
            assert isinstance(p.data, int) and self._mtc_fps is not None   # queued only with MTC on
            return self._send(tuple(timecode.mtc_quarter_frame(p.data, self._mtc_fps).bytes()))
        self._queue(self._queued_to + CHUNK_S)          # Kind.REFILL
        return False

    # -- internals -------------------------------------------------------------------------------
    def _start_streams(self, show_s: float, clock_byte: tuple[int, ...]) -> None:
        if self._mtc_fps:
            self._send(tuple(timecode.mtc_full_frame(show_s, self._mtc_fps).bytes()))
            self._mtc_next = timecode.mtc_first_index(show_s, self._mtc_fps)
        if self._clock:
            assert self.anchor is not None              # the show clock has begun
            self._running = True
            self._sched.add(self.anchor + show_s,
                            Payload(self._gen, show_s, None, Kind.CLOCK, clock_byte))
        self._queued_to = show_s
        if self._clock or self._mtc_fps:
            self._queue(show_s + CHUNK_S)

    def _pulses(self, start_s: float, end_s: float) -> list[tuple[float, Payload]]:
        """(due, payload) for the clock pulses in show time [start_s, end_s)."""
        gen, anchor = self._gen, self.anchor
        assert anchor is not None                       # the show clock has begun
        return [(anchor + t, Payload(gen, t, None, Kind.CLOCK, CLOCK_PULSE))
                for t in timecode.cue_clock_times(self._segments, start_s, end_s).tolist()]

    def _queue(self, end_s: float) -> None:
        """Queue the pulses and quarter frames up to show time ``end_s``, and the next refill."""
        gen, anchor = self._gen, self.anchor
        assert anchor is not None                       # the show clock has begun
        items: list[tuple[float, Payload]] = []
        if self._clock:
            items += self._pulses(self._queued_to, end_s)
        if self._mtc_fps:
            stop = timecode.mtc_index_at(end_s, self._mtc_fps)
            for k in range(self._mtc_next, stop):
                t = timecode.mtc_index_time(k, self._mtc_fps)
                items.append((anchor + t, Payload(gen, t, None, Kind.MTC, k)))
            self._mtc_next = max(self._mtc_next, stop)
        refill_s = end_s - CHUNK_S / 2
        items.append((anchor + refill_s, Payload(gen, refill_s, None, Kind.REFILL)))
        self._queued_to = end_s
        self._sched.add_many(items)

    def _drop_queued(self) -> None:
        gen = self._gen
        self._gen += 1
        self._sched.cancel(lambda p: p.gen == gen and p.kind in SYNC_KINDS)

    def _stop_clock(self) -> None:
        if self._clock and self._running:
            self._running = False
            self._send(CLOCK_STOP)

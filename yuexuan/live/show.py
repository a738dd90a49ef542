"""The live show's state machine: cues of a compiled timeline played under operator control.

Timing comes only from the events of the :class:`yuexuan.live.program.Program` (timeline
seconds). A cue started at monotonic time ``g`` plays its message of timeline time ``t`` at
``g + (t − start)``; in ``auto`` mode the whole selection is anchored once, so every message is
due at ``origin + (t − from_s)``, exactly as compiled.

Commands (thread-safe; from the keyboard, a foot switch or MSC):
  GO        start the next cue now (a cue still playing is cut, its notes released);
  soft stop end the current cue at its next phrase boundary (``Cue.phrases``; 乐阕);
  hold      freeze the show (sounding notes released) — resume continues where it froze;
  panic     cancel everything, note-offs for every sounding note, All Notes Off everywhere.

The other parts: :mod:`~yuexuan.live.program` (what is played), :mod:`~yuexuan.live.outlet`
(what went out, what still sounds, the port going and returning), :mod:`~yuexuan.live.clock_out`
(MIDI clock, MTC, MSC) and :mod:`~yuexuan.live.scheduler` (when). Bookkeeping of sounding notes
guarantees that :meth:`Show.shutdown` leaves nothing hanging.

What live judging needs joins the show through its public methods (the hub holds a show, it does
not extend it): where the show stands on the timeline (:meth:`Show.timeline_s`, through holds and
GO waits), live calls on its send path (:meth:`Show.sound_call`: under the show's lock, through
its outlet, so that PANIC, a hold and the end release them, in their own generation apart from
any cue's), and the subscribers told of each cue's start and end and each 射节 stroke
(:class:`Subscribers`; the beats ride the run as cue events, so hold, resume, soft stop and GO
move or drop them as they move or drop the cue's notes).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from yuexuan.live import timecode
from yuexuan.live.calls import CallEvent
from yuexuan.live.clock_out import SyncStreams
from yuexuan.live.operator import Status
from yuexuan.live.outlet import Outlet
from yuexuan.live.program import Program
from yuexuan.live.queue_items import CUE_KINDS, SYNC_KINDS, Kind, Payload, Send
from yuexuan.live.scheduler import Scheduler
from yuexuan.timeline import Beat, Cue

GO_AFTER_S = 0.005           # from a GO (once the show runs) to the cue's first message, s
CALLS_CUE = "(live calls)"   # the outlet's cue for live calls: no cue of a timeline is named so
BEAT = "beat"                # key tag of a beat marker (a cue event carrying no bytes)


def _ignore(*_args: object) -> None:
    return None


@dataclass(frozen=True)
class Subscribers:
    """Told on the scheduler thread, under the show's lock (each must be quick: a UDP send, a
    queue put): ``on_cue(cue)`` at each cue's start, ``on_cue_end(cue)`` at its end or cut,
    ``on_beat(beat)`` at each 射节 stroke of the cues playing."""

    on_cue: Callable[[Cue], object] = _ignore
    on_cue_end: Callable[[Cue], object] = _ignore
    on_beat: Callable[[Beat], object] = _ignore


@dataclass(frozen=True)
class ShowOptions:
    auto: bool = False
    from_s: float | None = None       # window start, timeline seconds
    until_s: float | None = None      # window end (no note starts at or after it)
    clock: bool = False               # send MIDI clock (24 ppqn)
    clock_beat_s: float | None = None  # fixed clock quarter note, s; None = each cue's beat_s
    mtc_fps: int | None = None        # MTC frame rate, None = no MTC
    msc_device: int | None = None     # MSC device id for GO at each cue start, None = none
    lead_s: float = 0.25              # from the first command to the first message, s
    rt_priority: int | None = None    # SCHED_FIFO priority for the scheduler thread, if allowed


@dataclass
class _Run:
    """The cues being played under one anchor: due = anchor + t (monotonic s)."""

    gen: int | None
    anchor: float
    cue_ids: list[str]
    held_since: float | None = None
    saved: list[tuple[float, Payload]] = field(default_factory=list)   # taken off the queue by hold


class Show:
    """The show state machine; ``send(bytes) -> bool`` delivers one raw message. ``beats``: the
    selection's 建鼓 strokes (:class:`yuexuan.timeline.Beat`, selection seconds), told to
    ``subscribers`` as they fall due."""

    def __init__(self, program: Program, send: Send, options: ShowOptions = ShowOptions(),
                 port_name: str = "", clock: Callable[[], float] = time.monotonic,
                 beats: Iterable[Beat] = (), subscribers: Subscribers = Subscribers()) -> None:
        self.program = program
        self.options = options
        self._clock = clock
        self._lock = threading.RLock()
        self._sched = Scheduler(self._dispatch, clock=clock, rt_priority=options.rt_priority)
        self.stats = self._sched.stats
        self._outlet = Outlet(send, program.channels, port_name)
        self._sync = SyncStreams(self._sched, self._outlet.send, options.clock,
                                 options.clock_beat_s, options.mtc_fps, options.msc_device)
        self._gen = 0
        self._run: _Run | None = None
        self._index = 0                      # next cue to GO
        self._current: str | None = None     # cue id playing (or last played)
        self._cut_at: float | None = None    # soft-stop boundary of the current cue
        self._state = "waiting"
        self._prev_state = "waiting"         # the state a hold interrupted
        self._notices: deque[str] = deque(maxlen=4)
        self._notice_count = 0
        # (cue ids, monotonic time of timeline 0) per run
        self.anchors: list[tuple[tuple[str, ...], float]] = []
        self.done = threading.Event()
        self._closed = False
        self._beats: dict[str, list[Beat]] = {}
        for b in beats:
            self._beats.setdefault(b.cue, []).append(b)
        self._subscribers = subscribers
        self._calls_gen = 0
        self._stood_s: float | None = None   # where the last run stopped (END, CUT, PANIC), s

    # -- what went out ---------------------------------------------------------------------------
    @property
    def sent(self) -> int:
        return self._outlet.sent

    @property
    def dropped(self) -> int:
        return self._outlet.dropped

    @property
    def notes_dropped(self) -> int:
        """Note-ons that were due but could not be sent (the port or the JACK server gone)."""
        return self._outlet.notes_dropped

    @property
    def error(self) -> BaseException | None:
        return self._sched.error

    @property
    def realtime(self) -> bool:
        """True when the scheduler thread got realtime (SCHED_FIFO) scheduling."""
        return self._sched.realtime

    # -- life cycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """All notes off everywhere (:meth:`Outlet.reset`), the setup messages, start the
        scheduler; in auto mode start the whole show."""
        with self._lock:
            self._outlet.reset()
            for data in self.program.setup:
                self._outlet.send(data)
            self._sched.start()
            if self.options.auto:
                origin = self._clock() + self.options.lead_s
                starts = [self._first_s(c) for c in self.program.cues]
                # show time is timeline time: each cue's clock tempo from where it starts playing
                self._sync.begin(origin, starts[0], [timecode.ClockSegment(s, c.beat_s) for s, c
                                                     in zip(starts, self.program.cues)])
                self._launch(list(range(len(self.program.cues))), origin - starts[0])
                self._index = len(self.program.cues)

    def releases(self) -> list[tuple[int, int, int]]:
        """What the end of the show sends last: All Notes Off on every channel it uses."""
        return self._outlet.releases()

    def notice(self, text: str) -> None:
        with self._lock:
            self._notices.append(text)
            self._notice_count += 1

    def shutdown(self) -> None:
        """Stop everything and leave nothing sounding: note-offs, then CC 123 on every channel.

        Safe to call more than once and from any thread, also after errors.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._gen += 1
        self._sched.close()
        with self._lock:
            self._outlet.silence()
            self._outlet.all_notes_off()
            self._sync.stop()
            self._state = "done"
            self.done.set()

    # -- commands --------------------------------------------------------------------------------
    def go(self) -> str:
        """Start the next cue now; returns what happened (for the operator)."""
        with self._lock:
            if self._closed:
                return "the show is over"
            if self._run and self._run.held_since is not None:
                return "held: resume first"
            if self._index >= len(self.program.cues):
                return "no cue left"
            cue = self.program.cues[self._index]
            if self._sync.started:
                start_at = self._clock() + GO_AFTER_S
                self._sync.cue_starts(start_at, cue.beat_s)
            else:
                start_at = self._clock() + self.options.lead_s
                self._sync.begin(start_at, 0.0, [timecode.ClockSegment(0.0, cue.beat_s)])
            if self._run is not None:               # GO moves on: cut what is still playing
                self._drop_run()
                self._outlet.silence()
            self._launch([self._index], start_at - self._first_s(cue))
            self._index += 1
            return f"GO {cue.id}"

    def soft_stop(self) -> str:
        """End the current cue at its next phrase boundary (乐阕)."""
        with self._lock:
            run = self._run
            if run is None or self._current is None or self._state != "playing":
                return "nothing playing"
            cue = self._cue(self._current)
            pos = self._clock() - run.anchor
            later = [p for p in cue.phrases if p > pos + 1e-3]
            cut = min(min(later) if later else cue.end, cue.end)
            self._cut_at = cut
            cid, gen = cue.id, run.gen
            self._sched.cancel(lambda p: p.gen == gen and p.cue == cid and p.t >= cut
                               and p.kind in (Kind.ON, Kind.OTHER, Kind.END, Kind.START))
            self._sched.add(run.anchor + cut, Payload(gen, cut, cid, Kind.CUT))
            self._state = "stopping"
            return f"soft stop: {cid} ends at {cut:.2f} s (乐阕)"

    def hold(self) -> str:
        """Freeze the show; sounding notes are released, a live call's too (its rest dropped)."""
        with self._lock:
            self._drop_calls()
            run = self._run
            if run is None or run.held_since is not None:
                return "nothing to hold"
            now = self._clock()
            gen = run.gen
            run.saved = [(due - run.anchor, p) for due, p in
                         self._sched.cancel(lambda p: p.gen == gen and p.kind in CUE_KINDS)]
            run.held_since = now
            run.gen = None                   # anything already popped is now stale
            self._outlet.silence()
            self._sync.hold(now)
            self._prev_state, self._state = self._state, "held"
            return "held"

    def resume(self) -> str:
        with self._lock:
            run = self._run
            if run is None or run.held_since is None:
                return "not held"
            now = self._clock()
            run.anchor += now - run.held_since
            run.held_since = None
            self._gen += 1
            run.gen = self._gen
            self._sched.add_many((run.anchor + t, p._replace(gen=run.gen)) for t, p in run.saved)
            run.saved = []
            self.anchors.append((tuple(run.cue_ids), run.anchor))
            self._sync.resume(now)
            self._state = self._prev_state
            return "resumed"

    def panic(self) -> str:
        """Cancel everything; note-offs for every sounding note; CC 123 on every channel."""
        with self._lock:
            self._drop_calls()
            if self._run is not None:
                self._stood_s = self.timeline_s(self._clock())
                self._drop_run()
            self._outlet.silence()
            self._outlet.all_notes_off()
            if self._index >= len(self.program.cues) or self.options.auto:
                self._finish()
            else:
                self._state = "stopped"
            return "PANIC: all notes off"

    def command(self, name: str) -> str:
        """Run a command by name: go, stop, hold, resume, toggle-hold, panic."""
        if name == "toggle-hold":
            with self._lock:
                name = "resume" if self._run and self._run.held_since is not None else "hold"
        return {"go": self.go, "stop": self.soft_stop, "hold": self.hold, "resume": self.resume,
                "panic": self.panic}[name]()

    def midi_in(self, data: Sequence[int], go: timecode.Trigger, stop: timecode.Trigger) -> str | None:
        """An incoming raw message (foot switch / MSC): the command it fires, if any."""
        name = timecode.command_for_midi(data, go, stop, self.options.msc_device)
        if name is None:
            return None
        text = self.command(name)
        self.notice(f"MIDI {name}: {text}")
        return text

    def port_changed(self, change: str, resume: Callable[[], None] | None = None) -> None:
        """Output port lost ("lost") or back ("back"), or the JACK server gone ("server-lost")
        or running again ("server-back"): notice, and re-send setup on the port's return.

        ``resume()`` (for "back") reopens the output to messages; it is called under the show's
        lock, so the setup (tuning) goes out before any scheduled note."""
        with self._lock:
            if change == "lost":
                self.notice(self._outlet.port_lost())
            elif change == "back":
                self.notice(self._outlet.port_back(self.program.setup, resume))
            elif change == "server-lost":          # --api jack: the JACK server shut down
                self._outlet.port_lost()
                self._outlet.server_ok = False
                self.notice("JACK server has shut down: the show clock runs on, notes are "
                            "counted as dropped until it returns")
            elif change == "server-back":
                self._outlet.server_ok = True
                self.notice("JACK server is back: MIDI clients re-created, looking for "
                            f"{self._outlet.port_name}")

    # -- status --------------------------------------------------------------------------------
    def status(self) -> Status:
        with self._lock:
            cue = self._cue(self._current) if self._current else None
            pos = None
            if self._run is not None and cue is not None:
                ref = self._run.held_since if self._run.held_since is not None else self._clock()
                pos = ref - self._run.anchor
            nxt = (self.program.cues[self._index]
                   if self._index < len(self.program.cues) and not self.options.auto else None)
            if self.options.auto and cue is not None:
                later = [c for c in self.program.cues if c.start > cue.start]
                nxt = later[0] if later else None
            st = Status(self._state, cue, pos, self._cut_at, nxt, self.options.auto,
                        self._outlet.port_name, self._outlet.port_ok, self.sent, self.dropped,
                        tuple(self._notices), self._notice_count,
                        server_ok=self._outlet.server_ok, notes_dropped=self.notes_dropped)
            return self._with_next_stroke(st)

    def _with_next_stroke(self, st: Status) -> Status:
        """``st`` with the next 射节 stroke of the cues playing: how soon, whose and which 节
        (e.g. ``(1.4, "上耦下射, 节 4")``); as it is when held or no stroke is left."""
        run = self._run
        if run is None or run.held_since is not None:
            return st
        pos = self._clock() - run.anchor
        later = [b for cid in run.cue_ids for b in self._beats.get(cid, ()) if b.time > pos]
        if not later:
            return st
        b = min(later, key=lambda x: x.time)
        who = f"{b.pair or ''}{b.role or ''}"
        return replace(st, next_stroke=(b.time - pos, f"{who}, 节 {b.jie}" if who else f"节 {b.jie}"))

    # -- where the show stands ---------------------------------------------------------------------
    def now(self) -> float:
        """The show's clock (monotonic s)."""
        return self._clock()

    def timeline_s(self, at: float) -> float | None:
        """The selection's timeline time (s) of monotonic instant ``at``: frozen while held;
        waiting for a GO (or after the end, or a PANIC) it stands where the last cue stopped, as
        the music does; None before the first start."""
        with self._lock:
            run = self._run
            if run is not None:
                return (run.held_since if run.held_since is not None else at) - run.anchor
            return self._stood_s

    # -- live calls ----------------------------------------------------------------------------------
    def sound_call(self, events: Iterable[CallEvent]) -> bool:
        """Sound a call now: ``events`` (:class:`yuexuan.live.calls.CallEvent`) from this
        instant; the first at ``dt`` 0 goes out before this returns. False after the show ended."""
        with self._lock:
            if self._closed:
                return False
            now = self._clock()
            later: list[tuple[float, Payload]] = []
            for e in events:
                p = Payload(self._calls_gen, e.dt, CALLS_CUE, e.kind, e.data, e.key)
                if e.dt <= 0:
                    self._send_call(p)
                else:
                    later.append((now + e.dt, p))
            self._sched.add_many(later)
            return True

    def _send_call(self, p: Payload) -> bool:
        if p.kind == Kind.ON:                       # a call's payload: its key and bytes
            assert p.key is not None and isinstance(p.data, tuple)
            return self._outlet.note_on(CALLS_CUE, p.key, p.data)
        if p.kind == Kind.OFF:
            assert p.key is not None and isinstance(p.data, tuple)
            return self._outlet.note_off(CALLS_CUE, p.key, p.data)
        assert isinstance(p.data, tuple)
        return self._outlet.send(p.data)

    def _drop_calls(self) -> None:
        self._calls_gen += 1
        self._sched.cancel(lambda p: p.cue == CALLS_CUE)

    # -- internals (called with the lock held) --------------------------------------------------
    def _cue(self, cue_id: str | None) -> Cue:
        for c in self.program.cues:
            if c.id == cue_id:
                return c
        raise KeyError(cue_id)

    def _first_s(self, cue: Cue) -> float:
        """Where ``cue`` starts playing, timeline seconds (its start, or --from inside it)."""
        return cue.start if self.options.from_s is None else max(cue.start, self.options.from_s)

    def _launch(self, indices: Sequence[int], anchor: float) -> None:
        self._gen += 1
        gen = self._gen
        cues = [self.program.cues[i] for i in indices]
        self._run = _Run(gen, anchor, [c.id for c in cues])
        self.anchors.append((tuple(self._run.cue_ids), anchor))
        hi = self.options.until_s if self.options.until_s is not None else float("inf")
        items: list[tuple[float, Payload]] = []
        for c in cues:
            evs = self.program.events[c.id]
            start = self._first_s(c)
            end = max([min(c.end, hi)] + [e.t for e in evs[-1:]])
            items.append((anchor + start, Payload(gen, start, c.id, Kind.START)))
            items.extend((anchor + e.t, Payload(gen, e.t, c.id, e.kind, e.data, e.key))
                         for e in evs)
            items.append((anchor + end, Payload(gen, end, c.id, Kind.END)))
            items.extend((anchor + b.time, Payload(gen, b.time, c.id, Kind.OTHER, None, (BEAT, b)))
                         for b in self._beats.get(c.id, ()) if start <= b.time < min(c.end, hi))
        self._sched.add_many(items)
        self._state = "playing"
        self._cut_at = None

    def _drop_run(self) -> None:
        assert self._run is not None                # a run is being dropped
        gen = self._run.gen
        self._sched.cancel(lambda p: p.gen == gen and p.kind in CUE_KINDS)
        self._run = None
        self._cut_at = None

    def _finish(self) -> None:
        self._run = None
        self._state = "done"
        self._sync.stop()
        self.done.set()

    def _dispatch(self, p: Payload) -> bool:
        with self._lock:
            if self._closed:
                return False
            kind = p.kind
            if kind in SYNC_KINDS:
                return self._sync.dispatch(p)
            if p.cue == CALLS_CUE:
                return p.gen == self._calls_gen and self._send_call(p)
            if self._run is None or p.gen != self._run.gen:
                return False
            if kind == Kind.OTHER and p.data is None:
                assert p.key is not None            # a beat marker: (BEAT, the Beat)
                self._subscribers.on_beat(p.key[1])
                return False
            if kind == Kind.ON:                     # a note's payload: its cue, key and bytes
                assert p.cue is not None and p.key is not None and isinstance(p.data, tuple)
                return self._outlet.note_on(p.cue, p.key, p.data)
            if kind == Kind.OFF:
                assert p.cue is not None and p.key is not None and isinstance(p.data, tuple)
                return self._outlet.note_off(p.cue, p.key, p.data)
            if kind == Kind.OTHER:
                assert isinstance(p.data, tuple)
                return self._outlet.send(p.data)
            if kind == Kind.START:
                assert p.cue is not None                # a cue's start names it
                self._current = p.cue
                self._cut_at = None
                self._state = "playing"
                sent = self._sync.msc_go([c.id for c in self.program.cues].index(p.cue) + 1)
                self._subscribers.on_cue(self._cue(p.cue))
                return sent
            if kind == Kind.CUT:
                self._outlet.silence(p.cue)
            self._cue_ended(p.cue)                  # CUT or END
            if self._run is None:
                self._stood_s = p.t
            self._subscribers.on_cue_end(self._cue(p.cue))
            return False

    def _cue_ended(self, cid: str | None) -> None:
        run = self._run
        assert run is not None                      # a cue ends within its run
        run.cue_ids = [c for c in run.cue_ids if c != cid]
        self._cut_at = None
        if run.cue_ids:                      # auto: the next cue starts at its own time
            if cid == self._current:
                self._state = "waiting"
            return
        self._run = None
        if self._index >= len(self.program.cues):
            self._finish()
        else:
            self._state = "waiting"

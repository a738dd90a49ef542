"""The live show: cues of a compiled timeline played to a MIDI output under operator control.

Timing comes only from the messages of :func:`yuexuan.midi.smf.timeline_messages` (timeline
seconds). A cue started at monotonic time ``g`` plays its message of timeline time ``t`` at
``g + (t − start)``; in ``auto`` mode the whole selection is anchored once, so every message is
due at ``origin + (t − from_s)``, exactly as compiled.

Commands (thread-safe; from the keyboard, a foot switch or MSC):
  GO        start the next cue now (a cue still playing is cut, its notes released);
  soft stop end the current cue at its next phrase boundary (``Cue.phrases``; 乐阕);
  hold      freeze the show (sounding notes released) — resume continues where it froze;
  panic     cancel everything, note-offs for every sounding note, All Notes Off everywhere.
Bookkeeping of sounding notes guarantees that :meth:`Show.shutdown` leaves nothing hanging.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field

import mido

from yuexuan.midi import sync
from yuexuan.errors import UserError
from yuexuan.midi.scheduler import Scheduler

ON, OFF, OTHER, START, END, CUT, TICK = range(7)
_SETUP_TYPES = ("sysex", "program_change", "control_change")


@dataclass(frozen=True)
class Event:
    """One message of a cue: timeline time ``t`` (s), raw bytes, note-on/off bookkeeping key."""

    t: float
    cue: str
    kind: int                    # ON | OFF | OTHER
    data: tuple
    key: tuple | None = None     # (channel, note) for ON/OFF


@dataclass(frozen=True)
class Program:
    """What the show plays: setup messages (tuning, programs) and each cue's events."""

    cues: tuple                  # selected Cue objects, timeline order
    setup: tuple                 # raw messages sent before anything (and again on port return)
    events: dict                 # cue id -> list[Event], time-sorted
    channels: tuple              # MIDI channels (0-based) the show uses


@dataclass(frozen=True)
class ShowOptions:
    auto: bool = False
    from_s: float | None = None       # window start, timeline seconds
    until_s: float | None = None      # window end (no note starts at or after it)
    clock_bpm: float | None = None    # MIDI clock tempo, None = no clock
    mtc_fps: int | None = None        # MTC frame rate, None = no MTC
    msc_device: int | None = None     # MSC device id for GO at each cue start, None = none
    lead_s: float = 0.25              # from the first command to the first message, s
    rt_priority: int | None = None    # SCHED_FIFO priority for the scheduler thread, if allowed


def _kind(msg: mido.Message) -> int:
    if msg.type == "note_on" and msg.velocity > 0:
        return ON
    if msg.type in ("note_on", "note_off"):
        return OFF
    return OTHER


def build_program(timeline, messages, cue_ids=None, from_s=None, until_s=None) -> Program:
    """Split ``(time_s, track, message)`` triples into setup messages and per-cue events.

    Setup = the leading SysEx, control and program changes at the first time (tuning, banks,
    programs), sent before anything and again when a lost port returns. A note-on belongs to the cue whose
    span holds it; its note-off follows it; other messages go with the cue holding their time.
    ``from_s``/``until_s`` keep the note-ons in [from_s, until_s) with their note-offs.
    """
    cues = [c for c in timeline.cues if cue_ids is None or c.id in cue_ids]
    if cue_ids is not None:
        unknown = [i for i in cue_ids if i not in {c.id for c in timeline.cues}]
        if unknown:
            raise UserError(f"no cue {unknown[0]!r} in the timeline; cues: "
                            + ", ".join(c.id for c in timeline.cues), key="--cues")
    lo = float("-inf") if from_s is None else from_s
    hi = float("inf") if until_s is None else until_s
    if from_s is not None and until_s is not None and until_s <= from_s:
        raise UserError(f"--until ({until_s}) must be after --from ({from_s})", key="--until")
    cues = [c for c in cues if c.end > lo and c.start < hi]
    if not cues:
        raise UserError("no cue in the selected window", key="--cues")
    chosen = {c.id for c in cues}
    by_start = sorted(timeline.cues, key=lambda c: c.start)

    def cue_at(t: float) -> str | None:
        holding = [c for c in by_start if c.start <= t < c.end]
        if holding:
            return holding[-1].id
        before = [c for c in by_start if c.start <= t]
        return before[-1].id if before else (by_start[0].id if by_start else None)

    setup, events, channels = [], {c.id: [] for c in cues}, set()
    t0 = messages[0][0] if messages else 0.0
    n_setup = 0
    for t, _track, msg in messages:        # the leading tuning / bank / program messages
        if t > t0 or msg.type not in _SETUP_TYPES:
            break
        setup.append(tuple(msg.bytes()))
        n_setup += 1
        if hasattr(msg, "channel"):
            channels.add(msg.channel)
    open_notes: dict = {}
    for t, _track, msg in messages[n_setup:]:
        kind = _kind(msg)
        if hasattr(msg, "channel"):
            key = (msg.channel, msg.note) if kind != OTHER else None
        else:
            key = None
        if kind == ON:
            cue = cue_at(t) if lo <= t < hi else None
            open_notes.setdefault(key, deque()).append(cue)
        elif kind == OFF:
            queue = open_notes.get(key)
            cue = queue.popleft() if queue else None
        else:
            cue = cue_at(t) if lo <= t < hi else None
        if cue in chosen:
            events[cue].append(Event(float(t), cue, kind, tuple(msg.bytes()), key))
            if hasattr(msg, "channel"):
                channels.add(msg.channel)
    for evs in events.values():
        evs.sort(key=lambda e: (e.t, e.kind != OFF))
    return Program(tuple(cues), tuple(setup), events, tuple(sorted(channels)))


@dataclass
class _Run:
    """The cues being played under one anchor: due = anchor + t (monotonic s)."""

    gen: int
    anchor: float
    cue_ids: list
    held_since: float | None = None
    saved: list = field(default_factory=list)      # (t, payload) taken off the queue by hold


@dataclass(frozen=True)
class Status:
    """A snapshot for the operator's screen (see :mod:`yuexuan.midi.operator`)."""

    state: str                   # waiting | playing | stopping | held | stopped | done
    cue: object | None           # the Cue playing (or last played)
    position_s: float | None     # timeline seconds within the current cue
    stop_at_s: float | None      # where a soft stop will end it (timeline s)
    next_cue: object | None
    auto: bool
    port: str
    port_ok: bool
    sent: int
    dropped: int
    notices: tuple               # the latest few notices
    notice_count: int            # notices so far (to tell the new ones)


class Show:
    """The show state machine; ``send(bytes) -> bool`` delivers one raw message."""

    def __init__(self, program: Program, send, options: ShowOptions = ShowOptions(),
                 port_name: str = "", clock=time.monotonic):
        self.program = program
        self.options = options
        self._send = send
        self._clock = clock
        self._lock = threading.RLock()
        self._sched = Scheduler(self._dispatch, clock=clock, rt_priority=options.rt_priority)
        self.stats = self._sched.stats
        self._gen = 0
        self._run: _Run | None = None
        self._index = 0                      # next cue to GO
        self._current = None                 # cue id playing (or last played)
        self._cut_at: float | None = None    # soft-stop boundary of the current cue
        self._state = "waiting"
        self._sounding: Counter = Counter()  # (cue, channel, note) -> count
        self._sync_gen = 0
        self._show_anchor: float | None = None   # monotonic time of show-clock 0
        self._sync_held_at: float | None = None
        self._mtc_next = 0
        self.sent = 0
        self.port_name = port_name
        self.port_ok = True
        self.dropped = 0
        self._notices: deque = deque(maxlen=4)
        self._notice_count = 0
        self.anchors: list = []              # (cue ids, monotonic time of timeline 0) per run
        self.done = threading.Event()
        self._closed = False

    # -- life cycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Send the setup messages, start the scheduler; in auto mode start the whole show."""
        with self._lock:
            for data in self.program.setup:
                self._out(data)
            self._sched.start()
            if self.options.auto:
                origin = self._clock() + self.options.lead_s
                first = self.program.cues[0].start if self.options.from_s is None else max(
                    self.options.from_s, self.program.cues[0].start)
                self._begin_sync(origin, first)
                self._launch(list(range(len(self.program.cues))), origin - first)
                self._index = len(self.program.cues)

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
            self._sync_gen += 1
        self._sched.close()
        with self._lock:
            self._silence(None)
            self._all_notes_off()
            if self._show_anchor is not None and self.options.clock_bpm:
                self._out((0xFC,))
            self._state = "done"
            self.done.set()

    @property
    def error(self):
        return self._sched.error

    @property
    def realtime(self) -> bool:
        """True when the scheduler thread got realtime (SCHED_FIFO) scheduling."""
        return self._sched.realtime

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
            now = self._clock()
            start_at = now + (self.options.lead_s if self._show_anchor is None else 0.005)
            if self._show_anchor is None:
                self._begin_sync(start_at, 0.0)
            if self._run is not None:               # GO moves on: cut what is still playing
                self._drop_run()
                self._silence(None)
            cue = self.program.cues[self._index]
            first = cue.start if self.options.from_s is None else max(cue.start,
                                                                      self.options.from_s)
            self._launch([self._index], start_at - first)
            self._index += 1
            return f"GO {cue.id}"

    def soft_stop(self) -> str:
        """End the current cue at its next phrase boundary (乐阕)."""
        with self._lock:
            run = self._run
            if run is None or self._current is None or self._state not in ("playing",):
                return "nothing playing"
            cue = self._cue(self._current)
            pos = self._clock() - run.anchor
            later = [p for p in cue.phrases if p > pos + 1e-3]
            cut = min(later) if later else cue.end
            if cut >= cue.end:
                cut = cue.end
            self._cut_at = cut
            cid, gen = cue.id, run.gen
            self._sched.cancel(lambda p: p[0] == gen and p[2] == cid and p[1] >= cut
                               and p[3] in (ON, OTHER, END, START))
            self._sched.add(run.anchor + cut, (gen, cut, cid, CUT, None, None))
            self._state = "stopping"
            return f"soft stop: {cid} ends at {cut:.2f} s (乐阕)"

    def hold(self) -> str:
        """Freeze the show; sounding notes are released."""
        with self._lock:
            run = self._run
            if run is None or run.held_since is not None:
                return "nothing to hold"
            now = self._clock()
            gen = run.gen
            run.saved = [(due - run.anchor, p) for due, p in
                         self._sched.cancel(lambda p: p[0] == gen and p[3] != TICK)]
            run.held_since = now
            run.gen = None                   # anything already popped is now stale
            self._silence(None)
            self._hold_sync(now)
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
            self._sched.add_many((run.anchor + t, (run.gen,) + p[1:]) for t, p in run.saved)
            run.saved = []
            self.anchors.append((tuple(run.cue_ids), run.anchor))
            self._resume_sync(now)
            self._state = self._prev_state
            return "resumed"

    def panic(self) -> str:
        """Cancel everything; note-offs for every sounding note; CC 123 on every channel."""
        with self._lock:
            if self._run is not None:
                self._drop_run()
            self._silence(None)
            self._all_notes_off()
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

    def midi_in(self, data, go: sync.Trigger, stop: sync.Trigger) -> str | None:
        """An incoming raw message (foot switch / MSC): the command it fires, if any."""
        try:
            msg = mido.Message.from_bytes(list(data))
        except ValueError:
            return None
        msc = sync.parse_msc(msg, self.options.msc_device)
        if msc is not None:
            name = {"go": "go", "stop": "stop", "resume": "resume", "all_off": "panic"}[msc[0]]
        elif sync.matches(go, msg):
            name = "go"
        elif sync.matches(stop, msg):
            name = "stop"
        else:
            return None
        text = self.command(name)
        self.notice(f"MIDI {name}: {text}")
        return text

    def port_changed(self, change: str, resume=None) -> None:
        """Output port lost ("lost") or back ("back"): notice, and re-send setup on return.

        ``resume()`` (for "back") reopens the output to messages; it is called under the show's
        lock, so the setup (tuning) goes out before any scheduled note."""
        with self._lock:
            if change == "lost":
                self.port_ok = False
                self._sounding.clear()        # whatever sounded went with the port
                self.notice(f"MIDI output {self.port_name} has gone; the show runs on, "
                            "output resumes when it returns")
            elif change == "back":
                self.port_ok = True
                if resume is not None:
                    resume()
                for data in self.program.setup:
                    self._out(data)
                self._all_notes_off()
                self.notice(f"MIDI output {self.port_name} is back; output resumed")

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
            return Status(self._state, cue, pos, self._cut_at, nxt, self.options.auto,
                          self.port_name, self.port_ok, self.sent, self.dropped,
                          tuple(self._notices), self._notice_count)

    # -- internals (called with the lock held) --------------------------------------------------
    def _cue(self, cue_id):
        for c in self.program.cues:
            if c.id == cue_id:
                return c
        raise KeyError(cue_id)

    def _launch(self, indices, anchor: float) -> None:
        self._gen += 1
        gen = self._gen
        cues = [self.program.cues[i] for i in indices]
        self._run = _Run(gen, anchor, [c.id for c in cues])
        self.anchors.append((tuple(self._run.cue_ids), anchor))
        lo = self.options.from_s if self.options.from_s is not None else float("-inf")
        hi = self.options.until_s if self.options.until_s is not None else float("inf")
        items = []
        for c in cues:
            evs = self.program.events[c.id]
            start = max(c.start, lo)
            end = max([min(c.end, hi)] + [e.t for e in evs[-1:]])
            items.append((anchor + start, (gen, start, c.id, START, None, None)))
            items.extend((anchor + e.t, (gen, e.t, c.id, e.kind, e.data, e.key)) for e in evs)
            items.append((anchor + end, (gen, end, c.id, END, None, None)))
        self._sched.add_many(items)
        self._state = "playing"
        self._cut_at = None

    def _drop_run(self) -> None:
        gen = self._run.gen
        self._sched.cancel(lambda p: p[0] == gen and p[3] != TICK)
        self._run = None
        self._cut_at = None

    def _out(self, data) -> bool:
        ok = self._send(data)
        if ok:
            self.sent += 1
        else:
            self.dropped += 1
        return ok

    def _silence(self, cue_id) -> None:
        """Note-off for every sounding note (of ``cue_id``, or of all cues)."""
        for (cid, ch, note), n in list(self._sounding.items()):
            if cue_id is None or cid == cue_id:
                for _ in range(n):
                    self._out((0x80 | ch, note, 0))
                del self._sounding[(cid, ch, note)]

    def _all_notes_off(self) -> None:
        for ch in self.program.channels:
            self._out((0xB0 | ch, 123, 0))

    def _finish(self) -> None:
        self._run = None
        self._state = "done"
        if self._show_anchor is not None and self.options.clock_bpm:
            self._out((0xFC,))
        self._sync_gen += 1
        self.done.set()

    def _dispatch(self, payload) -> bool:
        gen, t, cid, kind, data, key = payload
        with self._lock:
            if kind == TICK:
                return self._tick(gen, t, data)
            if self._run is None or gen != self._run.gen or self._closed:
                return False
            if kind == ON:
                if not self._out(data):
                    return False
                self._sounding[(cid, key[0], key[1])] += 1
                return True
            if kind == OFF:
                k = (cid, key[0], key[1])
                if not self._sounding[k]:
                    del self._sounding[k]
                    return False                 # released already (hold, cut, port loss)
                self._sounding[k] -= 1
                if not self._sounding[k]:
                    del self._sounding[k]
                return self._out(data)
            if kind == OTHER:
                return self._out(data)
            if kind == START:
                self._current = cid
                self._cut_at = None
                self._state = "playing"
                if self.options.msc_device is not None:
                    number = [c.id for c in self.program.cues].index(cid) + 1
                    return self._out(tuple(sync.msc_message("go", self.options.msc_device,
                                                            number).bytes()))
                return False
            if kind == CUT:
                self._silence(cid)
                self._cue_ended(cid)
                return False
            if kind == END:
                self._cue_ended(cid)
                return False
        return False

    def _cue_ended(self, cid) -> None:
        run = self._run
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

    # -- MIDI clock and MTC, on the show clock ----------------------------------------------------
    def _begin_sync(self, at: float, show_time: float) -> None:
        """Start the show clock: monotonic ``at`` is show time ``show_time`` (s)."""
        self._show_anchor = at - show_time
        o = self.options
        if o.mtc_fps:
            self._out(tuple(sync.mtc_full_frame(at - self._show_anchor, o.mtc_fps).bytes()))
            self._mtc_next = sync.mtc_first_index(at - self._show_anchor, o.mtc_fps)
        self._schedule_sync(at, start=True)

    def _schedule_sync(self, at: float, start: bool) -> None:
        o, g = self.options, self._sync_gen
        if o.clock_bpm:
            self._clock_base = at
            self._sched.add(at, (g, 0, None, TICK, "clock-start" if start else "clock-continue",
                                 None))
        if o.mtc_fps:
            due = self._show_anchor + sync.mtc_index_time(self._mtc_next, o.mtc_fps)
            self._sched.add(due, (g, self._mtc_next, None, TICK, "mtc", None))

    def _hold_sync(self, now: float) -> None:
        self._sync_gen += 1
        self._sync_held_at = now
        if self.options.clock_bpm and self._show_anchor is not None:
            self._out((0xFC,))

    def _resume_sync(self, now: float) -> None:
        if self._show_anchor is None:
            return
        self._show_anchor += now - self._sync_held_at
        if self.options.mtc_fps:
            self._out(tuple(sync.mtc_full_frame(now - self._show_anchor,
                                                self.options.mtc_fps).bytes()))
            self._mtc_next = sync.mtc_first_index(now - self._show_anchor, self.options.mtc_fps)
        self._schedule_sync(now, start=False)

    def _tick(self, gen, k, stream) -> bool:
        if gen != self._sync_gen or self._closed:
            return False
        o = self.options
        if stream == "mtc":
            ok = self._out(tuple(sync.mtc_quarter_frame(k, o.mtc_fps).bytes()))
            self._mtc_next = k + 1
            self._sched.add(self._show_anchor + sync.mtc_index_time(k + 1, o.mtc_fps),
                            (gen, k + 1, None, TICK, "mtc", None))
            return ok
        byte = {"clock-start": 0xFA, "clock-continue": 0xFB}.get(stream, 0xF8)
        ok = self._out((byte,))
        if byte != 0xF8:
            k = -1
        period = sync.clock_period_s(o.clock_bpm)
        self._sched.add(self._clock_base + (k + 1) * period, (gen, k + 1, None, TICK, "clock",
                                                              None))
        return ok

"""The live show with what live judging needs: where it stands on the timeline, live calls on its
send path, and hooks at each cue start, cue end and 射节 stroke (for ``--osc-out``).

:class:`JudgedShow` extends :class:`yuexuan.live.show.Show` and keeps its timing model: a run's
message of timeline time ``t`` is due at ``anchor + t``; a hold freezes the position; the beats
ride the run as cue events, so hold, resume, soft stop and GO move or drop them as they move or
drop the cue's notes. Live calls sound under the show's lock through its outlet (so PANIC, a hold
and the end release them) in their own generation, apart from any cue's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from yuexuan.live import show as show_mod
from yuexuan.live.calls import CallEvent
from yuexuan.live.operator import Status
from yuexuan.live.program import Program
from yuexuan.live.queue_items import Kind, Payload, Send
from yuexuan.timeline import Beat, Cue

CALLS_CUE = "(live calls)"      # the outlet's cue for live calls: no cue of a timeline is named so
BEAT = "beat"                   # key tag of a beat marker (a cue event carrying no bytes)


def _ignore(*_args: object) -> None:
    return None


class JudgedShow(show_mod.Show):
    """``beats``: the selection's 建鼓 strokes (:class:`yuexuan.timeline.Beat`, selection seconds).
    ``on_cue(cue)``, ``on_cue_end(cue)`` and ``on_beat(beat)`` are called on the scheduler thread
    under the show's lock: they must be quick (a UDP send)."""

    def __init__(self, program: Program, send: Send, options: show_mod.ShowOptions = show_mod.ShowOptions(),
                 port_name: str = "", beats: Iterable[Beat] = (), on_cue: Callable[[Cue], object] = _ignore,
                 on_cue_end: Callable[[Cue], object] = _ignore, on_beat: Callable[[Beat], object] = _ignore,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(program, send, options, port_name, clock)
        self._beats: dict[str, list[Beat]] = {}
        for b in beats:
            self._beats.setdefault(b.cue, []).append(b)
        self._on_cue, self._on_cue_end, self._on_beat = on_cue, on_cue_end, on_beat
        self._calls_gen = 0
        self._stood_s: float | None = None   # where the last run stopped (END, CUT, PANIC), s

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

    def status(self) -> Status:
        """The show's status with the next 射节 stroke of the cues playing: how soon, whose and
        which 节 (e.g. ``(1.4, "上耦下射, 节 4")``); None when held or no stroke is left."""
        with self._lock:
            st = super().status()
            run = self._run
            if run is None or run.held_since is not None:
                return st
            pos = self._clock() - run.anchor
            later = [b for cid in run.cue_ids for b in self._beats.get(cid, ()) if b.time > pos]
            if not later:
                return st
            b = min(later, key=lambda x: x.time)
            who = f"{b.pair or ''}{b.role or ''}"
            return replace(st, next_stroke=(b.time - pos, f"{who}, 节 {b.jie}" if who
                                            else f"节 {b.jie}"))

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

    def hold(self) -> str:
        """As the show's hold; a call sounding is released and its rest dropped too."""
        with self._lock:
            self._drop_calls()
            return super().hold()

    def panic(self) -> str:
        with self._lock:
            self._drop_calls()
            if self._run is not None:
                self._stood_s = self.timeline_s(self._clock())
            return super().panic()

    # -- hooks -----------------------------------------------------------------------------------------
    def _launch(self, indices: Sequence[int], anchor: float) -> None:
        super()._launch(indices, anchor)
        assert self._run is not None                # just launched
        gen = self._run.gen
        hi = self.options.until_s if self.options.until_s is not None else float("inf")
        items: list[tuple[float, Payload]] = []
        for i in indices:
            cue = self.program.cues[i]
            lo = self._first_s(cue)
            items.extend((anchor + b.time, Payload(gen, b.time, cue.id, Kind.OTHER, None, (BEAT, b)))
                         for b in self._beats.get(cue.id, ()) if lo <= b.time < min(cue.end, hi))
        self._sched.add_many(items)

    def _dispatch(self, p: Payload) -> bool:
        with self._lock:
            if self._closed:
                return False
            if p.cue == CALLS_CUE:
                return p.gen == self._calls_gen and self._send_call(p)
            current = self._run is not None and p.gen == self._run.gen
            if current and p.kind == Kind.OTHER and p.data is None:
                assert p.key is not None            # a beat marker: (BEAT, the Beat)
                self._on_beat(p.key[1])
                return False
            sent = super()._dispatch(p)
            if current and p.kind == Kind.START:
                self._on_cue(self._cue(p.cue))
            elif current and p.kind in (Kind.END, Kind.CUT):
                if self._run is None:
                    self._stood_s = p.t
                self._on_cue_end(self._cue(p.cue))
            return sent

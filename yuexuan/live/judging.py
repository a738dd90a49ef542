"""The live judging hub: every report of an arrow (OSC now, a MIDI hit sensor too) comes here.

For each shot, in this order (docs/play.md, "Live judging"):

1. its arrival (monotonic s) becomes the ceremony's timeline seconds: the show's position
   (:meth:`yuexuan.live.show.Show.timeline_s`, which knows holds, GO waits and
   ``--from``) moved by the selection's place in the whole ceremony, as the one timeline records
   it (:meth:`yuexuan.timeline.Timeline.ceremony_s`), so ``check CUES LOG`` judges the log with
   no ``--offset``;
2. :class:`yuexuan.live.judge.Judge` judges it with ``check``'s rules (the judged time is the
   archer's pending loose, else the arrival);
3. a hit sounds the 获者's call on the rig at once (a 公's 留/扬/方 the 大射正's), through the
   show's send path (:meth:`~yuexuan.live.show.Show.sound_call`);
4. the row is appended to ``--shots-log`` and fsynced;
5. only then is the verdict sent (``--osc-out``) and shown: a kill keeps every shot whose verdict
   anyone saw. A row that could not be written is cut back (the log ends on a whole line), the
   shot is taken back from the judge (so the judge and the log agree: every later verdict is
   ``check``'s on the log) and ``/yuexuan/unlogged`` goes out instead of a verdict.

A shot identical to one received within :data:`DUPLICATE_S` is a duplicate (a datagram sent
twice): said and counted, not judged. Bad messages and refusals are said (a few lines a second at
most, the rest counted: a flood keeps memory and the screen bounded), kept as the last
:data:`BAD_KEPT` and counted; :meth:`Hub.poll` says what the OSC listener refused, rate-limited
or lost to the kernel, and :meth:`Hub.health` gives every count
(:class:`yuexuan.live.health.InputHealth`). Thread-safe: one lock around a shot.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from yuexuan.live import osc
from yuexuan.live.calls import CallEvent, huo_key
from yuexuan.live.health import LOG_FAILING, LOG_NONE, LOG_OK, InputHealth, news
from yuexuan.live.judge import Judge, JudgedShot, Replaced, RoundEnd, ShotError
from yuexuan.live.operator_lines import OperatorLines
from yuexuan.rite.cuesheet_records import SHOOTING_KINDS
from yuexuan.timeline import Cue, Timeline

if TYPE_CHECKING:
    from yuexuan.live.show import Show
    from yuexuan.scoring.logwrite import ShotLogWriter

BAD_KEPT = 100              # bad messages kept for the report; the rest only counted
DUPLICATE_S = 0.5           # a shot identical to one received this recently is a duplicate


def round_closing_cues(timeline: Timeline) -> frozenset[str]:
    """The ids of the shooting cues of ``timeline`` after which no later cue of it shoots the same
    round: where the 释获者 announces a round cut short. A cue of no known round (a timeline saved
    before cues had one) closes what was judged in it."""
    shooting = sorted((c for c in timeline.cues if c.kind in SHOOTING_KINDS), key=lambda c: c.start)
    return frozenset(c.id for k, c in enumerate(shooting)
                     if c.round is None or all(d.round != c.round for d in shooting[k + 1:]))


def verdict_line(j: JudgedShot) -> str:
    """One screen line for a judged shot (:class:`yuexuan.live.judge.JudgedShot`)."""
    r = j.row
    drum = ("" if r.get("nearest_beat") is None
            else f"  beat {r['nearest_beat']:.3f} {1000 * r['offset']:+.0f} ms")
    return (f"shot {j.number}: {r['time']:.3f} s {r['archer']} {r['rank']} {r['role']} "
            f"rd {r['round']} {r['target'] or '—'} {r['result']}{drum}  "
            f"{'算' if j.released else '·'} {j.reason}")


def tally_line(t: dict[str, Any], final: bool) -> str:
    return (f"round {t['round']}{' ends' if final else ''}: 右 {t['右']} 算, 左 {t['左']} 算 — "
            f"{t['announcement']}")


def _shot_key(fields: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A shot's fields, comparable: two shots alike are one datagram sent twice."""
    return tuple(sorted((k, str(v)) for k, v in fields.items()))


class Hub:
    """Feeds the :class:`~yuexuan.live.judge.Judge`; sounds, logs, sends and shows each verdict.

    ``show``: the :class:`~yuexuan.live.show.Show` (its public methods); ``timeline``: the one timeline it
    plays (a ``--cues`` selection records its place in the ceremony, whose seconds the judge,
    the log and the rounds' cues use); ``calls``: :func:`yuexuan.midi.
    live_calls.call_templates`; ``log``: a :class:`yuexuan.scoring.logwrite.ShotLogWriter` or None;
    ``out``: an :class:`yuexuan.live.osc.OscOut` or None; ``command(name)``: runs a show command
    (the operator's queue); ``closers``: :func:`round_closing_cues` of the show's timeline (None:
    every shooting cue closes the rounds judged in it)."""

    def __init__(self, judge: Judge, show: Show, timeline: Timeline,
                 calls: dict[str, tuple[CallEvent, ...]],
                 log: ShotLogWriter | None = None, out: osc.OscOut | None = None,
                 command: Callable[[str], object] | None = None,
                 closers: frozenset[str] | None = None,
                 listener: osc.OscListener | None = None) -> None:
        self.judge, self.show, self.timeline, self.calls = judge, show, timeline, calls
        self.log, self.out, self.command, self.closers = log, out, command, closers
        self.listener = listener            # --osc's: its gate's counts and kernel drops
        self._lock = threading.RLock()     # a shot's error is reported under it
        self._lines = OperatorLines()                 # verdict lines, notices, every line (bounded)
        self.bad: deque[dict[str, Any]] = deque(maxlen=BAD_KEPT)  # {"arrival": s, "why": text}
        self.bad_count = 0
        self.duplicates = 0
        self.judged: list[JudgedShot] = []         # every JudgedShot, in order
        self.round_ends: list[RoundEnd] = []      # RoundEnd records, as announced
        self.call_lag_s: list[float] = []      # shot arrival → its call's first message sent, s
        self.unlogged = 0
        self.logged = 0
        self._log_failing = False
        self.last_control: str | None = None
        self._shots_seen: deque[tuple[float, tuple[Any, ...]]] = deque()  # (arrival, fields)
        self._polled = InputHealth()        # the listener's counts as last said
        if listener is not None and listener.rcvbuf_hint:
            self._notice(listener.rcvbuf_hint)          # a burst may be dropped: say how to fix

    # -- input: one handler a kind of record (osc.Receiver; the OSC thread, the hit sensor) ---
    def on_command(self, record: osc.Command) -> None:
        """A remote show command: said, then run."""
        with self._lock:
            self.last_control = f"{record.name} from {record.source or '?'}"
            self._notice(f"remote {record.name.upper()} from {record.source or '?'} (OSC)")
        if self.command is not None:
            self.command(record.name)

    def on_bad(self, record: osc.Bad) -> None:
        """A message that could not be used (:meth:`report_bad`)."""
        self.report_bad(record.why, record.arrival)

    def timeline_at(self, arrival: float) -> float | None:
        """The ceremony's timeline seconds at monotonic ``arrival``; None before the show."""
        t = self.show.timeline_s(arrival)
        return None if t is None else self.timeline.ceremony_s(t)

    def on_loose(self, record: osc.Loose) -> None:
        """An arrow left the string: at its ``time_s`` (ceremony s) when given, else at its
        arrival."""
        archer, time_s, arrival = record.archer, record.time_s, record.arrival
        now = self.timeline_at(arrival)
        t = now if time_s is None else time_s
        if t is None:
            return self.report_bad(f"loose of {archer}: the show has not started", arrival)
        with self._lock:
            refused = self.judge.looses_refused
            err = self.judge.loose(archer, t, now)
            if isinstance(err, Replaced):
                self._notice(f"loose of {archer} at {t:.3f} s replaces his pending one at "
                             f"{err.time_s:.3f} s ({self.judge.looses_replaced} replaced)")
            elif err is not None and self.judge.looses_refused > refused:
                self._notice(f"REFUSED loose of {archer}: {err.message} "
                             f"({self.judge.looses_refused} refused)", throttle=True)
            elif err is not None:
                self.report_bad(f"loose: {err.message}", arrival)

    def _duplicate(self, fields: dict[str, Any], arrival: float) -> bool:
        """Whether a shot of ``fields`` came within :data:`DUPLICATE_S` before ``arrival``
        (called with the lock held; the shot is remembered)."""
        seen = self._shots_seen
        while seen and arrival - seen[0][0] > DUPLICATE_S:
            seen.popleft()
        key = _shot_key(fields)
        if any(k == key for _, k in seen):
            return True
        seen.append((arrival, key))
        return False

    def on_shot(self, record: osc.Shot) -> JudgedShot | None:
        """An arrow has landed: judge, sound, log, send, show. The JudgedShot, or None."""
        fields: dict[str, Any] = dict(record.fields)
        arrival = record.arrival
        with self._lock:
            if self._duplicate(fields, arrival):
                self.duplicates += 1
                self._notice(f"DUPLICATE shot of {fields.get('archer')} (identical to one "
                             f"within {DUPLICATE_S} s): not judged ({self.duplicates} in all)",
                             throttle=True)
                return None
        t = self.timeline_at(arrival)
        if t is None:
            self.report_bad(f"shot of {fields.get('archer')}: the show has not started "
                            "(not judged)", arrival)
            return None
        with self._lock:
            j = self.judge.shot(fields, t)
            if isinstance(j, ShotError):
                column = f"{j.column}: " if j.column else ""
                self.report_bad(f"shot of {fields.get('archer')}: {column}{j.message} "
                                "(not judged)", arrival)
                return None
            word = huo_key(j.row["target"]) if j.huo else j.zheng       # the 获者 of the 侯 hit
            if word is not None and word in self.calls and self.show.sound_call(self.calls[word]):
                self.call_lag_s.append(self.show.now() - arrival)
            why = self._write(j)
            if why is not None:             # a resend of it is not a duplicate
                seen = (arrival, _shot_key(fields))
                self._shots_seen = deque(e for e in self._shots_seen if e != seen)
                self.judge.undo(j)
                self._unlogged(j.row, f"shot of {j.row['archer']} at {j.row['time']:.3f} s",
                               why)
                return None
            self.judged.append(j)
            self._tell(j)
            return j

    def on_correction(self, record: osc.Correction) -> JudgedShot | None:
        """A scorer's correction: judged again, the log rewritten (atomically), then told. No call
        sounds (the arrow landed long ago). The corrected JudgedShot, or None."""
        archer, arrow, result = record.archer, record.arrow, record.result
        target, arrival = record.target, record.arrival
        with self._lock:
            before = self.judge.rows
            j = self.judge.correct(archer, arrow, result, target)
            if isinstance(j, ShotError):
                self.report_bad(f"correction of {archer}'s arrow {arrow}: {j.message} "
                                "(not made)", arrival)
                return None
            if self.log is not None:
                try:
                    self.log.rewrite(self.judge.rows)
                except OSError as exc:      # taken back: the log is the truth
                    old = before[j.number - 1]
                    self.judge.correct(archer, arrow, old["result"], old["target"] or None)
                    self._unlogged(j.row, f"correction of {archer}'s arrow {arrow}",
                                   exc.strerror or str(exc))
                    return None
            self._say(f"corrected shot {j.number}: {archer}'s arrow {arrow} is {result}")
            self._tell(j)
            return j

    def cue_ended(self, cue: Cue) -> None:
        """A shooting cue has ended: the 释获者 announces each round judged in it whose roster had
        not yet loosed every arrow (a rehearsal's part of a round, a round cut short), but not
        the cue's own round while a later cue of the show shoots more of it (round 2's 三耦
        before the 公)."""
        if cue.kind not in SHOOTING_KINDS:
            return
        shift = self.timeline.ceremony_s(cue.start) - cue.start     # the cue's place in the ceremony
        lo, hi = cue.start + shift, cue.end + shift
        with self._lock:
            rounds = {int(r["round"]) for r in self.judge.rows if lo <= r["time"] <= hi}
            done: set[int | None] = {e.round for e in self.round_ends}
            if self.closers is not None and cue.id not in self.closers:
                done.add(cue.round)
            for t in self._tallies():
                if t["round"] in rounds - done:
                    self.round_ends.append(RoundEnd(t["round"], t["右"], t["左"],
                                                    t["announcement"]))
                    if self.out is not None:
                        self.out.tally(t, True)
                    self._say(tally_line(t, True) + f" ({cue.id} has ended)")

    def report_bad(self, why: str, arrival: float) -> None:
        with self._lock:
            self.bad.append({"arrival": arrival, "why": why})
            self.bad_count += 1
            self._notice(f"bad message: {why}", throttle=True)

    def poll(self, now: float | None = None) -> None:
        """Say what the OSC listener refused, rate-limited or lost to the kernel since the last
        poll, and sum up the notices a flood left unsaid (the operator's loop calls this a few
        times a second: a kernel drop is on the screen within a second)."""
        h = self.health(now)
        with self._lock:
            for line in news(self._polled, h):
                self._lines.notice(line)
            self._polled = h
            self._lines.sum_up(now)

    # -- output (called with the lock held) --------------------------------------------------------
    def _write(self, j: JudgedShot) -> str | None:
        """Log ``j``'s row; why it could not be, or None."""
        if self.log is None:
            return None
        try:
            self.log.write(j.row)
        except OSError as exc:
            self._log_failing = True
            return exc.strerror or str(exc)
        self.logged += 1
        self._log_failing = False
        return None

    def _unlogged(self, row: dict[str, Any], what: str, why: str) -> None:
        """A row not logged: no verdict; /yuexuan/unlogged and a red line instead."""
        self.unlogged += 1
        self._log_failing = True
        if self.out is not None:
            self.out.unlogged(row, why)
        self._say(f"NOT LOGGED {what}: {why} — no verdict sent; report it again")

    def _tell(self, j: JudgedShot) -> None:
        if self.out is not None:
            self.out.verdict(j.number, j.row)
        self._say(verdict_line(j))
        for number, row in j.revised:
            if self.out is not None:
                self.out.verdict(number, row)
            self._say(f"shot {number} revised: {'算' if row['released'] else '·'} {row['reason']}")
        for w in j.warnings:
            self._say(f"warning: {w}")
        tally = next((t for t in j.tallies if t["round"] == j.row["round"]), None)
        if tally is not None:
            if self.out is not None:
                self.out.tally(tally, False)
            self._say(tally_line(tally, False), tally=True)
        if j.round_end is not None:
            e = j.round_end
            self.round_ends.append(e)
            final = {"round": e.round, "右": e.right, "左": e.left, "announcement": e.announcement}
            if self.out is not None:
                self.out.tally(final, True)
            self._say(tally_line(final, True))

    def _say(self, text: str, tally: bool = False) -> None:
        self._lines.say(text, recent=not tally)

    def _notice(self, text: str, throttle: bool = False) -> None:
        self._lines.notice(text, throttle)

    @property
    def said(self) -> list[str]:
        """The latest lines said, in order (:data:`yuexuan.live.operator_lines.LINES_KEPT` at most)."""
        with self._lock:
            return list(self._lines.lines)

    def lines_since(self, seen: int) -> tuple[list[str], int]:
        """The lines said after the first ``seen`` and the count so far (for a printer)."""
        with self._lock:
            return self._lines.lines_since(seen)

    def notices(self) -> list[str]:
        """The latest notices: bad messages, refusals, duplicates, remote commands."""
        with self._lock:
            return list(self._lines.notices)

    def screen(self) -> list[str]:
        """The operator's lines: the latest verdicts (and NOT LOGGED lines), then each round's
        running tally (or its announcement, once the round has ended). Notices are apart
        (:meth:`notices`, counted in :meth:`health`): bad input never pushes a verdict off."""
        with self._lock:
            ended = {e.round: e for e in self.round_ends}
            tallies = [tally_line(t, t["round"] in ended) for t in self._tallies()]
            return list(self._lines.recent) + tallies

    def health(self, now: float | None = None) -> InputHealth:
        """The input's and the log's counts now (:class:`yuexuan.live.health.InputHealth`);
        the kernel's drops are read at most every 0.2 s."""
        li = self.listener
        dropped = 0 if li is None else li.drops.read(time.monotonic() if now is None else now)
        with self._lock:
            state = LOG_NONE if self.log is None else LOG_FAILING if self._log_failing else LOG_OK
            j = self.judge
            net: dict[str, Any] = {}
            if li is not None:
                g = li.gate
                net = dict(listening=f"{li.address[0]}:{li.address[1]}", allow=tuple(map(str, g.allow)),
                           control_allow=tuple(map(str, g.control_allow)),
                           rcvbuf_bytes=li.rcvbuf_bytes, rcvbuf_hint=li.rcvbuf_hint,
                           refused=g.refused, control_refused=g.control_refused,
                           rate_limited=g.rate_limited, kernel_dropped=dropped,
                           last_refused=g.last_refused, last_limited=g.last_limited,
                           last_control_refused=g.last_control_refused)
            return InputHealth(**net, bad=self.bad_count, duplicates=self.duplicates,
                               looses_replaced=j.looses_replaced, looses_refused=j.looses_refused,
                               looses_expired=j.looses_expired, last_control=self.last_control,
                               log_state=state, logged=self.logged, unlogged=self.unlogged,
                               log_reserve_bytes=None if self.log is None
                               else self.log.reserve_bytes)

    # -- the end ---------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """For the report: every shot's row (latest verdicts), the tallies, the announcements
        made, the bad messages and the shot → call lag."""
        health = self.health()
        with self._lock:
            rows = self.judge.rows
            tallies = self._tallies()
            return {"shots": rows, "tallies": tallies,
                    "round_ends": [e._asdict() for e in self.round_ends],
                    "bad_messages": list(self.bad), "unlogged": self.unlogged,
                    "osc_refused": health.refused, "health": asdict(health),
                    "call_lag_ms": [round(1000 * s, 3) for s in self.call_lag_s]}

    def final_lines(self) -> list[str]:
        """The tallies of the rounds judged, one line each (for stderr at the end)."""
        with self._lock:
            return [tally_line(t, False) for t in self._tallies()]

    def _tallies(self) -> list[dict[str, Any]]:
        verdict = self.judge.verdict
        return verdict.tallies if verdict is not None else []

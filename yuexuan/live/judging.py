"""The live judging hub: every report of an arrow (OSC now, a MIDI hit sensor too) comes here.

For each shot, in this order (docs/play.md, "Live judging"):

1. its arrival (monotonic s) becomes the ceremony's timeline seconds: the show's position
   (:meth:`yuexuan.live.judged_show.JudgedShow.timeline_s`, which knows holds, GO waits and
   ``--from``) moved by the selection's place in the whole ceremony, as the one timeline records
   it (:meth:`yuexuan.timeline.Timeline.ceremony_s`), so ``check CUES LOG`` judges the log with
   no ``--offset``;
2. :class:`yuexuan.live.judge.Judge` judges it with ``check``'s rules (the judged time is the
   archer's pending loose, else the arrival);
3. a hit sounds the 获者's call on the rig at once (a 公's 留/扬/方 the 大射正's), through the
   show's send path (:meth:`~yuexuan.live.judged_show.JudgedShow.sound_call`);
4. the row is appended to ``--shots-log`` and fsynced;
5. only then is the verdict sent (``--osc-out``) and shown: a kill keeps every shot whose verdict
   anyone saw.

Bad messages are reported (screen, report), never raised. Thread-safe: one lock around a shot.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from yuexuan.live import osc
from yuexuan.live.calls import CallEvent, huo_key
from yuexuan.live.health import LOG_FAILING, LOG_NONE, LOG_OK, InputHealth
from yuexuan.live.judge import Judge, JudgedShot, RoundEnd, ShotError
from yuexuan.rite.cuesheet_records import SHOOTING_KINDS
from yuexuan.timeline import Cue, Timeline

if TYPE_CHECKING:
    from yuexuan.live.judged_show import JudgedShow
    from yuexuan.scoring.logwrite import ShotLogWriter

SCREEN_LINES = 6            # latest verdicts (and bad messages) on the operator's screen


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


class Hub:
    """Feeds the :class:`~yuexuan.live.judge.Judge`; sounds, logs, sends and shows each verdict.

    ``show``: a :class:`~yuexuan.live.judged_show.JudgedShow`; ``timeline``: the one timeline it
    plays (a ``--cues`` selection records its place in the ceremony, whose seconds the judge,
    the log and the rounds' cues use); ``calls``: :func:`yuexuan.midi.
    live_calls.call_templates`; ``log``: a :class:`yuexuan.scoring.logwrite.ShotLogWriter` or None;
    ``out``: an :class:`yuexuan.live.osc.OscOut` or None; ``command(name)``: runs a show command
    (the operator's queue); ``closers``: :func:`round_closing_cues` of the show's timeline (None:
    every shooting cue closes the rounds judged in it)."""

    def __init__(self, judge: Judge, show: JudgedShow, timeline: Timeline,
                 calls: dict[str, tuple[CallEvent, ...]],
                 log: ShotLogWriter | None = None, out: osc.OscOut | None = None,
                 command: Callable[[str], object] | None = None,
                 closers: frozenset[str] | None = None) -> None:
        self.judge, self.show, self.timeline, self.calls = judge, show, timeline, calls
        self.log, self.out, self.command, self.closers = log, out, command, closers
        self._lock = threading.RLock()     # a shot's error is reported under it
        self._recent: deque[str] = deque(maxlen=SCREEN_LINES)  # latest lines but the tallies
        self.said: list[str] = []         # every line, in order (printed when not a terminal)
        self.bad: list[dict[str, Any]] = []         # bad messages: {"arrival": monotonic s, "why": text}
        self.judged: list[JudgedShot] = []         # every JudgedShot, in order
        self.round_ends: list[RoundEnd] = []      # RoundEnd records, as announced
        self.call_lag_s: list[float] = []      # shot arrival → its call's first message sent, s
        self.unlogged = 0
        self.logged = 0
        self._log_failing = False

    # -- input -------------------------------------------------------------------------------
    def deliver(self, record: osc.Record) -> None:
        """One record of :mod:`yuexuan.live.osc` (the OSC thread calls this)."""
        if isinstance(record, osc.Shot):
            self.shot(record.fields, record.arrival)
        elif isinstance(record, osc.Loose):
            self.loose(record.archer, record.time_s, record.arrival)
        elif isinstance(record, osc.Correction):
            self.correct(record.archer, record.arrow, record.result, record.target, record.arrival)
        elif isinstance(record, osc.Command):
            if self.command is not None:
                self.command(record.name)
        else:
            self.report_bad(record.why, record.arrival)

    def timeline_at(self, arrival: float) -> float | None:
        """The ceremony's timeline seconds at monotonic ``arrival``; None before the show."""
        t = self.show.timeline_s(arrival)
        return None if t is None else self.timeline.ceremony_s(t)

    def loose(self, archer: str, time_s: float | None, arrival: float) -> None:
        """An arrow left the string: at ``time_s`` (ceremony s) when given, else at its arrival."""
        t = self.timeline_at(arrival) if time_s is None else time_s
        if t is None:
            return self.report_bad(f"loose of {archer}: the show has not started", arrival)
        with self._lock:
            err = self.judge.loose(archer, t)
        if err is not None:
            self.report_bad(f"loose: {err.message}", arrival)

    def shot(self, fields: dict[str, Any], arrival: float) -> JudgedShot | None:
        """An arrow has landed: judge, sound, log, send, show. The JudgedShot, or None."""
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
            self._write(j)
            self.judged.append(j)
            self._tell(j)
            return j

    def correct(self, archer: str, arrow: int, result: str, target: str | None,
                arrival: float) -> JudgedShot | None:
        """A scorer's correction: judged again, the log rewritten (atomically), then told. No call
        sounds (the arrow landed long ago). The corrected JudgedShot, or None."""
        with self._lock:
            j = self.judge.correct(archer, arrow, result, target)
            if isinstance(j, ShotError):
                self.report_bad(f"correction of {archer}'s arrow {arrow}: {j.message} "
                                "(not made)", arrival)
                return None
            if self.log is not None:
                try:
                    self.log.rewrite(self.judge.rows)
                except OSError as exc:
                    self._say(f"NOT LOGGED correction of shot {j.number}: {exc.strerror}")
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
            self._say(f"bad message: {why}")

    # -- output (called with the lock held) --------------------------------------------------------
    def _write(self, j: JudgedShot) -> None:
        if self.log is None:
            return
        try:
            self.log.write(j.row)
        except OSError as exc:
            self.unlogged += 1
            self._log_failing = True
            self._say(f"NOT LOGGED shot {j.number}: {exc.strerror}")
        else:
            self.logged += 1
            self._log_failing = False

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
        if not tally:
            self._recent.append(text)
        self.said.append(text)

    def screen(self) -> list[str]:
        """The operator's lines: the latest verdicts and bad messages, then each round's running
        tally (or its announcement, once the round has ended)."""
        with self._lock:
            ended = {e.round: e for e in self.round_ends}
            tallies = [tally_line(t, t["round"] in ended) for t in self._tallies()]
            return list(self._recent) + tallies

    def health(self) -> InputHealth:
        """The input's and the log's counts now (:class:`yuexuan.live.health.InputHealth`)."""
        with self._lock:
            state = LOG_NONE if self.log is None else LOG_FAILING if self._log_failing else LOG_OK
            return InputHealth(bad=len(self.bad), log_state=state, logged=self.logged,
                               unlogged=self.unlogged)

    # -- the end ---------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """For the report: every shot's row (latest verdicts), the tallies, the announcements
        made, the bad messages and the shot → call lag."""
        with self._lock:
            rows = self.judge.rows
            tallies = self._tallies()
            return {"shots": rows, "tallies": tallies,
                    "round_ends": [e._asdict() for e in self.round_ends],
                    "bad_messages": list(self.bad), "unlogged": self.unlogged,
                    "call_lag_ms": [round(1000 * s, 3) for s in self.call_lag_s]}

    def final_lines(self) -> list[str]:
        """The tallies of the rounds judged, one line each (for stderr at the end)."""
        with self._lock:
            return [tally_line(t, False) for t in self._tallies()]

    def _tallies(self) -> list[dict[str, Any]]:
        verdict = self.judge.verdict
        return verdict.tallies if verdict is not None else []

"""The live show assembled: from a :class:`ShowPlan` (every option checked, the programme
compiled; ``yuexuan play`` makes it from its arguments) to the rig that plays it — the MIDI
output, the show, its inputs (the operator's keys, a foot switch, OSC, a hit sensor) and what
listens to it (OSC out, the live judging's hub, the screen) — driven until the show ends, then
closed whole, in order, and reported (docs/play.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import queue
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yuexuan import atomic
from yuexuan.live import jack_server, operator, osc, process, timecode
from yuexuan.live.midi_in import Input
from yuexuan.live.midi_out import Output
from yuexuan.live.show import Show, ShowOptions, Subscribers
from yuexuan.live.terminal import Terminal

if TYPE_CHECKING:
    from yuexuan.live.gate import Gate
    from yuexuan.live.judge import Judge
    from yuexuan.live.judging import Hub
    from yuexuan.live.program import Program
    from yuexuan.live.scheduler import TimingSummary
    from yuexuan.rite.cuesheet_hits import HitsMidi
    from yuexuan.scoring.logwrite import ShotLogWriter
    from yuexuan.timeline import Timeline

PORT_POLL_S = 0.5       # how often the output port is looked for (loss and return)
SERVER_POLL_S = 0.1     # while the port (or the JACK server) is gone: how often it is looked
                        # for; a server's shutdown is said within this (ServerWatch.retry_s
                        # bounds how often a new client is tried)
SCREEN_S = 0.2          # status screen refresh period
RT_PRIORITY = 5         # SCHED_FIFO priority of the scheduler thread: below JACK's (10+)


@dataclass(frozen=True)
class ShowPlan:
    """What the show will do: every option checked, the programme compiled; no port open yet."""
    program: Program                    # the windowed MIDI programme
    timeline: Timeline                  # the timeline played
    options: ShowOptions
    api: str                            # --api: alsa | jack
    port: str | None                    # --port: the destination's name fragment (None: virtual)
    go_trigger: timecode.Trigger        # --go-midi
    stop_trigger: timecode.Trigger      # --stop-midi
    control: str | None = None          # --control: the foot switch's input
    report: str | None = None           # --report FILE.json
    lang: str | None = None             # --lang: the screen's cue words (None: by its width)
    calls: dict[str, Any] = field(default_factory=dict)   # the live calls' templates (judged)
    listen: tuple[str, int] | None = None   # --osc's (host, port)
    gate: Gate | None = None            # --osc's allow-lists and rate limit
    shots_log: str | None = None        # --shots-log FILE
    log_reserve_bytes: int | None = None    # --shots-log's reserve
    notify: osc.OscOut | None = None    # --osc-out
    hits_midi: str | None = None        # --hits-midi: the hit sensor's input
    sensor_map: HitsMidi | None = None  # --hits-midi's note map
    judge: Judge | None = None          # when shots are judged live (--osc, --hits-midi)

    @property
    def input_priority(self) -> int | None:
        """SCHED_FIFO priority of the OSC and hit-sensor threads: one below the scheduler's."""
        return None if self.options.rt_priority is None else self.options.rt_priority - 1


def play(plan: ShowPlan) -> int:
    """Open the rig, play the show until it ends (or is quit, or interrupted), close the rig
    and report; the exit status (130 when interrupted)."""
    rig = _Rig()
    interrupted = False
    with contextlib.ExitStack() as stack:
        process.settings(stack, quiet_root_logger=plan.listen is not None)
        rig_stack = stack.enter_context(contextlib.ExitStack())
        stack.callback(process.ignore_stop_signals)        # the first thing done on the way out
        try:
            _open_rig(plan, rig, rig_stack)
            _drive(rig)
        except KeyboardInterrupt:
            if rig.show is None:                    # before there was a show: as any command
                raise
            interrupted = True
    return _finish(plan, rig, interrupted)


def _shots_log(plan: ShowPlan) -> ShotLogWriter | None:
    """``--shots-log``'s writer with its reserve (None without it); a repaired file is said on
    stderr."""
    if plan.shots_log is None:
        return None
    from yuexuan.scoring.logwrite import ShotLogWriter

    log = ShotLogWriter(plan.shots_log, plan.log_reserve_bytes)
    if log.repaired:
        print(f"yuexuan play: {plan.shots_log}: {log.repaired}", file=sys.stderr)
    return log


@dataclass
class _Rig:
    """The show's open pieces, filled in as they open (:func:`_open_rig`)."""
    commands: queue.Queue[str] = field(default_factory=queue.Queue)  # keys', OSC's, MIDI's
    ended: queue.Queue[Any] = field(default_factory=queue.Queue)     # cues ended, for the hub
    log: ShotLogWriter | None = None    # --shots-log
    listener: osc.OscListener | None = None
    out: Output | None = None
    show: Show | None = None
    hub: Hub | None = None              # when shots are judged live
    term: Terminal | None = None


def _open_rig(plan: ShowPlan, rig: _Rig, stack: contextlib.ExitStack) -> None:
    """Open the rig into ``rig``, each piece's close pushed on ``stack`` as it opens, so that any
    exit closes what was opened in reverse order: the hit sensor and the OSC listener stop first,
    the show shuts down (nothing left sounding), its last screen, then the port and the log. The
    log and the OSC port open before the MIDI port, so that their mistakes come before it."""
    rig.log = _shots_log(plan)
    if rig.log is not None:
        stack.callback(rig.log.close)
    if plan.listen is not None:          # bound now, started once the hub is there
        rig.listener = osc.OscListener(*plan.listen, None, plan.input_priority, plan.gate)
        stack.callback(rig.listener.close)
    out = rig.out = Output(plan.api, plan.port)
    stack.callback(lambda: out.close(again=rig.show.releases() if rig.show is not None else ()))
    stack.callback(_last_screen, rig)    # after the show's shutdown
    show = rig.show = _show(plan, out, rig.ended)
    stack.callback(show.shutdown)
    if plan.control:
        control = Input(plan.api, plan.control, lambda data: show.midi_in(
            data, plan.go_trigger, plan.stop_trigger))
        stack.callback(control.close)
        out.follow(control)                 # re-created with a JACK server that returns
    if plan.judge is not None:
        from yuexuan.live.judging import Hub, round_closing_cues
        rig.hub = Hub(plan.judge, show, plan.timeline, plan.calls, rig.log, plan.notify,
                      rig.commands.put, round_closing_cues(plan.timeline), rig.listener)
    if rig.listener is not None:
        rig.listener.start(rig.hub)
        stack.callback(rig.listener.stop)
    if plan.sensor_map is not None:     # --hits-midi
        from yuexuan.live import hits
        assert rig.hub is not None          # --hits-midi judges: the hub is there
        assert plan.hits_midi is not None   # the map is read for it
        _, sensor = hits.open_sensor(plan.api, plan.hits_midi, rig.hub, plan.sensor_map,
                                     plan.timeline, plan.input_priority)
        stack.callback(sensor.close)
        out.follow(sensor)
    listening = None if rig.listener is None else "{}:{}".format(*rig.listener.address)
    rig.term = Terminal(rig.commands, listening, plan.lang)


def _show(plan: ShowPlan, out: Output, ended: queue.Queue[Any]) -> Show:
    """The show on ``out``, telling --osc-out of each cue and beat, and the hub (through
    ``ended``) of each cue's end when shots are judged live."""
    told = Subscribers()
    if plan.notify is not None:
        told = dataclasses.replace(told, on_cue=plan.notify.cue, on_beat=plan.notify.beat)
    if plan.judge is not None:
        told = dataclasses.replace(told, on_cue_end=ended.put)
    return Show(plan.program, out.send, plan.options, port_name=out.port_name or "",
                beats=plan.timeline.beats, subscribers=told)


def _last_screen(rig: _Rig) -> None:
    """The terminal's last screen (or last lines), then the terminal as it was."""
    if rig.term is not None and rig.show is not None:
        with contextlib.suppress(OSError):          # the terminal may have gone (SIGHUP)
            rig.term.show(rig.show.status(), rig.hub)
        rig.term.close()


def _drive(rig: _Rig) -> None:
    """Start the show; until it is done (or quit): run the operator's commands, tell the hub of
    ended cues, look for the output port (lost, back) and redraw the screen."""
    show, out, term = rig.show, rig.out, rig.term
    assert show is not None and out is not None and term is not None     # _open_rig's
    # what the show was built from (the timeline, the modules: ~230,000 objects for the ceremony)
    # out of the garbage collector's reach: a full collection of them took 0.1 s on an idle
    # machine, a pause in which no thread of the show sends (they need the interpreter's lock)
    gc.freeze()
    show.start()
    last_poll = time.monotonic()
    last_quit = float("-inf")
    next_draw = 0.0
    while not show.done.is_set():
        if show.error is not None:
            raise RuntimeError(f"scheduler failed: {show.error!r}") from show.error
        try:
            cmd = rig.commands.get(timeout=0.02)
        except queue.Empty:
            cmd = None
        if cmd == "quit":                   # asked twice: one stray key never ends a show
            if time.monotonic() - last_quit <= operator.QUIT_WITHIN_S:
                break
            last_quit = time.monotonic()
            show.notice(f"quit? press q again within {operator.QUIT_WITHIN_S:.0f} s to end the show")
        elif cmd:
            show.notice(show.command(cmd))
        _cues_ended(rig.ended, rig.hub)
        now = time.monotonic()
        if now >= last_poll + (PORT_POLL_S if out.connected and not out.server_down
                               else SERVER_POLL_S):
            last_poll = now
            change = out.check()
            if change:
                show.port_changed(change, out.resume)
        if now >= next_draw or cmd:
            next_draw = now + (SCREEN_S if term.tty else 0.05)
            if rig.hub is not None:
                rig.hub.poll(now)               # refusals, drops: on the screen within 1 s
            term.show(show.status(), rig.hub)


def _finish(plan: ShowPlan, rig: _Rig, interrupted: bool) -> int:
    """The run's summary and the judging's last lines on stderr, ``--report``; the exit status."""
    show, out, hub = rig.show, rig.out, rig.hub
    assert show is not None and out is not None         # run() comes here only with a show
    summary = show.stats.summary()
    lines = [summary.line() + (f"; {out.dropped} dropped while the port was gone"
                               if out.dropped else "")
             + (f"; {show.notes_dropped} notes not sent" if show.notes_dropped else "")
             + (f"; the JACK server went away {len(out.server_outages())} times"
                if out.server_outages() else "")
             + ("" if show.realtime else "; scheduler ran without realtime priority")]
    _cues_ended(rig.ended, hub)
    lines.extend(hub.final_lines() if hub is not None else ())
    undelivered = out.delivery.line() if out.delivery is not None else None
    if undelivered:
        lines.append(f"yuexuan play: {undelivered}")
    if plan.report:             # first: after SIGHUP the terminal that stderr writes to is gone
        report = _report(show, summary)
        report["jack_server_outages"] = list(jack_server.outages_report(out.server_outages()))
        report["delivery"] = None if out.delivery is None else dataclasses.asdict(out.delivery)
        if hub is not None:
            report["judging"] = hub.summary()
        if plan.notify is not None:
            report["osc_out_failed"] = plan.notify.failed
        atomic.write_text(plan.report, json.dumps(report, ensure_ascii=False, indent=1))
    if interrupted:
        lines.append("yuexuan play: interrupted; all notes off")
    process.tell(lines)
    return 130 if interrupted else 0


def _cues_ended(ended: queue.Queue[Any], hub: Hub | None) -> None:
    """Tell the hub of the cues that ended (a round's announcement when its cue ends). The
    scheduler thread queues them: it holds the show's lock, which the hub's shots take after
    their own."""
    while hub is not None and not ended.empty():
        hub.cue_ended(ended.get())


def _report(show: Show, summary: TimingSummary) -> dict[str, Any]:
    return {"timing_ms": {"count": summary.count, "p50": summary.p50_ms, "p95": summary.p95_ms,
                          "p99": summary.p99_ms, "max": summary.max_ms},
            "anchors": [{"cues": list(c), "anchor_monotonic": a} for c, a in show.anchors],
            "sent": show.sent, "dropped": show.dropped, "notes_dropped": show.notes_dropped,
            "realtime": show.realtime}

"""OSC over UDP for the live show: shots and show control in, notifications out (docs/play.md).

In (:class:`OscListener`, python-osc's :class:`~pythonosc.osc_server.BlockingOSCUDPServer` on
its own thread, so messages are handled one at a time in arrival order):

  /yuexuan/loose  archer [time]                     an arrow leaves the string
  /yuexuan/shot   archer rank role target result [pair] [round]   it has landed
  /yuexuan/correct archer arrow result [target]     a scorer corrects a shot (e.g. a sensor's)
  /yuexuan/go | /yuexuan/stop | /yuexuan/hold | /yuexuan/resume | /yuexuan/panic

Each datagram is stamped with its arrival on the monotonic clock before it is parsed.
:func:`parse` turns an address and its arguments into a :class:`Loose`, :class:`Shot`,
:class:`Command` or :class:`Bad` (a wrong address or argument, said in one line): nothing a
sender does raises. Out (:class:`OscOut`, python-osc's :class:`~pythonosc.udp_client.SimpleUDPClient`):
/yuexuan/cue, /yuexuan/beat, /yuexuan/verdict, /yuexuan/tally (:data:`OUT_ADDRESSES`).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from dataclasses import dataclass

from pythonosc import osc_packet
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.osc_server import BlockingOSCUDPServer
from pythonosc.udp_client import SimpleUDPClient

from yuexuan.errors import UserError

PREFIX = "/yuexuan/"
COMMANDS = {"go": "go", "stop": "stop", "hold": "toggle-hold", "resume": "resume",
            "panic": "panic"}                   # /yuexuan/<word> → the show's command (keys')
SHOT_FIELDS = ("archer", "rank", "role", "target", "result")   # strings, in this order
SHOT_OPTIONAL = ("pair", "round")               # pair a string, round an int
OUT_ADDRESSES = {
    "cue": "/yuexuan/cue",          # id piece — at each cue start
    "beat": "/yuexuan/beat",        # cue pair jie role — at each 射节 建鼓 stroke
    "verdict": "/yuexuan/verdict",  # see verdict_args
    "tally": "/yuexuan/tally",      # round 右 左 announcement final
}
DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True)
class Loose:
    archer: str
    time_s: float | None            # timeline seconds when the sender gave them, else None
    arrival: float                  # monotonic s


@dataclass(frozen=True)
class Shot:
    fields: dict                    # archer rank role target result [pair] [round] as sent
    arrival: float                  # monotonic s


@dataclass(frozen=True)
class Correction:
    archer: str
    arrow: int                      # 1-based, the archer's arrow of his latest round
    result: str
    target: str | None              # None: the 侯 the shot had
    arrival: float


@dataclass(frozen=True)
class Command:
    name: str                       # go | stop | toggle-hold | resume | panic
    arrival: float


@dataclass(frozen=True)
class Bad:
    why: str                        # one line for the operator and the report
    arrival: float


def _is_text(v) -> bool:
    return isinstance(v, str)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def parse(address: str, args: tuple, arrival: float):
    """The message at ``address`` with ``args`` as a record; :class:`Bad` says what is wrong."""
    def bad(why):
        return Bad(f"{address}: {why}", arrival)

    word = address[len(PREFIX):] if address.startswith(PREFIX) else None
    if word in COMMANDS:
        return Command(COMMANDS[word], arrival)
    if word == "loose":
        if not 1 <= len(args) <= 2 or not _is_text(args[0]) or not args[0].strip():
            return bad("expected archer (string) [time (timeline seconds)]")
        if len(args) == 2 and not _is_number(args[1]):
            return bad(f"time {args[1]!r} is not a finite number of seconds")
        return Loose(args[0].strip(), float(args[1]) if len(args) == 2 else None, arrival)
    if word == "shot":
        n = len(SHOT_FIELDS)
        if not n <= len(args) <= n + 2 or not all(map(_is_text, args[:n])):
            return bad("expected archer rank role target result (strings) [pair (string)] "
                       "[round (int)]")
        fields = dict(zip(SHOT_FIELDS, args[:n]))
        more = args[n:]
        if more and not _is_text(more[0]):
            return bad(f"pair {more[0]!r} is not a string")
        if len(more) == 2 and (not isinstance(more[1], int) or isinstance(more[1], bool)):
            return bad(f"round {more[1]!r} is not an int")
        fields.update(zip(SHOT_OPTIONAL, more))
        return Shot(fields, arrival)
    if word == "correct":
        if (not 3 <= len(args) <= 4 or not _is_text(args[0]) or not isinstance(args[1], int)
                or isinstance(args[1], bool) or not all(map(_is_text, args[2:]))):
            return bad("expected archer (string) arrow (int) result (string) [target (string)]")
        return Correction(args[0].strip(), args[1], args[2], args[3] if len(args) == 4 else None,
                          arrival)
    return bad("unknown address (expected /yuexuan/loose, /yuexuan/shot, /yuexuan/correct, "
               "/yuexuan/go, /yuexuan/stop, /yuexuan/hold, /yuexuan/resume or /yuexuan/panic)")


def host_port(text: str, option: str, need_host: bool = False) -> tuple[str, int]:
    """``[HOST:]PORT`` → (host, port); a mistake is a :class:`UserError` naming ``option``."""
    host, sep, port = text.rpartition(":")
    if need_host and not sep:
        raise UserError(f"expected HOST:PORT, got {text!r}", key=option)
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 < number < 65536:
        raise UserError(f"port must be 1..65535, got {port!r}", key=option)
    return (host or DEFAULT_HOST), number


class _Server(BlockingOSCUDPServer):
    """Stamps each datagram's arrival; reports one that is not OSC instead of dropping it."""

    def __init__(self, address, dispatcher, on_bad):
        self.on_bad = on_bad
        self.arrival = 0.0
        super().__init__(address, dispatcher)

    def verify_request(self, request, client_address) -> bool:
        self.arrival = time.monotonic()
        if super().verify_request(request, client_address):
            return True
        self.on_bad(Bad(f"not an OSC message ({len(request[0])} bytes from "
                        f"{client_address[0]})", self.arrival))
        return False

    def handle_error(self, request, client_address) -> None:
        """socketserver prints a traceback here; a datagram that breaks is reported instead."""
        self.on_bad(Bad(f"a datagram from {client_address[0]} could not be handled "
                        f"({sys.exc_info()[1]!r})", self.arrival))


class _Dispatcher(Dispatcher):
    """Every message to one handler, with the datagram's arrival; a packet that does not parse
    is reported (python-osc's own dispatcher drops it silently)."""

    def __init__(self, deliver):
        super().__init__()
        self.deliver = deliver
        self.server: _Server | None = None

    def call_handlers_for_packet(self, data, client_address):
        arrival = self.server.arrival
        try:
            packet = osc_packet.OscPacket(data)
        except (osc_packet.ParseError, ValueError) as exc:     # ValueError: a string not UTF-8
            self.deliver(Bad(f"OSC packet that does not parse ({exc})", arrival))
            return []
        for timed in packet.messages:
            self.deliver(parse(timed.message.address, tuple(timed.message.params), arrival))
        return []


class OscListener:
    """Listens on ``(host, port)`` and hands each message's record to ``deliver`` (its thread).

    ``rt_priority``: the thread asks for SCHED_FIFO at that priority where allowed (a hit's call
    should not wait behind other processes on a busy machine); :attr:`realtime` says if it got it.
    """

    def __init__(self, host: str, port: int, deliver, rt_priority: int | None = None):
        dispatcher = _Dispatcher(self._safe(deliver))
        try:
            self.server = _Server((host, port), dispatcher, dispatcher.deliver)
        except OSError as exc:
            raise UserError(f"cannot listen for OSC on {host}:{port}: {exc.strerror}",
                            key="--osc") from None
        dispatcher.server = self.server
        self.address = self.server.server_address[:2]
        self._rt_priority = rt_priority
        self.realtime = False
        self._thread = threading.Thread(target=self._serve, daemon=True, name="yuexuan-osc")

    def _serve(self) -> None:
        if self._rt_priority is not None and hasattr(os, "sched_setscheduler"):
            try:                    # pid 0: this thread (Linux)
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self._rt_priority))
                self.realtime = True
            except OSError:
                pass                # not permitted: a normal thread
        self.server.serve_forever(poll_interval=0.05)

    @staticmethod
    def _safe(deliver):
        """A failure in handling one message is reported as that message's, never raised."""
        def safe(record):
            try:
                deliver(record)
            except Exception as exc:          # noqa: BLE001 — the show must go on
                if isinstance(record, Bad):
                    return                    # reporting itself failed: nothing more to do
                deliver(Bad(f"could not handle {type(record).__name__.lower()}: {exc!r}",
                            record.arrival))
        return safe

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()


class Double(float):
    """A float sent as an OSC double (type tag ``d``): timeline seconds to the microsecond (a
    float32 keeps only about 0.1 ms at 1000 s)."""


def _tag(value) -> str:
    if isinstance(value, Double):
        return OscMessageBuilder.ARG_TYPE_DOUBLE
    if isinstance(value, str):
        return OscMessageBuilder.ARG_TYPE_STRING
    if isinstance(value, int):
        return OscMessageBuilder.ARG_TYPE_INT
    return OscMessageBuilder.ARG_TYPE_FLOAT


def message(address: str, args: list):
    """An OSC message with each argument's type tag (``s``, ``i``, ``f``, ``d`` for a Double)."""
    b = OscMessageBuilder(address)
    for a in args:
        b.add_arg(a, _tag(a))
    return b.build()


def verdict_args(row: int, v) -> list:
    """The /yuexuan/verdict arguments: row (int, 1 = first shot), archer, round (int), time
    (timeline s, double), result, target ('' for a miss), released (int 1/0), reason, nearest
    beat (timeline s, double) and offset (ms, float) — both NaN outside round 3. ``v`` is a log
    row (a dict of ``check --format csv`` fields)."""
    def number(x):
        return float("nan") if x is None or x == "" else float(x)
    return [int(row), str(v["archer"]), int(v["round"]), Double(v["time"]), str(v["result"]),
            str(v.get("target") or ""), int(bool(v["released"])), str(v["reason"]),
            Double(number(v.get("nearest_beat"))), number(v.get("offset")) * 1000.0]


class OscOut:
    """``--osc-out HOST:PORT``: the show's notifications; a failed send is counted, never raised."""

    def __init__(self, host: str, port: int):
        try:
            self.client = SimpleUDPClient(host, port)
        except OSError as exc:
            raise UserError(f"cannot send OSC to {host}:{port}: {exc}", key="--osc-out") from None
        self.failed = 0
        self._lock = threading.Lock()       # the scheduler and the OSC thread both send

    def send(self, what: str, args: list) -> None:
        with self._lock:
            try:
                self.client.send(message(OUT_ADDRESSES[what], args))
            except OSError:
                self.failed += 1

    def cue(self, cue) -> None:
        self.send("cue", [cue.id, cue.piece])

    def beat(self, beat) -> None:
        self.send("beat", [beat.cue, beat.pair or "", int(beat.jie), beat.role or ""])

    def verdict(self, row: int, v) -> None:
        self.send("verdict", verdict_args(row, v))

    def tally(self, t: dict, final: bool) -> None:
        self.send("tally", [int(t["round"]), int(t["右"]), int(t["左"]), str(t["announcement"]),
                            int(final)])

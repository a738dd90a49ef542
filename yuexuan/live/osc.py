"""OSC over UDP for the live show: shots and show control in, notifications out (docs/play.md).

In (:class:`OscListener`, python-osc's :class:`~pythonosc.osc_server.BlockingOSCUDPServer` on
its own thread, so messages are handled one at a time in arrival order):

  /yuexuan/loose  archer [time]                     an arrow leaves the string
  /yuexuan/shot   archer rank role target result [pair] [round]   it has landed
  /yuexuan/correct archer arrow result [target]     a scorer corrects a shot (e.g. a sensor's)
  /yuexuan/go | /yuexuan/stop | /yuexuan/hold | /yuexuan/resume | /yuexuan/panic

Each datagram is stamped with its arrival on the monotonic clock before it is parsed, in the
server's ``verify_request``, which then refuses (as a :class:`Bad`) one that
:func:`datagram_fault` finds wrong. python-osc's dispatcher routes each message: one parser and
one handler an address (:data:`ROUTES`, mapped with ``Dispatcher.map``; an unknown address goes to
the default handler), the parser turning its arguments into a :class:`Loose`, :class:`Shot`,
:class:`Correction`, :class:`Command` or :class:`Bad` (a wrong address or argument, said in one
line): nothing a sender does raises. Out (:class:`OscOut`, python-osc's
:class:`~pythonosc.udp_client.SimpleUDPClient`): /yuexuan/cue, /yuexuan/beat, /yuexuan/verdict,
/yuexuan/tally, /yuexuan/unlogged (:data:`OUT_ADDRESSES`). Who may send, how fast, and the
receive buffer: :mod:`yuexuan.live.gate`.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from pythonosc import osc_packet
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_bundle import OscBundle
from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.osc_server import BlockingOSCUDPServer
from pythonosc.udp_client import SimpleUDPClient

from yuexuan.errors import UserError
from yuexuan.live import gate as gate_mod

if TYPE_CHECKING:
    from yuexuan.timeline import Beat, Cue

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
    "unlogged": "/yuexuan/unlogged",  # archer round time result why — instead of a verdict
}
DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True)
class Loose:
    archer: str
    time_s: float | None            # timeline seconds when the sender gave them, else None
    arrival: float                  # monotonic s


@dataclass(frozen=True)
class Shot:
    fields: dict[str, str | int | None]     # archer rank role target result [pair] [round] as sent
                                            # (a hit sensor's: None where its stroke has none)
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
    source: str = ""                # "HOST:PORT" it came from (shown on the operator's screen)


@dataclass(frozen=True)
class Bad:
    why: str                        # one line for the operator and the report
    arrival: float


Record: TypeAlias = "Loose | Shot | Correction | Command | Bad"    # what the listener delivers
Parser: TypeAlias = "Callable[[str, tuple[Any, ...], float], Record]"


class Receiver(Protocol):
    """Where :class:`OscListener` hands each record: one handler a kind of record (the live
    judging's hub, :class:`yuexuan.live.judging.Hub`)."""

    def on_loose(self, record: Loose) -> object: ...
    def on_shot(self, record: Shot) -> object: ...
    def on_correction(self, record: Correction) -> object: ...
    def on_command(self, record: Command) -> object: ...
    def on_bad(self, record: Bad) -> object: ...


def _is_text(v: object) -> bool:
    return isinstance(v, str)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _loose(address: str, args: tuple[Any, ...], arrival: float) -> Loose | Bad:
    """/yuexuan/loose archer [time]."""
    if not 1 <= len(args) <= 2 or not _is_text(args[0]) or not args[0].strip():
        return Bad(f"{address}: expected archer (string) [time (timeline seconds)]", arrival)
    if len(args) == 2 and not _is_number(args[1]):
        return Bad(f"{address}: time {args[1]!r} is not a finite number of seconds", arrival)
    return Loose(args[0].strip(), float(args[1]) if len(args) == 2 else None, arrival)


def _shot(address: str, args: tuple[Any, ...], arrival: float) -> Shot | Bad:
    """/yuexuan/shot archer rank role target result [pair] [round]."""
    n = len(SHOT_FIELDS)
    if not n <= len(args) <= n + 2 or not all(map(_is_text, args[:n])):
        return Bad(f"{address}: expected archer rank role target result (strings) "
                   "[pair (string)] [round (int)]", arrival)
    more = args[n:]
    if more and not _is_text(more[0]):
        return Bad(f"{address}: pair {more[0]!r} is not a string", arrival)
    if len(more) == 2 and (not isinstance(more[1], int) or isinstance(more[1], bool)):
        return Bad(f"{address}: round {more[1]!r} is not an int", arrival)
    return Shot({**dict(zip(SHOT_FIELDS, args[:n])), **dict(zip(SHOT_OPTIONAL, more))}, arrival)


def _correct(address: str, args: tuple[Any, ...], arrival: float) -> Correction | Bad:
    """/yuexuan/correct archer arrow result [target]."""
    if (not 3 <= len(args) <= 4 or not _is_text(args[0]) or not isinstance(args[1], int)
            or isinstance(args[1], bool) or not all(map(_is_text, args[2:]))):
        return Bad(f"{address}: expected archer (string) arrow (int) result (string) "
                   "[target (string)]", arrival)
    return Correction(args[0].strip(), args[1], args[2], args[3] if len(args) == 4 else None,
                      arrival)


def _command(name: str) -> Parser:
    """The parser of a control address: its arguments are ignored."""
    def command(address: str, args: tuple[Any, ...], arrival: float) -> Command:
        return Command(name, arrival)
    return command


def _unknown(address: str, args: tuple[Any, ...], arrival: float) -> Bad:
    *most, last = MESSAGES
    return Bad(f"{address}: unknown address (expected {', '.join(most)} or {last})", arrival)


Handler: TypeAlias = "Callable[[Receiver], Callable[[Any], object]]"   # a receiver's method
_COMMAND_PARSERS = {PREFIX + word: _command(name) for word, name in COMMANDS.items()}
ROUTES: dict[str, tuple[Parser, Handler]] = {
    PREFIX + "loose": (_loose, lambda r: r.on_loose),
    PREFIX + "shot": (_shot, lambda r: r.on_shot),
    PREFIX + "correct": (_correct, lambda r: r.on_correction),
    **{address: (parser, lambda r: r.on_command) for address, parser in _COMMAND_PARSERS.items()}}
"""Each address in → its parser, ``(address, args, arrival) → record``, and the one handler of
the :class:`Receiver` its record goes to (a :class:`Bad` goes to ``on_bad``):
:class:`OscListener` maps each on python-osc's dispatcher, and :func:`_unknown` is its default
handler."""
MESSAGES: dict[str, Parser] = {address: parser for address, (parser, _) in ROUTES.items()}


def parse(address: str, args: tuple[Any, ...], arrival: float) -> Record:
    """The message at ``address`` with ``args`` as a record, as the listener makes it (without a
    socket: the same parsers); :class:`Bad` says what is wrong."""
    return MESSAGES.get(address, _unknown)(address, args, arrival)


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


PATTERN_CHARS = frozenset("*?[]{}")   # OSC address-pattern syntax (OSC 1.0, "Address Patterns")


def datagram_fault(data: bytes, source: tuple[str, int]) -> str | None:
    """Why the datagram ``data`` from ``source`` (host, port) is not to be dispatched, or None.

    It must be OSC, parse, and name literal addresses: python-osc's dispatcher would drop a packet
    that does not parse without a word, and would hand ``/yuexuan/*`` to every handler (go, stop
    and panic at once). A datagram's further checks (its source, its rate, its type tags) belong
    here, before any message of it is handled. Parsing here and again in the dispatcher costs
    about 15 µs a /yuexuan/shot on the 2-core VM (23–28 µs verify and dispatch, 10 µs before), a
    hundredth of a hit's 1.2–1.4 ms to its call.
    """
    if not (OscBundle.dgram_is_bundle(data) or OscMessage.dgram_is_message(data)):
        return f"not an OSC message ({len(data)} bytes from {source[0]})"
    try:
        messages = [timed.message for timed in osc_packet.OscPacket(data).messages]
    except (osc_packet.ParseError, ValueError) as exc:     # ValueError: a string not UTF-8
        return f"OSC packet that does not parse ({exc})"
    for m in messages:
        if PATTERN_CHARS.intersection(m.address):
            return (f"{m.address}: unknown address (an address pattern; the show's addresses are "
                    "literal, and no message of its datagram is used)")
        tags = gate_mod.type_tag_fault(m.dgram)
        if tags is not None:
            return f"{m.address}: {tags} (no message of its datagram is used)"
    return None


class _Server(BlockingOSCUDPServer):
    """python-osc's server, whose ``verify_request`` stamps each datagram's arrival, lets the
    gate refuse it unparsed (:meth:`yuexuan.live.gate.Gate.admit`: its source, its rate) and
    reports one that :func:`datagram_fault` refuses; every message of a datagram it lets through
    has that arrival and source (one thread: datagrams are handled one at a time)."""

    def __init__(self, address: tuple[str, int], dispatcher: Dispatcher,
                 on_bad: Callable[[Bad], None], gate: gate_mod.Gate):
        self.on_bad, self.gate = on_bad, gate
        self.arrival = 0.0              # monotonic s of the datagram being handled
        self.source: tuple[str, int] = ("", 0)      # its sender
        super().__init__(address, dispatcher)

    def verify_request(self, request: tuple[bytes, socket.socket],  # type: ignore[override]  # UDP
                       client_address: tuple[str, int]) -> bool:
        self.arrival = time.monotonic()     # first, before anything is parsed
        self.source = client_address[:2]
        if not self.gate.admit(self.source, self.arrival):
            return False
        why = datagram_fault(request[0], client_address)
        if why is not None:
            self.on_bad(Bad(why, self.arrival))
        return why is None

    def handle_error(self, request: Any, client_address: Any) -> None:
        """socketserver prints a traceback here; a datagram that breaks is reported instead."""
        self.on_bad(Bad(f"a datagram from {client_address[0]} could not be handled "
                        f"({sys.exc_info()[1]!r})", self.arrival))


class OscListener:
    """Listens on ``(host, port)`` and hands each message's record to the one handler of
    ``receiver`` its address maps to (:data:`ROUTES`), on the listener's thread.

    ``receiver`` may come later, with :meth:`start` (the port is bound first, so that its mistakes
    come before the show opens). ``rt_priority``: the thread asks for SCHED_FIFO at that priority
    where allowed (a hit's call should not wait behind other processes on a busy machine);
    :attr:`realtime` says if it got it. ``gate``: who may send, and how fast
    (:class:`yuexuan.live.gate.Gate`; by default anyone, rate-limited). The socket asks for a
    :data:`~yuexuan.live.gate.RCVBUF_BYTES` receive buffer: :attr:`rcvbuf_bytes` is what it got,
    :attr:`rcvbuf_hint` how to get more.
    """

    def __init__(self, host: str, port: int, receiver: Receiver | None = None,
                 rt_priority: int | None = None, gate: gate_mod.Gate | None = None):
        self.receiver = receiver
        self.gate = gate if gate is not None else gate_mod.Gate()
        # strict_timing=False: a bundle's future timetag is not slept on (that would stall the
        # one thread); its messages are handled on arrival, as a single message is
        dispatcher = Dispatcher(strict_timing=False)
        for address, (parser, handler) in ROUTES.items():
            dispatcher.map(address, self._handler(parser, handler))
        dispatcher.set_default_handler(self._handler(_unknown, lambda r: r.on_bad))
        try:
            self.server = _Server((host, port), dispatcher, self._bad, self.gate)
        except OSError as exc:
            raise UserError(f"cannot listen for OSC on {host}:{port}: {exc.strerror}",
                            key="--osc") from None
        host_bound, port_bound = self.server.server_address[:2]
        self.address: tuple[str, int] = (str(host_bound), int(port_bound))
        self.rcvbuf_bytes, self.rcvbuf_hint = gate_mod.request_rcvbuf(self.server.socket)
        self.drops = gate_mod.DropWatch(self.server.socket)
        self._rt_priority = rt_priority
        self.realtime = False
        self._thread = threading.Thread(target=self._serve, daemon=True, name="yuexuan-osc")

    def _handler(self, parser: Parser, handler: Handler) -> Callable[..., None]:
        """python-osc's handler for one address: the record, with its datagram's arrival, to the
        receiver's ``handler`` (a :class:`Bad` to its ``on_bad``; returns None: nothing is sent
        back); a control message (a command, a correction) from outside the gate's control list
        is only counted."""
        control = parser is _correct or parser in _COMMAND_PARSERS.values()

        def handle(address: str, *args: Any) -> None:
            server = self.server
            if control and not self.gate.control_ok(address, server.source):
                return
            record = parser(address, args, server.arrival)
            if isinstance(record, Bad):
                self._bad(record)
                return
            if isinstance(record, Command):
                record = Command(record.name, record.arrival, f"{server.source[0]}:{server.source[1]}")
            if self.receiver is None:
                return
            try:
                handler(self.receiver)(record)
            except Exception as exc:          # any: the show must go on
                self._bad(Bad(f"could not handle {type(record).__name__.lower()}: {exc!r}",
                              record.arrival))
        return handle

    def _bad(self, record: Bad) -> None:
        """A message that could not be used, to the receiver (a failure there is swallowed:
        reporting itself failed, nothing more to do)."""
        if self.receiver is not None:
            with contextlib.suppress(Exception):
                self.receiver.on_bad(record)

    def _serve(self) -> None:
        if self._rt_priority is not None and hasattr(os, "sched_setscheduler"):
            try:                    # pid 0: this thread (Linux)
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self._rt_priority))
                self.realtime = True
            except OSError:
                pass                # not permitted: a normal thread
        self.server.serve_forever(poll_interval=0.05)

    def start(self, receiver: Receiver | None = None) -> None:
        """Handle datagrams from now on, handing their records to ``receiver`` (if given)."""
        if receiver is not None:
            self.receiver = receiver
        self._thread.start()

    def stop(self) -> None:
        """Handle no more datagrams (the port stays bound until :meth:`close`)."""
        if self._thread.is_alive():
            self.server.shutdown()

    def close(self) -> None:
        self.stop()
        self.server.server_close()


class Double(float):
    """A float sent as an OSC double (type tag ``d``): timeline seconds to the microsecond (a
    float32 keeps only about 0.1 ms at 1000 s)."""


def _tag(value: object) -> str:
    if isinstance(value, Double):
        return OscMessageBuilder.ARG_TYPE_DOUBLE
    if isinstance(value, str):
        return OscMessageBuilder.ARG_TYPE_STRING
    if isinstance(value, int):
        return OscMessageBuilder.ARG_TYPE_INT
    return OscMessageBuilder.ARG_TYPE_FLOAT


def message(address: str, args: list[Any]) -> OscMessage:
    """An OSC message with each argument's type tag (``s``, ``i``, ``f``, ``d`` for a Double)."""
    b = OscMessageBuilder(address)
    for a in args:
        b.add_arg(a, _tag(a))
    return b.build()


def verdict_args(row: int, v: Mapping[str, Any]) -> list[Any]:
    """The /yuexuan/verdict arguments: row (int, 1 = first shot), archer, round (int), time
    (timeline s, double), result, target ('' for a miss), released (int 1/0), reason, nearest
    beat (timeline s, double) and offset (ms, float) — both NaN outside round 3. ``v`` is a log
    row (a dict of ``check --format csv`` fields)."""
    def number(x: Any) -> float:
        return float("nan") if x is None or x == "" else float(x)
    return [int(row), str(v["archer"]), int(v["round"]), Double(v["time"]), str(v["result"]),
            str(v.get("target") or ""), int(bool(v["released"])), str(v["reason"]),
            Double(number(v.get("nearest_beat"))), number(v.get("offset")) * 1000.0]


class OscOut:
    """``--osc-out HOST:PORT``: the show's notifications; a failed send is counted, never raised."""

    def __init__(self, host: str, port: int) -> None:
        try:
            self.client = SimpleUDPClient(host, port)
        except OSError as exc:
            raise UserError(f"cannot send OSC to {host}:{port}: {exc}", key="--osc-out") from None
        self.failed = 0
        self._lock = threading.Lock()       # the scheduler and the OSC thread both send

    def send(self, what: str, args: list[Any]) -> None:
        with self._lock:
            try:
                self.client.send(message(OUT_ADDRESSES[what], args))
            except OSError:
                self.failed += 1

    def cue(self, cue: Cue) -> None:
        self.send("cue", [cue.id, cue.piece])

    def beat(self, beat: Beat) -> None:
        self.send("beat", [beat.cue, beat.pair or "", int(beat.jie), beat.role or ""])

    def verdict(self, row: int, v: Mapping[str, Any]) -> None:
        self.send("verdict", verdict_args(row, v))

    def unlogged(self, v: Mapping[str, Any], why: str) -> None:
        """A shot (or correction) the log could not take: no verdict; report it again."""
        self.send("unlogged", [str(v["archer"]), int(v["round"]), Double(v["time"]),
                               str(v["result"]), why])

    def tally(self, t: Mapping[str, Any], final: bool) -> None:
        self.send("tally", [int(t["round"]), int(t["右"]), int(t["左"]), str(t["announcement"]),
                            int(final)])

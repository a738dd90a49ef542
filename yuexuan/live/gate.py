"""The OSC listener's gate: who may send, how fast, and what the kernel dropped (docs/play.md,
"Network safety").

Every datagram passes :meth:`Gate.admit` before anything of it is parsed: a source outside
``--osc-allow`` is refused, a source over its rate (:data:`RATE_PER_S`, a token bucket each
source address) is dropped; both are only counted, so a flood costs a dictionary look-up a
datagram. Control messages (go, stop, hold, resume, panic, correct) must come from
``--osc-control-allow`` as well (:meth:`Gate.control_ok`). The receive buffer asked for is
:data:`RCVBUF_BYTES`; what the kernel dropped when it was full is read from ``/proc/net/udp``
(the socket's ``drops`` column, found by its inode), since python's ``recvfrom`` (socketserver's)
gives no ``SO_RXQ_OVFL`` ancillary data. Counts are written by the listener's one thread and
read by others (a Python int read is whole).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from collections.abc import Iterable

from yuexuan.errors import UserError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

RCVBUF_BYTES = 4 * 1024 * 1024      # asked for: ~5,000 datagrams of a scorer's burst at 800 B
RATE_PER_S = 200.0                  # a source's sustained datagrams a second (a tablet sends ~2)
BURST = 200.0                       # … and the most at once (a bundle's worth of resends)
MAX_SOURCES = 4096                  # rate buckets kept; beyond, the idle ones are forgotten
PROC_UDP = ("/proc/net/udp", "/proc/net/udp6")

# OSC 1.0 type tags python-osc reads (OscMessage._parse_datagram): any other is unknown
KNOWN_TAGS = frozenset("ihfdsbrmtTFN[]")


def networks(text: str | None, option: str) -> tuple[Network, ...]:
    """``CIDR[,CIDR…]`` (an address alone is its /32 or /128) → networks; a mistake is one
    :class:`UserError` naming ``option``."""
    if text is None:
        return ()
    found = []
    for part in text.split(","):
        try:
            found.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:
            raise UserError(f"expected CIDR[,CIDR…] such as 192.168.1.0/24, got {part.strip()!r}",
                            key=option) from None
    return tuple(found)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is this machine's loopback only."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def check_bind(host: str, allow: tuple[Network, ...]) -> None:
    """Listening beyond loopback needs ``--osc-allow``: anyone on the venue's network could
    otherwise GO, PANIC or score."""
    if not allow and not is_loopback(host):
        raise UserError(f"listening on {host} (not loopback) needs --osc-allow CIDR naming who "
                        "may send (e.g. the scorers' tablets' 192.168.1.0/24)", key="--osc")


def _contains(nets: tuple[Network, ...], host: str) -> bool:
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == n.version and ip in n for n in nets)


def type_tag_fault(dgram: bytes) -> str | None:
    """Why one OSC message's datagram has no proper type tag string, or None: it must have one
    (``,`` and a known tag a character); python-osc would take a message without as having no
    arguments, and skip an unknown tag."""
    end = dgram.find(b"\0")
    if end < 0:
        return "no end to its address"
    tags_at = (end // 4 + 1) * 4
    if tags_at >= len(dgram):
        return "no type tag string (OSC 1.0: ',' and one tag an argument)"
    stop = dgram.find(b"\0", tags_at)
    tags = dgram[tags_at:stop if stop >= 0 else len(dgram)]
    if not tags.startswith(b","):
        return "a type tag string not starting with ','"
    unknown = sorted(set(tags[1:].decode("latin-1")) - KNOWN_TAGS)
    if unknown:
        return f"unknown type tag {''.join(unknown)!r} (known: {''.join(sorted(KNOWN_TAGS))})"
    return None


class Gate:
    """The allow-lists and the per-source rate limit, with their counts."""

    def __init__(self, allow: Iterable[Network] = (), control_allow: Iterable[Network] = (),
                 rate_per_s: float = RATE_PER_S, burst: float = BURST) -> None:
        self.allow = tuple(allow)
        self.control_allow = tuple(control_allow)
        self.rate_per_s, self.burst = rate_per_s, burst
        self._buckets: dict[str, tuple[float, float]] = {}  # source → (tokens, at monotonic s)
        self.refused = 0                  # datagrams from outside --osc-allow
        self.control_refused = 0          # control messages from outside --osc-control-allow
        self.rate_limited = 0             # datagrams over their source's rate
        self.last_refused: str | None = None         # the latest refused source, "HOST:PORT"
        self.last_limited: str | None = None         # the latest rate-limited source
        self.last_control_refused: str | None = None  # "/yuexuan/panic from HOST:PORT"

    def admit(self, source: tuple[str, int], now: float) -> bool:
        """Whether a datagram from ``source`` (host, port) arriving at ``now`` (monotonic s)
        is to be parsed; one that is not is counted."""
        host = source[0]
        if self.allow and not _contains(self.allow, host):
            self.refused += 1
            self.last_refused = f"{host}:{source[1]}"
            return False
        tokens, at = self._buckets.get(host, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate_per_s)
        if tokens < 1.0:
            self.rate_limited += 1
            self.last_limited = f"{host}:{source[1]}"
            self._buckets[host] = (tokens, now)
            return False
        if len(self._buckets) >= MAX_SOURCES and host not in self._buckets:
            self._forget(now)
        self._buckets[host] = (tokens - 1.0, now)
        return True

    def _forget(self, now: float) -> None:
        """Drop the buckets that have refilled (their sources idle): memory stays bounded."""
        full_after_s = self.burst / self.rate_per_s
        self._buckets = {h: b for h, b in self._buckets.items() if now - b[1] < full_after_s}
        if len(self._buckets) >= MAX_SOURCES:
            self._buckets.clear()

    def control_ok(self, address: str, source: tuple[str, int]) -> bool:
        """Whether a control message to ``address`` from ``source`` may act (counted if not)."""
        if not self.control_allow or _contains(self.control_allow, source[0]):
            return True
        self.control_refused += 1
        self.last_control_refused = f"{address} from {source[0]}:{source[1]}"
        return False


def request_rcvbuf(sock: socket.socket, want: int = RCVBUF_BYTES,
                   force: bool = True) -> tuple[int, str | None]:
    """Ask for a ``want``-byte receive buffer (with ``force``, SO_RCVBUFFORCE first: allowed to
    root, it passes the ``net.core.rmem_max`` cap); the size granted (Linux reports twice what
    is usable: the kernel's bookkeeping, socket(7)) and, when less than asked, how to raise it."""
    first = getattr(socket, "SO_RCVBUFFORCE", None) if force else None
    for option in (first, socket.SO_RCVBUF):
        if option is None:
            continue
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, want)
            break
        except OSError:
            continue
    granted = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    if granted >= want:
        return granted, None
    return granted, (f"receive buffer {granted // 1024} kB, not the {want // 1024} kB asked for: "
                     f"sysctl -w net.core.rmem_max={want} raises the cap")


def kernel_drops(sock: socket.socket) -> int | None:
    """The datagrams the kernel dropped for ``sock`` (its receive buffer full), from
    ``/proc/net/udp`` and ``udp6`` (the socket's line by inode, its last column); None where
    there is no such file."""
    try:
        inode = str(os.fstat(sock.fileno()).st_ino)
    except OSError:
        return None
    found = None
    for path in PROC_UDP:
        try:
            with open(path, encoding="ascii") as f:
                next(f, None)                                # the header
                for line in f:
                    cols = line.split()
                    if len(cols) >= 13 and cols[9] == inode:
                        return int(cols[-1])
            found = 0
        except OSError:
            continue
    return found


class DropWatch:
    """Reads :func:`kernel_drops` at most every ``period_s`` (the screen's refresh asks often):
    the latest count, as of :attr:`at`."""

    def __init__(self, sock: socket.socket, period_s: float = 0.2) -> None:
        self.sock, self.period_s = sock, period_s
        self.dropped = 0
        self.at = float("-inf")
        self._lock = threading.Lock()

    def read(self, now: float) -> int:
        with self._lock:
            if now - self.at >= self.period_s:
                self.at = now
                n = kernel_drops(self.sock)
                if n is not None:
                    self.dropped = max(self.dropped, n)
            return self.dropped

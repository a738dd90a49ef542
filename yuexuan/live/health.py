"""The health of live judging's input and log, as one snapshot the operator's screen reads.

:class:`InputHealth` is what :meth:`yuexuan.live.judging.Hub.health` returns (and the report's
``judging.health``): every count of what was refused, dropped or not judged, the OSC listener's
address and receive buffer, and the shot log's state. The screen shows it as it likes
(:func:`health_lines` is a plain default: two lines, each count named); every field is a plain
value, so the snapshot can be compared, printed or put in JSON (:func:`dataclasses.asdict`).
A count only grows during a show.
"""

from __future__ import annotations

from dataclasses import dataclass

LOG_OK = "ok"                   # InputHealth.log_state: every row written and fsynced
LOG_NONE = "none"               # no --shots-log
LOG_FAILING = "FAILING"         # the last write failed (cut back; /yuexuan/unlogged sent)


@dataclass(frozen=True)
class InputHealth:
    """A snapshot of live judging's input (OSC, hit sensor) and of its shot log."""

    listening: str | None = None        # the OSC address bound, "HOST:PORT" (None: no --osc)
    allow: tuple[str, ...] = ()         # --osc-allow networks (empty: any sender, loopback only)
    control_allow: tuple[str, ...] = ()  # --osc-control-allow networks (empty: as allow)
    rcvbuf_bytes: int | None = None     # the receive buffer the kernel granted (SO_RCVBUF)
    rcvbuf_hint: str | None = None      # how to get the 4 MB asked for, when granted less
    refused: int = 0                    # datagrams from a source not in --osc-allow (osc_refused)
    control_refused: int = 0            # control messages from outside --osc-control-allow
    kernel_dropped: int = 0             # datagrams the kernel dropped, receive buffer full
    rate_limited: int = 0               # datagrams over a source's rate (dropped unparsed)
    bad: int = 0                        # bad messages (not OSC, bad type tags, wrong args …)
    duplicates: int = 0                 # shots identical to one received just before: not judged
    looses_replaced: int = 0            # a pending loose replaced by the archer's newer one
    looses_refused: int = 0             # looses too old, too far ahead, outside the ceremony
    looses_expired: int = 0             # pending looses too old when the archer's shot came
    last_control: str | None = None     # the latest remote command and its source
    last_refused: str | None = None     # the latest source refused, "HOST:PORT"
    last_limited: str | None = None     # the latest source rate-limited
    last_control_refused: str | None = None  # "/yuexuan/panic from HOST:PORT"
    log_state: str = LOG_NONE           # LOG_OK | LOG_FAILING | LOG_NONE
    logged: int = 0                     # rows written and fsynced this run
    unlogged: int = 0                   # shots not logged: /yuexuan/unlogged, no verdict
    log_reserve_bytes: int | None = None  # the reserve still held for the log (None: none)

    @property
    def lost(self) -> int:
        """Messages that may have been real and were not judged: dropped by the kernel or by
        the rate limit (refused, bad and duplicate messages were read and said)."""
        return self.kernel_dropped + self.rate_limited


def health_lines(h: InputHealth) -> list[str]:
    """The snapshot as two short lines for a screen or a log: the input, then the shot log."""
    where = f"osc {h.listening}" if h.listening else "osc off"
    if h.allow:
        where += f" allow {','.join(h.allow)}"
    buf = "" if h.rcvbuf_bytes is None else f" buf {h.rcvbuf_bytes // 1024} kB"
    counts = (f"refused {h.refused + h.control_refused}  dropped {h.kernel_dropped}  "
              f"rate-limited {h.rate_limited}  bad {h.bad}  dup {h.duplicates}  "
              f"looses replaced {h.looses_replaced} refused {h.looses_refused + h.looses_expired}")
    log = f"log {h.log_state}"
    if h.log_state != LOG_NONE:
        log += f"  {h.logged} rows" + (f"  NOT LOGGED {h.unlogged}" if h.unlogged else "")
        if h.log_reserve_bytes is not None:
            log += f"  reserve {h.log_reserve_bytes // 1024} kB"
    if h.last_control:
        log += f"  last remote: {h.last_control}"
    return [f"{where}{buf}  {counts}", log]


def news(before: InputHealth, now: InputHealth) -> list[str]:
    """A notice for each count of the OSC listener that grew from ``before`` to ``now``
    (refused, control refused, rate-limited, dropped by the kernel)."""
    out = []
    if now.refused > before.refused:
        out.append(f"REFUSED {now.refused - before.refused} datagram(s), the latest from "
                   f"{now.last_refused} (not in --osc-allow); {now.refused} in all")
    if now.control_refused > before.control_refused:
        out.append(f"REFUSED {now.last_control_refused} (not in --osc-control-allow); "
                   f"{now.control_refused} control message(s) in all")
    if now.rate_limited > before.rate_limited:
        out.append(f"RATE-LIMITED {now.rate_limited - before.rate_limited} datagram(s), the "
                   f"latest from {now.last_limited}; {now.rate_limited} in all")
    if now.kernel_dropped > before.kernel_dropped:
        out.append(f"DROPPED by the kernel: {now.kernel_dropped - before.kernel_dropped} "
                   f"datagram(s), receive buffer full; {now.kernel_dropped} in all — a shot may "
                   "be lost: ask the scorers to resend")
    return out

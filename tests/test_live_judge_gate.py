"""Live judging's safety in process (issue 22, items 1-3): who may send (real UDP on loopback,
a foreign source bound to 127.0.0.2), the rate limit, type tags, the kernel's drops, bounded
memory under a flood, duplicates, and the log's cut-back, reserve and /yuexuan/unlogged (on a
64 kB tmpfs mounted here when the test runs as root). Over JACK: test_live_judge_jack.py."""

from __future__ import annotations

import os
import socket
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from osc_support import ToOne, bound_sender, fill, tiny_tmpfs
from pythonosc.osc_message_builder import build_msg
from test_live_judge import _hub

from yuexuan.errors import UserError
from yuexuan.live import gate as gate_mod
from yuexuan.live import osc
from yuexuan.live.health import LOG_FAILING, InputHealth, news
from yuexuan.scoring import logwrite
from yuexuan.scoring.shots import read_shots

T = 1.0
SHOT = {"archer": "上耦上射", "rank": "士", "role": "上射", "target": "干", "result": "贯",
        "pair": "上耦", "round": 3}


def test_only_the_allowed_may_send_and_only_the_control_list_may_command():
    got, done = [], threading.Event()

    def deliver(record):
        got.append(record)
        if isinstance(record, osc.Loose) and record.archer == "end":
            done.set()

    g = gate_mod.Gate(gate_mod.networks("127.0.0.1/32", "--osc-allow"),
                      gate_mod.networks("127.0.0.3", "--osc-control-allow"))
    listener = osc.OscListener("127.0.0.1", 0, ToOne(deliver), gate=g)
    listener.start()
    foreign, local = bound_sender("127.0.0.2"), bound_sender("127.0.0.1")
    try:
        to = listener.address
        foreign.sendto(build_msg("/yuexuan/panic", []).dgram, to)
        foreign.sendto(build_msg("/yuexuan/shot", list(SHOT.values())).dgram, to)
        local.sendto(build_msg("/yuexuan/go", []).dgram, to)           # not a controller
        local.sendto(build_msg("/yuexuan/loose", ["宾"]).dgram, to)
        local.sendto(b"/yuexuan/loose\0\0,sX\0\xe5\xae\xbe\0", to)       # an unknown type tag
        local.sendto(b"/yuexuan/go\0", to)                            # no type tags at all
        local.sendto(build_msg("/yuexuan/loose", ["end"]).dgram, to)
        assert done.wait(5)
    finally:
        listener.close()
        foreign.close()
        local.close()
    assert [type(r).__name__ for r in got] == ["Loose", "Bad", "Bad", "Loose"], got
    assert "unknown type tag 'X'" in got[1].why and "no type tag string" in got[2].why
    assert (g.refused, g.control_refused, g.last_refused.split(":")[0]) == (2, 1, "127.0.0.2")
    assert g.last_control_refused.startswith("/yuexuan/go from 127.0.0.1:")
    assert listener.rcvbuf_bytes > 0


def test_the_rate_limit_and_the_bind_rule():
    g = gate_mod.Gate(rate_per_s=200.0, burst=200.0)
    admitted = sum(g.admit(("127.0.0.2", 9), 10.0) for _ in range(1000))
    assert (admitted, g.rate_limited) == (200, 800)
    assert g.admit(("127.0.0.1", 9), 10.0)                 # another source: its own budget
    assert sum(g.admit(("127.0.0.2", 9), 10.5) for _ in range(1000)) == 100   # 0.5 s: 100 more
    with pytest.raises(UserError, match="needs --osc-allow"):
        gate_mod.check_bind("0.0.0.0", ())
    gate_mod.check_bind("0.0.0.0", gate_mod.networks("10.0.0.0/8", "--osc-allow"))
    gate_mod.check_bind("127.0.0.1", ())
    with pytest.raises(UserError, match="CIDR"):
        gate_mod.networks("10.0.0.0/33", "--osc-allow")


def test_kernel_drops_are_read_and_a_small_buffer_says_the_sysctl():
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)     # the kernel's least
    rx.bind(("127.0.0.1", 0))
    tx = bound_sender("127.0.0.1")
    try:
        assert gate_mod.kernel_drops(rx) == 0
        for _ in range(300):                        # bounded; nobody reads: most are dropped
            tx.sendto(b"x" * 200, rx.getsockname())
        watch = gate_mod.DropWatch(rx)
        dropped = watch.read(time.monotonic())
        assert dropped > 200, dropped
        granted, hint = gate_mod.request_rcvbuf(rx, force=False)
        rmem_max = int(Path("/proc/sys/net/core/rmem_max").read_text())
        if rmem_max < gate_mod.RCVBUF_BYTES:
            assert granted < gate_mod.RCVBUF_BYTES and "net.core.rmem_max" in hint
    finally:
        rx.close()
        tx.close()
    assert news(InputHealth(), InputHealth(kernel_dropped=dropped))[0].startswith(
        f"DROPPED by the kernel: {dropped} datagram(s)")


def test_a_flood_of_bad_messages_keeps_memory_bounded(tmp_path, ceremony, lishou):
    hub, _, _ = _hub(tmp_path, ceremony, lishou, [])
    n = 10_000
    tracemalloc.start()
    try:
        for k in range(200):                        # warm: the bounded stores fill up first
            hub.report_bad(f"/yuexuan/x{k}: unknown address (expected …)", T)
        before = tracemalloc.get_traced_memory()[0]
        t0 = time.monotonic()
        for k in range(n):
            hub.report_bad(f"/yuexuan/x{k}: unknown address (expected …)", T)
        grown = tracemalloc.get_traced_memory()[0] - before
        took_s = time.monotonic() - t0
    finally:
        tracemalloc.stop()
    assert grown < 5e6 * n / 100_000, grown            # < 5 MB per 100,000 bad messages
    h = hub.health()
    assert h.bad == n + 200 and len(hub.summary()["bad_messages"]) == 100
    hub.poll(time.monotonic() + 2)                     # the throttled rest summed up in lines
    assert sum("bad message:" in line for line in hub.said) <= 10 * (1 + took_s) + 10
    assert any("more bad messages" in line for line in hub.said)
    assert hub.screen() == []                          # no verdict pushed off by bad input


def test_a_duplicate_shot_is_not_judged_and_a_stray_loose_is_replaced(tmp_path, ceremony, lishou):
    order = []
    hub, show, out = _hub(tmp_path, ceremony, lishou, order)
    now_s = ceremony.cue("lishou").start + show.timeline_s(T)    # the show's now, ceremony s
    hub.on_loose(osc.Loose("上耦上射", now_s - 2.5, T))      # a stray loose, 2.5 s before
    hub.on_loose(osc.Loose("上耦上射", None, T))            # the arrow's own: replaces it
    hub.on_shot(osc.Shot(SHOT, T + 0.1))
    hub.on_shot(osc.Shot(SHOT, T + 0.3))                  # the same datagram again
    hub.on_loose(osc.Loose("上耦下射", 1e9, T))             # outside the ceremony
    assert [v["reason"] for _, v in out.sent] == ["释"] and len(read_shots(tmp_path / "shots.csv")) == 1
    h = hub.health()
    assert (h.duplicates, h.looses_replaced, h.looses_refused) == (1, 1, 1)
    assert any("DUPLICATE" in n for n in hub.notices())
    assert any("REFUSED loose of 上耦下射" in n for n in hub.notices())


def test_an_unlogged_shot_gets_no_verdict_and_is_taken_back(tmp_path, ceremony, lishou):
    order = []
    hub, _, out = _hub(tmp_path, ceremony, lishou, order)
    unlogged = []
    out.unlogged = lambda row, why: unlogged.append((row["archer"], why))
    hub.on_shot(osc.Shot(SHOT, T))
    hub.log.write = lambda row: (_ for _ in ()).throw(OSError(28, "No space left on device"))
    hub.on_shot(osc.Shot({**SHOT, "archer": "上耦下射", "role": "下射"}, T))
    assert [n for n, _ in out.sent] == [1] and unlogged == [("上耦下射", "No space left on device")]
    assert len(hub.judge) == 1 and hub.health().log_state == LOG_FAILING
    assert hub.screen()[1].startswith("NOT LOGGED shot of 上耦下射")
    del hub.log.write                                     # space again: the shot is resent
    hub.on_shot(osc.Shot({**SHOT, "archer": "上耦下射", "role": "下射"}, T + 0.1))
    assert [n for n, _ in out.sent] == [1, 2] and len(read_shots(tmp_path / "shots.csv")) == 2
    rows = hub.judge.rows
    hub.log.rewrite = lambda rows: (_ for _ in ()).throw(OSError(28, "No space left on device"))
    hub.on_correction(osc.parse("/yuexuan/correct", ("上耦上射", 1, "扬触"), T + 2))
    assert hub.judge.rows == rows and [n for n, _ in out.sent] == [1, 2]     # taken back
    assert unlogged[-1] == ("上耦上射", "No space left on device")


@pytest.fixture
def tiny_disk(tmp_path):
    with tiny_tmpfs(tmp_path / "tiny") as where:
        yield where


def test_a_full_disk_cuts_the_row_back_and_the_log_stays_whole(tiny_disk, capsys):
    from test_judge import ROW

    with pytest.raises(UserError, match="cannot reserve 1000000 bytes"):
        logwrite.ShotLogWriter(tiny_disk / "a.csv", 1_000_000)
    assert not os.listdir(tiny_disk)                       # a refused start leaves nothing
    log = tiny_disk / "shots.csv"
    written = 0
    with logwrite.ShotLogWriter(log, 8192) as w:
        w.write(ROW)
        fill(tiny_disk)                                   # the disk fills mid-show
        reserve_before = w.reserve_bytes
        for k in range(200):                              # bounded: 8 kB of reserve, ~130 B a row
            try:
                w.write(ROW | {"archer": f"士{k}"})
            except OSError:
                break
            written += 1
        else:
            raise AssertionError("the disk never filled")
        assert reserve_before == 8192 and w.reserve_bytes == 0
        assert log.read_bytes().endswith(b"\r\n")
        with pytest.raises(OSError):
            w.write(ROW)                                  # still full: cut back again
        assert log.read_bytes().endswith(b"\r\n")
    shots = read_shots(log)
    assert written > 10 and len(shots) == written + 1

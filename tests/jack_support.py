"""JACK for the live-MIDI tests: a private dummy-backend server and a recording client.

``jack_server()`` starts ``jackd -d dummy -p 64`` (realtime where the machine allows it, else
``--no-realtime``) under a private server name (clients find it through
``JACK_DEFAULT_SERVER``). ``Recorder`` runs this file as a separate
process (``python tests/jack_support.py record CLIENT OUT.jsonl``) that opens a JACK MIDI input
``CLIENT:in`` and writes every message it receives, stamped with its arrival time on the
monotonic clock, when it gets SIGTERM. ``MidiDump`` runs JACK's own ``jack_midi_dump`` (jackd2)
as an independent destination.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

PERIOD_FRAMES = 64
RATE_HZ = 48000
CLIENT_TIMEOUT_MS = 2000       # jackd -t: how long a synchronous cycle waits for a late client
REGISTRY = Path("/dev/shm/jack-shm-registry")     # JACK's table of servers (POSIX shm)
_XRUN = re.compile(r"Process XRun = (\d+) usec")


def jack_env(server: str) -> dict:
    env = dict(os.environ)
    env["JACK_DEFAULT_SERVER"] = server
    env["JACK_NO_AUDIO_RESERVATION"] = "1"
    env["JACK_NO_START_SERVER"] = "1"
    return env


def can_realtime() -> bool:
    """True when this process may use SCHED_FIFO (so jackd -R and its clients get it too)."""
    try:
        return subprocess.run(["chrt", "-f", "10", "true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def reclaim_dead_servers(registry: Path = REGISTRY) -> int:
    """Free the registry slots of JACK servers that died without unregistering; returns how many.

    JACK has 8 slots and frees a dead server's slot only when a server of the same name starts.
    These tests use a new name each time, so each jackd that ever died unclean (SIGKILL, a killed
    test run) held its slot for good, and with all 8 held every jackd failed: "Too many servers
    already active". The table (jack_shm_header_t): 24 header bytes, then per slot a pid and a
    name, 264 bytes; a free slot is all zeros, as JACK's own reclaim leaves it.
    """
    try:
        fd = os.open(registry, os.O_RDWR)
    except OSError:
        return 0
    freed = 0
    try:
        head = os.pread(fd, 24, 0)
        if len(head) < 24 or head[:4] != b"KCAJ":
            return 0
        hdr_len = int.from_bytes(head[16:20], "little")
        if (hdr_len - 24) % 264:
            return 0                              # not the layout this knows
        for off in range(24, hdr_len, 264):
            pid = int.from_bytes(os.pread(fd, 4, off), "little", signed=True)
            if pid <= 0:
                continue
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os.pwrite(fd, bytes(264), off)
                freed += 1
            except PermissionError:
                pass                              # alive, another user's
    finally:
        os.close(fd)
    return freed


def _ends_with_parent() -> None:
    """``preexec_fn``: the child gets SIGTERM when the process that started it dies (Linux
    PR_SET_PDEATHSIG), so a test process that is killed leaves no server or recorder running
    (JACK2 allows few servers at once: "Too many servers already active")."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)      # 1: PR_SET_PDEATHSIG


@contextlib.contextmanager
def jack_server(period: int = PERIOD_FRAMES, rate: int = RATE_HZ, realtime: bool | None = None,
                sync: bool | None = None, timeout_ms: int = CLIENT_TIMEOUT_MS):
    """Run a private JACK dummy server; yields the environment for its clients.

    ``realtime`` None means: realtime (``-R``) where the machine allows SCHED_FIFO, else
    ``--no-realtime`` (``YUEXUAN_JACK_REALTIME=0`` or ``1`` decides instead). ``sync`` None
    means JACK2's default asynchronous mode (``YUEXUAN_JACK_SYNC=1`` gives ``-S``).

    Asynchronous mode loses MIDI on a loaded machine. There the server starts each cycle
    without waiting for the clients of the previous one; when the recorder has not finished a
    cycle (jackd logs "client = rec was not finished") the player's output buffer of that cycle
    is cleared and rewritten before the recorder reads it, and while cycles keep ending
    unfinished JACK2 does not switch to a new graph, so a new connection (the player's, just
    before the tuning burst) is not live yet. Measured on a 2-core VM (15 s of 貍首, 360
    messages a run, 3 busy loops besides another session's jobs): asynchronous realtime lost 11
    messages in 1 of 8 runs, asynchronous no-realtime lost messages in 7 of 10 runs (up to
    105: the whole tuning burst; up to 16 note-ons); synchronous (``-S -t 2000``) lost none in
    12 realtime and 6 no-realtime runs. Synchronous mode waits for every client up to ``-t``
    ms, so a late client delays the cycle instead of dropping it.

    But a synchronous server wedges when a client is SIGKILLed mid-cycle (jack_lsp still hung
    30 s later, whatever ``-t``), so the SIGKILL case of test_kill_commands.py and the property
    tests (whose time-outs kill) keep the asynchronous default; the live-MIDI tests and the
    SIGINT/SIGTERM kill cases, whose players exit cleanly, ask for ``sync=True``. The environment also carries
    ``YUEXUAN_TEST_JACK_MODE``, the server's options and its log, for :func:`diagnosis`.
    """
    server = JackServer(period, rate, realtime, sync, timeout_ms)
    try:
        server.start()
        yield server.env
    finally:
        server.stop()


class JackServer:
    """A private jackd (see :func:`jack_server`) that a test may also kill and start again under
    the same name (``kill()``, ``start()``): a JACK server that dies mid-show and comes back."""

    def __init__(self, period: int = PERIOD_FRAMES, rate: int = RATE_HZ,
                 realtime: bool | None = None, sync: bool | None = None,
                 timeout_ms: int = CLIENT_TIMEOUT_MS):
        if shutil.which("jackd") is None:
            raise RuntimeError("jackd is not installed (Debian jackd2; see tests/system-deps.sh)")
        if realtime is None:
            forced = os.environ.get("YUEXUAN_JACK_REALTIME")     # "0" / "1" override the probe
            realtime = forced == "1" if forced in ("0", "1") else can_realtime()
        if sync is None:
            sync = os.environ.get("YUEXUAN_JACK_SYNC") == "1"
        self.name = f"yx{uuid.uuid4().hex[:10]}"
        self.env = env = jack_env(self.name)
        env["YUEXUAN_TEST_JACK_MODE"] = (("realtime" if realtime else "no-realtime")
                                         + (", synchronous" if sync else ", asynchronous"))
        # jackd reports every xrun: its output goes to a file, never to a pipe nobody drains
        # (a full pipe blocks the server)
        self.log = tempfile.NamedTemporaryFile(prefix=f"jackd-{self.name}-", suffix=".log",
                                               delete=False)
        self.args = ["jackd", "-n", self.name, "-R" if realtime else "--no-realtime",
                     "-t", str(timeout_ms)]
        if sync:
            self.args.append("-S")
        self.args += ["-d", "dummy", "-p", str(period), "-r", str(rate)]
        env["YUEXUAN_TEST_JACK_LOG"] = self.log.name
        env["YUEXUAN_TEST_JACK_ARGS"] = " ".join(self.args[3:-6])
        self.proc: subprocess.Popen | None = None

    def start(self) -> float:
        """Start jackd and wait until clients can connect; returns that moment (monotonic s)."""
        reclaim_dead_servers()
        self.proc = proc = subprocess.Popen(self.args, env=self.env, stdout=self.log,
                                            stderr=subprocess.STDOUT, preexec_fn=_ends_with_parent)
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                raise RuntimeError("jackd exited: " + Path(self.log.name).read_text(errors="replace"))
            ok = subprocess.run(["jack_lsp"], env=self.env, capture_output=True, timeout=5)
            if ok.returncode == 0 and b"system:" in ok.stdout:
                return time.monotonic()
            if time.monotonic() > deadline:
                raise RuntimeError("jackd did not come up within 10 s")
            time.sleep(0.02)

    def kill(self, sig: int = signal.SIGKILL) -> float:
        """End the server with ``sig``; returns when it was sent (monotonic s)."""
        assert self.proc is not None
        t = time.monotonic()
        self.proc.send_signal(sig)
        self.proc.wait(10)
        return t

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.log.name)


def log_mark(env: dict) -> int:
    """Where the server's log ends now (pass it to :func:`diagnosis` later)."""
    try:
        return os.path.getsize(env["YUEXUAN_TEST_JACK_LOG"])
    except (KeyError, OSError):
        return 0


def _log_lines(env: dict, since: int) -> list[str]:
    try:
        with open(env["YUEXUAN_TEST_JACK_LOG"], "rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace").splitlines()
    except (KeyError, OSError):
        return []


def _late_us(lines: list[str]) -> list[int]:
    """How late (µs) each cycle the server logged as an xrun began."""
    return [int(m.group(1)) for m in map(_XRUN.search, lines) if m]


def worst_late_s(env: dict, since: int = 0) -> float:
    """The latest cycle the server's log reported since ``since`` (s; 0 with no xrun): how much
    later than its due time a message may have been stamped by the recorder for the server's sake."""
    return max(_late_us(_log_lines(env, since)), default=0) / 1e6


def diagnosis(env: dict, since: int = 0) -> str:
    """The server's mode and what its log reported since ``since``: a line for a failure message.

    jackd logs each cycle that the dummy driver began late (``JackTimedDriver::Process XRun =
    N usec``), each client that had not finished its cycle when the next began (asynchronous
    mode only) and each cycle a synchronous server gave up waiting for (``SuspendRefNum``).
    """
    lines = _log_lines(env, since)
    late = _late_us(lines)
    period_us = PERIOD_FRAMES / RATE_HZ * 1e6
    unfinished = sum("was not finished" in line for line in lines)
    timeouts = sum("SuspendRefNum" in line for line in lines)
    return (f"JACK {env.get('YUEXUAN_TEST_JACK_MODE', '?')} "
            f"(jackd {env.get('YUEXUAN_TEST_JACK_ARGS', '?')}): {len(late)} xruns "
            f"({sum(u > period_us for u in late)} late by more than a period, worst "
            f"{max(late, default=0) / 1e3:.1f} ms), {unfinished} unfinished client cycles, "
            f"{timeouts} client timeouts")


class Recorder:
    """A separate process recording a JACK MIDI input named ``client:in``."""

    def __init__(self, env: dict, client: str, out: Path):
        self.out = Path(out)
        self.client = client
        self.log = self.out.with_suffix(".log")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([sys.executable, __file__, "record", client,
                                          str(self.out)], env=env, stdout=subprocess.PIPE,
                                         stderr=log, text=True, preexec_fn=_ends_with_parent)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise RuntimeError(f"recorder failed: {line}{self.log.read_text()}")

    def stop(self) -> list[tuple[float, list[int]]]:
        """Stop recording; ``(arrival monotonic s, message bytes)`` in arrival order. The
        recording is written before the recorder leaves the server; a recorder whose leaving
        hangs (libjack's close on a server that lost a SIGKILLed client, seen once in a suite run)
        is killed once its recording is there."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()
            if not self.out.exists():
                raise
        rows = []
        for line in self.out.read_text().splitlines():
            t, data = json.loads(line)
            rows.append((t, data))
        return rows

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class MidiDump:
    """JACK's own recorder, ``jack_midi_dump -a NAME`` (a C client of jackd2's examples, written
    by nobody here), as a destination ``NAME:input``: every message it prints, with the JACK
    frame it arrived in (:meth:`messages`).

    Its process callback hands each message to its printing thread through a ring of 127
    messages; a burst bigger than that in one cycle (play's tuning at the start: 160 messages)
    loses the rest, and it says so on stderr ("ringbuffer was full"): :attr:`overflows` counts
    those lines, and :attr:`overflow_after` how many messages it had printed when the first came.
    It leaves the server cleanly on SIGINT (jack_deactivate, jack_client_close) but leaves
    unprinted what its last cycle brought, so a test waits until what it expects has been printed
    (:meth:`wait_for`, bounded) before :meth:`stop`. SIGTERM would kill it mid-cycle, and a
    synchronous server then wedges.
    """

    LINE = re.compile(r"^\s*(\d+):((?: [0-9a-f]{2})+)")

    @classmethod
    def started(cls, env: dict, name: str, tries: int = 3) -> MidiDump:
        """A recorder whose port JACK lists. A server busy with other clients may refuse a
        client's open ("Could not create JACK client"): tried again, ``tries`` times in all."""
        for attempt in range(tries):
            dump = cls(env, name)
            try:
                wait_for_ports(env, [dump.port], alive=dump.proc)
                return dump
            except RuntimeError:
                dump.stop()
                if attempt + 1 == tries:
                    raise RuntimeError(f"jack_midi_dump {name} did not start: {dump.errors}") from None
        raise AssertionError("unreachable")

    def __init__(self, env: dict, name: str):
        self.name = name
        self.port = f"{name}:input"
        self.proc = subprocess.Popen(["jack_midi_dump", "-a", name], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=_ends_with_parent)
        self.lines: list[str] = []
        self.overflows = 0
        self.overflow_after: int | None = None
        self.errors: list[str] = []
        self._changed = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, False), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, True), daemon=True)]
        for t in self._readers:
            t.start()

    def _read(self, stream, errors: bool) -> None:
        for line in stream:
            with self._changed:
                if not errors:
                    self.lines.append(line)
                elif "ringbuffer was full" in line:
                    self.overflows += 1
                    if self.overflow_after is None:
                        self.overflow_after = len(self.lines)
                else:
                    self.errors.append(line.rstrip())
                self._changed.notify_all()

    def messages(self) -> list[tuple[int, bytes]]:
        """``(JACK frame, message bytes)`` of every message printed so far, in order."""
        with self._changed:
            lines = list(self.lines)
        out = []
        for line in lines:
            m = self.LINE.match(line)
            if m:
                out.append((int(m.group(1)), bytes(int(x, 16) for x in m.group(2).split())))
        return out

    def wait_for(self, done, timeout: float) -> bool:
        """Until ``done(messages)`` is true (each time something was printed), at most
        ``timeout`` s; whether it became true."""
        end = time.monotonic() + timeout
        with self._changed:
            while True:
                if done(self.messages()):
                    return True
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return done(self.messages())
                self._changed.wait(left)

    def stop(self) -> list[tuple[int, bytes]]:
        """End it (SIGINT; killed if it has not ended within 5 s); every message printed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for t in self._readers:
            t.join(5)
        return self.messages()


def wait_for_ports(env: dict, ports, timeout: float = 10.0, alive: subprocess.Popen | None = None) -> None:
    """Until JACK lists every port of ``ports`` (jack_lsp), at most ``timeout`` s (RuntimeError
    then, or as soon as the process ``alive`` has ended)."""
    end = time.monotonic() + timeout
    want = set(ports)
    while True:
        if alive is not None and alive.poll() is not None:
            raise RuntimeError(f"the client of {sorted(want)} has ended")
        try:
            listed = subprocess.run(["jack_lsp"], env=env, capture_output=True, text=True,
                                    timeout=max(0.5, end - time.monotonic())).stdout
        except subprocess.TimeoutExpired:
            listed = ""
        missing = want - set(listed.split("\n"))
        if not missing:
            return
        if time.monotonic() > end:
            raise RuntimeError(f"JACK did not list {sorted(missing)} within {timeout} s")
        time.sleep(0.05)


def _record(client: str, out: str) -> None:
    """Poll a JACK MIDI input; stamp each message with its arrival on the monotonic clock.

    python-rtmidi's callback mode garbles bursts of JACK MIDI events (seen here: messages of a
    100-message burst replaced by copies of a neighbour; an independent client, jack_midi_dump,
    received them intact), so this polls rtmidi's queue instead. rtmidi stamps each event with
    the JACK clock in its process callback and hands out deltas; the arrival time of message i
    is ``T0 + cumsum(delta)[i]``, where ``T0 = min(poll_time − cumsum(delta))``: a poll can only
    see a message after it arrived, so the tightest such bound is the best estimate of T0.
    """
    import numpy as np
    import rtmidi

    midi_in = rtmidi.MidiIn(rtmidi.API_UNIX_JACK, name=client, queue_size_limit=1 << 16)
    midi_in.ignore_types(sysex=False, timing=False, active_sense=True)
    midi_in.open_virtual_port("in")
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    time.sleep(0.2)                     # let the client's activation settle before "ready"
    print("ready", flush=True)
    polled, deltas, data = [], [], []
    while True:
        msg = midi_in.get_message()
        if msg is None:
            if stop:
                break
            time.sleep(0.0002)
            continue
        polled.append(time.monotonic())
        deltas.append(msg[1])
        data.append(msg[0])
    cum = np.cumsum(deltas)
    arrival = (np.min(np.array(polled) - cum) + cum) if data else []
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        for t, d in zip(arrival, data):
            f.write(json.dumps([float(t), list(d)]) + "\n")
    os.replace(tmp, out)                # written before the client closes: its close may hang
    midi_in.close_port()
    midi_in.delete()                    # jack_client_close: leave the graph cleanly


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "record":
        _record(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: jack_support.py record CLIENT OUT.jsonl")

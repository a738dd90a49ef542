"""Shared fixtures: the repository paths, the compiled default ceremony, running the CLI, and the
expensive things made once a session (tests/cache_support.py): the default build, the 貍首
renders, the FluidSynth mixes, the browser and the JACK servers.

The suite runs as ``pytest -n 3`` (README, .ci/run; pytest-xdist): two workers compute on the
machine's two cores while the third runs the ``realtime`` tests, which mostly wait for the wall
clock, one after another at raised priority (see :func:`pytest_runtest_setup`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from cache_support import artefact
from cli_support import DEFAULT_CUES, ROOT, default_sigint, run_cli
from leftover_processes import LeftoverCheck, mark_run

# The tests that need the Debian tools of tests/system-deps.sh, marked ``system`` here (not in each
# file) so that a developer without root runs the rest with ``pytest -m "not system"``; CI runs all.
# Whole modules, by file name:
SYSTEM_MODULES = {"test_fluidsynth_mts.py": "fluidsynth", "test_live_jack.py": "jackd",
                  "test_operator_screen.py": "jackd, tmux",
                  "test_live_judge_jack.py": "jackd", "test_drum_mix.py": "fluidsynth"}
# Tests that use one of these fixtures (directly or through another fixture):
SYSTEM_FIXTURES = {"browser": "chromium", "jack": "jackd", "jack_async": "jackd", "jack_worker": "jackd",
                   "jack_servers": "jackd", "jack_sync": "jackd", "jack_restartable": "jackd", "fluid_mixes": "fluidsynth",
                   "phone_video": "ffmpeg, fluidsynth"}
# Single tests, by function name:
SYSTEM_TESTS = {"test_pdf_through_lilypond": "lilypond", "test_voices_hnr_beside_the_choir_aahs": "fluidsynth",
                "test_syllables_match_their_espeak_templates": "espeak-ng",
                "test_killed_score_pdf_keeps_the_previous_pdf": "lilypond"}

# The ``realtime`` tests time MIDI against the wall clock over the synchronous JACK server: they
# are one work unit, run first, on one worker, one after another, at nice REALTIME_NICE where the
# user may raise priority (root, as in CI), so that the other workers' computing does not delay
# their wake-ups (the players' sending threads and jackd ask SCHED_FIFO themselves). (The tests on
# the asynchronous server count what a player sent or logged and time nothing: the play property
# tests, SIGKILL during live judging.)
REALTIME_FIXTURES = {"jack", "jack_restartable"}
REALTIME_UNIT = "@realtime"         # their work unit's name
REALTIME_NICE = -15
NUMBA_SEED = Path(sys.prefix) / "numba-cache" / "seed"      # tests/warm_numba.py
_WARMING = pytest.StashKey[subprocess.Popen]()
_RUN_ID = pytest.StashKey[str]()
_UNITS = pytest.StashKey[Path]()
# the folder in which each xdist worker lists the node ids of the realtime tests it collected, for
# the controller's scheduler (which sees node ids only): tests/conftest.py's side channel, as
# changing a node id no longer works (pytest 9.2: the id is derived; xdist's own ``loadgroup``
# lost its groups the same way, pytest-xdist issue 1386)
_UNITS_DIR = "yuexuan_units_dir"
# the render's default seat (commands/render.py: the first listener of the courtyard)
DEFAULT_SEAT = tomllib.loads((ROOT / "ceremony" / "courtyard.toml").read_text(encoding="utf-8"))[
    "listener"][0]["name"]


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        # every process the run starts carries this run's id (tests/leftover_processes.py)
        config.stash[_RUN_ID] = mark_run()
    # numba (librosa's STFT, onsets and peak picking) caches what it compiles beside librosa's
    # sources, an index a function: two xdist workers compiling one function at once overwrite
    # each other's entries, and one then runs the other's code (seen: a segfault in
    # librosa.util.peak_pick on a fresh venv). Each worker, and the commands it runs, has a cache
    # folder of its own, kept in the venv as numba's own is; it starts as a copy of the seed that
    # tests/warm_numba.py compiles once, in the background, while the workers begin (each worker
    # compiled the same 25-35 s of CPU before).
    if worker and "NUMBA_CACHE_DIR" not in os.environ:
        folder = Path(sys.prefix) / "numba-cache" / worker
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:                              # a read-only Python
            folder = Path(tempfile.mkdtemp(prefix=f"numba-{worker}-"))
        os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if not worker:
        # the package's bytecode, once: with PYTHONDONTWRITEBYTECODE set (as this machine's
        # environment has it) no process writes it, and each of the suite's few hundred `yuexuan`
        # processes compiled the package from source again (py-spy: 16 s of a run's CPU went to
        # compiling bytecode); compileall writes it whatever that variable says
        import compileall
        compileall.compile_dir(ROOT / "yuexuan", quiet=2)
    # (not when a cache folder is set already: a run inside a test, or one's own choice)
    if not worker and getattr(config.option, "numprocesses", None) and "NUMBA_CACHE_DIR" not in os.environ \
            and not (NUMBA_SEED / "ready").exists() and os.access(sys.prefix, os.W_OK):
        config.stash[_WARMING] = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "warm_numba.py")], cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # the tests read the packaged data, whatever the host has set
    os.environ.pop("YUEXUAN_DATA", None)


def _stop_warming(config) -> None:
    warming = config.stash.get(_WARMING, None)
    if warming is not None and warming.poll() is None:
        warming.kill()                  # no seed: the next run compiles it again
        warming.wait()
        shutil.rmtree(NUMBA_SEED.with_name(f"seed.{warming.pid}"), ignore_errors=True)


def _close_helpers() -> None:
    """End this process's long-lived helpers (the fork server, the CLI workers) before the
    leftover check, not at the interpreter's exit."""
    import cli_support
    import forkserver
    cli_support.close_workers()
    forkserver.stop()


def pytest_sessionstart(session):
    """The leftover check (tests/leftover_processes.py), registered now so that its end of the
    session comes after xdist's (the workers have ended by then)."""
    config = session.config
    if _RUN_ID in config.stash:
        config.pluginmanager.register(
            LeftoverCheck(config.stash[_RUN_ID], closers=(lambda: _stop_warming(config), _close_helpers)),
            "yuexuan-leftovers")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _close_helpers()                # after the session's fixtures


def pytest_unconfigure(config):
    _stop_warming(config)
    folder = config.stash.get(_UNITS, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _seed_numba_cache() -> None:
    """Copy the seed into this worker's numba cache while the worker has compiled nothing yet."""
    folder = os.environ.get("NUMBA_CACHE_DIR")
    if not folder or os.environ.get("_YUEXUAN_NUMBA_SEEDED") or not (NUMBA_SEED / "ready").exists():
        return
    os.environ["_YUEXUAN_NUMBA_SEEDED"] = "1"
    if not any(Path(folder).iterdir()):
        shutil.copytree(NUMBA_SEED, folder, dirs_exist_ok=True)


def system_tool(item) -> str | None:
    """The system tool that the collected test ``item`` needs, or None."""
    fixtures = getattr(item, "fixturenames", ())
    return (SYSTEM_MODULES.get(item.path.name)
            or next((SYSTEM_FIXTURES[f] for f in fixtures if f in SYSTEM_FIXTURES), None)
            or SYSTEM_TESTS.get(getattr(item, "originalname", item.name)))


def is_realtime(item) -> bool:
    return bool(REALTIME_FIXTURES & set(getattr(item, "fixturenames", ())))


# pytest-xdist hands out work units, a unit to a worker, in the order of the collection. A unit is
# a module (its module-scoped fixtures are then made once), but for the modules in SPREAD, whose
# tests share nothing costly and go out one by one; the users of the FluidSynth mixes are one unit.
SPREAD = {"test_kill_commands.py", "test_synth.py", "test_check_rules.py", "test_check_cli.py",
          "test_bad_input.py", "test_variants.py"}
UNITS = {"test_drum_mix.py": "fluid-mixes", "test_recording.py": "fluid-mixes"}
# the units that take longest first (measured), then the rest as collected
FIRST = (REALTIME_UNIT, "fluid-mixes", "test_kill_commands.py", "test_guide_mix.py", "test_beats_evidence.py",
         "test_render.py", "test_drum_onsets.py", "test_wheel.py", "test_calls.py", "test_score.py",
         "test_html_valid.py", "test_properties.py", "test_bells.py", "test_guide.py")


def work_unit(nodeid: str, realtime: frozenset = frozenset()) -> str:
    if nodeid in realtime:
        return REALTIME_UNIT
    path = nodeid.split("::", 1)[0]
    name = path.rsplit("/", 1)[-1]
    return UNITS.get(name) or (nodeid if name in SPREAD else name)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(The controller) tell each worker where to list its realtime tests."""
    config = node.config
    if _UNITS not in config.stash:
        config.stash[_UNITS] = Path(tempfile.mkdtemp(prefix="yx-units-"))
    node.workerinput[_UNITS_DIR] = str(config.stash[_UNITS])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnits(LoadScopeScheduling):
        """xdist's scheduling by scope, the scopes being :func:`work_unit`'s; a worker is given its
        next unit only when it is down to its last test (xdist's own threshold is two: a long
        unit then went to a worker that still had a long test to run while another ran dry)."""

        realtime: frozenset | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.realtime is None:       # every worker has listed its realtime tests by now
                folder = config.stash.get(_UNITS, None)
                self.realtime = frozenset(
                    line for p in (folder.iterdir() if folder else ())
                    for line in p.read_text(encoding="utf-8").splitlines())
            return work_unit(nodeid, self.realtime)

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    config.option.loadscopereorder = False          # the collection order, as sorted below
    return WorkUnits(config, log)


def pytest_collection_modifyitems(config, items):
    realtime = set()
    for item in items:
        tool = system_tool(item)
        if tool:
            item.add_marker(pytest.mark.system(tool))
        if is_realtime(item):
            item.add_marker(pytest.mark.realtime)
            realtime.add(item.nodeid)
    workerinput = getattr(config, "workerinput", None)
    if workerinput and _UNITS_DIR in workerinput:
        Path(workerinput[_UNITS_DIR], workerinput["workerid"]).write_text(
            "".join(f"{nodeid}\n" for nodeid in sorted(realtime)), encoding="utf-8")
    realtime = frozenset(realtime)
    rank = {unit: k for k, unit in enumerate(FIRST)}
    kind = {}
    for item in items:
        unit = work_unit(item.nodeid, realtime)
        kind[item.nodeid] = rank.get(unit, rank.get(item.path.name, len(FIRST)))
    items.sort(key=lambda item: kind[item.nodeid])     # stable: collected order within a rank


_NICE_BEFORE = pytest.StashKey[int]()


def _nice(value: int) -> None:
    """Set this thread's (the test's) nice value where the user may; children inherit it."""
    with contextlib.suppress(PermissionError, OSError):
        os.setpriority(os.PRIO_PROCESS, 0, value)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A realtime test, and everything it starts (jackd, the player, the recorder), at raised
    priority: before its fixtures, so that a JACK server it starts inherits it too."""
    _seed_numba_cache()
    if is_realtime(item):
        item.config.stash.setdefault(_NICE_BEFORE, os.getpriority(os.PRIO_PROCESS, 0))
        _nice(REALTIME_NICE)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    """The seed again before the test's body: a fixture that took a minute (the FluidSynth mixes)
    may have begun before the seed was ready, and the body would compile numba itself (25 s)."""
    _seed_numba_cache()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if is_realtime(item) and (nextitem is None or not is_realtime(nextitem)):
        _nice(item.config.stash.get(_NICE_BEFORE, 0))     # the run's own (``nice pytest …``)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def default_cues() -> Path:
    return DEFAULT_CUES


@pytest.fixture(scope="session")
def ceremony():
    """The default cue sheet compiled whole."""
    from yuexuan.compiler import compile_file
    return compile_file(DEFAULT_CUES)


@pytest.fixture(scope="session")
def lishou():
    """The default cue sheet's 貍首 cue (round 3, the 射节) compiled alone."""
    from yuexuan.compiler import compile_file
    return compile_file(DEFAULT_CUES, ["lishou"])


@pytest.fixture(scope="session")
def default_timeline(ceremony):
    """The default cue sheet compiled whole (the same Timeline as ``ceremony``)."""
    return ceremony


@pytest.fixture
def cli():
    return run_cli


# -- artefacts shared by the tests, the xdist workers and later runs (tests/cache_support.py) ----
# (made by new processes, not forked ones: tests/forkserver.py)

@pytest.fixture(scope="session")
def artefact_root(request, tmp_path_factory) -> Path:
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("yuexuan-artefacts"))
    base = tmp_path_factory.getbasetemp()           # one folder for the run's xdist workers
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "artefacts"


@pytest.fixture(scope="session")
def default_build(artefact_root) -> Path:
    """The folder ``yuexuan build`` of the default cue sheet wrote, uninterrupted (read only);
    beside it ``peak-memory-kib.txt``, the build process's peak resident memory (VmHWM, KiB: the
    whole ceremony's render streams, tests/test_render.py)."""
    def build(d: Path) -> None:
        r = subprocess.run([sys.executable, "-c", PEAK_MEMORY, d / "peak-memory-kib.txt", "build",
                            DEFAULT_CUES, "-o", d / "out"], cwd=ROOT, capture_output=True, text=True,
                           timeout=900, preexec_fn=default_sigint)
        assert r.returncode == 0, r.stderr
    return artefact(artefact_root, "build", (), build) / "out"


@pytest.fixture(scope="session")
def xiangshe_build(artefact_root) -> Path:
    """The folder ``yuexuan build cues/xiangshe.toml`` wrote, uninterrupted (read only): the second
    rite's every output (tests/test_xiangshe.py); beside it ``stdout.txt``, what the build printed."""
    def build(d: Path) -> None:
        r = run_cli("build", ROOT / "cues" / "xiangshe.toml", "-o", d / "out", timeout=900, fork=False)
        assert r.returncode == 0, r.stderr
        (d / "stdout.txt").write_text(r.stdout, encoding="utf-8")
    return artefact(artefact_root, "xiangshe-build", (), build) / "out"


# ``python -c PEAK_MEMORY FILE ARGS`` is ``yuexuan ARGS`` (the console script's cli.run) writing its
# process's peak resident memory into FILE as it exits. VmHWM belongs to the process image, so it
# starts afresh at exec; getrusage's ru_maxrss would carry over the test runner's size from the fork.
PEAK_MEMORY = """import atexit, re, sys
path = sys.argv.pop(1)


def peak():
    with open("/proc/self/status") as f:
        kib = re.search(r"VmHWM:\\s+(\\d+) kB", f.read()).group(1)
    with open(path, "w") as f:
        f.write(kib)


atexit.register(peak)
from yuexuan.cli import run
run()
"""


@pytest.fixture(scope="session")
def lishou_render(artefact_root):
    """``lishou_render(*options)``: the folder of ``yuexuan render cues/dashe.toml --cues lishou
    -o lishou.wav --stems stems OPTIONS`` (``r.stdout`` in stdout.txt; read only). Without
    ``--listener`` the seat is the render's default, named (the first of ceremony/courtyard.toml),
    so that ``lishou_render()`` and ``lishou_render("--listener", "宾")`` are one render."""
    def get(*options) -> Path:
        options = tuple(map(str, options))
        if "--listener" not in options:
            options += ("--listener", DEFAULT_SEAT)

        def build(d: Path) -> None:
            r = run_cli("render", DEFAULT_CUES, "--cues", "lishou", "-o", d / "lishou.wav",
                        "--stems", d / "stems", *options, timeout=600, fork=False)
            assert r.returncode == 0, r.stderr
            (d / "stdout.txt").write_text(r.stdout, encoding="utf-8")
        return artefact(artefact_root, "lishou-render", options, build)
    return get


@pytest.fixture(scope="session")
def guide_render(artefact_root) -> Path:
    """The folder of ``yuexuan render cues/dashe.toml --cues luming,lishou --compact --mix guide
    -o guide.wav --stems stems`` (the two sung cues in the guide mix; read only)."""
    def build(d: Path) -> None:
        r = run_cli("render", DEFAULT_CUES, "--cues", "luming,lishou", "--compact", "--mix", "guide",
                    "-o", d / "guide.wav", "--stems", d / "stems", timeout=600, fork=False)
        assert r.returncode == 0, r.stderr
        (d / "stdout.txt").write_text(r.stdout, encoding="utf-8")
    return artefact(artefact_root, "guide-render", (), build)


@pytest.fixture(scope="session")
def fluid_mixes(artefact_root) -> dict:
    """tests/fluid_mix.py's mixes, rendered once (per inputs: tests/cache_support.py)."""
    from fluid_mix import cached_mixes
    return cached_mixes(artefact_root)


@pytest.fixture(scope="session")
def fluid_mix(fluid_mixes):
    """The mix of tests/fluid_mix.py's doc."""
    return fluid_mixes["mix.wav"]


@pytest.fixture(scope="session")
def fluid_mix_without_drum(fluid_mixes):
    """The same band, 鼙, song and noise with no 建鼓."""
    return fluid_mixes["mix-without-drum.wav"]


# -- the browser -------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def chromium(tmp_path_factory):
    """Headless Chromium through chromedriver, its console log kept, one a session."""
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--window-size=1280,900"):
        opts.add_argument(a)
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(options=opts,
                           service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))
    drv.set_page_load_timeout(30)
    yield drv
    drv.quit()


@pytest.fixture
def browser(chromium):
    """The session's browser (a ``system`` test), its console log of earlier tests read away."""
    chromium.get_log("browser")
    return chromium


# -- JACK: one synchronous and one asynchronous private server a module (tests/jack_support.py) --
# A module's, not the session's: an idle jackd at 64 frames a period wakes 750 times a second,
# 5 % of a core (measured: 0.5 s of CPU in 10 s), and session servers lived on in every worker
# that had run one JACK test, up to six at once, to the end of the run.

@pytest.fixture(scope="module")
def jack():
    """A synchronous server: an asynchronous JACK2 server drops MIDI when a client runs late on a
    loaded machine (the measurements are in jack_support.jack_server's docstring)."""
    from jack_support import jack_server
    with jack_server(sync=True) as env:
        yield env


@pytest.fixture(scope="module")
def jack_async():
    """An asynchronous server, for the tests that SIGKILL a client (a synchronous server wedges
    then) or whose time-outs kill."""
    from jack_support import jack_server
    with jack_server(sync=False) as env:
        yield env


@pytest.fixture
def jack_restartable():
    """A private synchronous JACK server of the test's own, which it may stop, kill and start again
    (test_live_jack, test_live_delivery)."""
    from jack_support import JackServer
    server = JackServer(sync=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()

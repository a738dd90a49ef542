"""yuexuan.atomic: the temporary file never outlives its writer, whatever interrupts it."""

import gc
import os
import stat
import sys

import pytest

from yuexuan import atomic


def test_abandoned_after_enter_leaves_nothing(tmp_path):
    # what an exception raised by a signal handler between __enter__ and the block does
    target = tmp_path / "out.json"
    cm = atomic.atomic_path(target)
    tmp = cm.__enter__()
    assert tmp.exists() and tmp.name.startswith(".out.json.") and tmp.suffix == ".json"
    del cm
    gc.collect()
    assert list(tmp_path.iterdir()) == []


def test_exception_in_block_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_written_file_has_the_umask_mode(tmp_path):
    umask = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "a" / "b.txt", "新宫")
    finally:
        os.umask(umask)
    p = tmp_path / "a" / "b.txt"
    assert p.read_text(encoding="utf-8") == "新宫"
    assert stat.S_IMODE(p.stat().st_mode) == 0o644
    assert [q.name for q in p.parent.iterdir()] == ["b.txt"]


def _write_interrupted_at(k: int, target) -> bool:
    """``write_text`` with KeyboardInterrupt raised at its ``k``-th traced event (call, line or
    return, in any frame: contextlib's and pathlib's too), as a signal handler raises at a
    bytecode check; True if it was interrupted."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        count += 1
        if count == k:
            raise KeyboardInterrupt
        return tracer

    sys.settrace(tracer)
    try:
        atomic.write_text(target, "新宫")
    except KeyboardInterrupt:
        return True
    finally:
        sys.settrace(None)
    return False


def test_an_interrupt_at_any_step_leaves_old_or_new_and_nothing_else(tmp_path):
    target = tmp_path / "verdict.json"
    k = 0
    while True:
        k += 1
        target.write_text("old")
        interrupted = _write_interrupted_at(k, target)
        assert [p.name for p in tmp_path.iterdir()] == ["verdict.json"], k
        assert target.read_text(encoding="utf-8") in ("old", "新宫"), k
        if not interrupted:
            break
    assert k > 10            # the write has that many steps to be interrupted at

"""yuexuan.interrupts: a signal inside deferred_signals() is acted on at the checkpoint, not before."""

from __future__ import annotations

import os
import signal

import pytest

from yuexuan.interrupts import deferred_signals


class Boom(BaseException):
    pass


@pytest.fixture
def term_raises():
    def handler(signum, frame):
        raise Boom(signum)
    old = signal.signal(signal.SIGTERM, handler)
    yield handler
    signal.signal(signal.SIGTERM, old)


def test_signal_waits_for_the_checkpoint_then_runs_the_previous_handler(term_raises):
    reached = []
    with pytest.raises(Boom) as info:
        with deferred_signals() as checkpoint:
            os.kill(os.getpid(), signal.SIGTERM)
            reached.append("after kill")          # the handler did not raise here
            checkpoint()
            reached.append("after checkpoint")
    assert reached == ["after kill"]
    assert info.value.args == (signal.SIGTERM,)
    assert signal.getsignal(signal.SIGTERM) is term_raises


def test_pending_signal_is_delivered_at_the_end_of_the_block(term_raises):
    with pytest.raises(Boom):
        with deferred_signals():
            os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is term_raises


@pytest.fixture
def python_sigint():
    """SIGINT as Python sets it at start-up (KeyboardInterrupt), whatever the runner inherited: a
    shell without job control starts its background commands with SIGINT ignored."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_sigint_becomes_keyboardinterrupt_at_the_checkpoint(python_sigint):
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        with deferred_signals() as checkpoint:
            os.kill(os.getpid(), signal.SIGINT)
            checkpoint()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_no_signal_changes_nothing(term_raises):
    with deferred_signals() as checkpoint:
        checkpoint()
        assert signal.getsignal(signal.SIGTERM) is not term_raises
    assert signal.getsignal(signal.SIGTERM) is term_raises

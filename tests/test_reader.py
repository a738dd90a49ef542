"""The render's line reader in a forked child (yuexuan/audio/lines.py, forked.Helper): the same
readings as read here; a child that fails leaves the reading (and its error) to this process."""

from __future__ import annotations

import os

import pytest

from yuexuan.audio import forked, lines
from yuexuan.audio.phonetics import Reading
from yuexuan.errors import UserError
from yuexuan.rite import instruments
from yuexuan.timeline import Note

pytestmark = pytest.mark.skipif(not forked.available(), reason="forked helpers are Linux's")


def _families(timeline) -> dict[str, str]:
    return {name: facts["family"] for name, facts in timeline.instruments.items()}


def test_forked_reader_reads_as_this_process_does(default_timeline):
    here = lines.readings(default_timeline.notes, _families(default_timeline))
    reader = lines.forked_reader()
    try:
        there = lines.readings(default_timeline.notes, _families(default_timeline), reader.call)
    finally:
        reader.close()
    assert len(here) > 300 and there == here
    assert reader.pid is None                     # called once, then closed
    told = lines.readings(default_timeline.notes, _families(default_timeline),
                          lambda texts: [tuple(Reading("", "a", 5) for _ in t) for t in texts])
    assert set(told) == set(here) and set(told.values()) == {Reading("", "a", 5)}   # what it said


def test_a_failed_child_leaves_the_error_to_this_process():
    def fail() -> None:
        raise RuntimeError("no pypinyin here")

    broken = forked.Helper(fail, lambda texts: [])
    assert broken.call(["呦呦鹿鸣"]) is None and broken.pid is None
    voice = next(n for n, f in instruments.load_all().items() if f.facts()["family"] == "voice")
    notes = [Note(0.0, 0.5, voice, "c", 60, 220.0, 80, lyric="\u2603")]      # a snowman: no reading
    with pytest.raises(UserError, match="no Mandarin reading"):
        lines.readings(notes, {voice: "voice"}, forked.Helper(lambda: None, lambda t: None).call)


def test_an_unused_reader_is_closed_without_a_trace():
    reader = lines.forked_reader()
    pid = reader.pid
    reader.close()
    with pytest.raises(ChildProcessError):            # reaped: no zombie left
        os.waitpid(pid, 0)

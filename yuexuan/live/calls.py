"""The calls a live shot sounds, taken from the compiled timeline, and the compiled calls it replaces.

The 获者's 获 (举旌以宫, loud, then 偃旌以商, soft: :func:`yuexuan.compiler.calls.huo_calls`) and
the 大射正's 留 / 扬 / 方 (:func:`yuexuan.compiler.calls.zheng_calls`) are compiled as notes of
the instruments 获者·<侯> (one at each 侯's 乏) and 大射正 with the call's word as lyric (the callers
of the timeline's ``rite``: each 侯's ``huozhe``, the host's ``misses_called_by``). A live hit
sounds the first compiled 获 call of the 获者 of the 侯 it struck, its own MIDI messages (channel,
key, velocity, lengths, the 商's distance from the 宫), moved to now: nothing is worked out again
here. The cues judged live leave their compiled calls out (:func:`without_calls`), so no call
sounds twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from yuexuan.formats.midimessages import TimedMessage
from yuexuan.live.program import message_kind
from yuexuan.live.queue_items import Kind
from yuexuan.rite.cuesheet_records import SHOOTING_KINDS
from yuexuan.rite.vocabulary import ZHENG_CALLS
from yuexuan.timeline import Note, Timeline

HUO = "获"


@dataclass(frozen=True)
class CallEvent:
    """One message of a live call, ``dt`` seconds after the call starts."""

    dt: float
    kind: Kind                  # ON | OFF | OTHER (a pitch bend)
    data: tuple[int, ...]       # raw bytes
    key: tuple[int, int] | None  # (channel, note) for ON/OFF


def huo_key(hou: str) -> str:
    """The key of :func:`call_templates` for the 获 of the 获者 of ``hou`` (a 侯 of the rite)."""
    return f"{HUO}·{hou}"


def _callers(timeline: Timeline) -> tuple[dict[str, str], str | None]:
    """({获者 instrument: its 侯}, the instrument calling the host's misses or None): the rite's."""
    rite = timeline.rite
    if rite is None:
        return {}, None
    return {h.huozhe: h.name for h in rite.hou}, rite.host.misses_called_by if rite.host else None


def _is_call(note: Note, callers: tuple[dict[str, str], str | None]) -> bool:
    huozhe, zheng = callers
    return ((note.instrument in huozhe and note.lyric == HUO)
            or (note.instrument == zheng and note.lyric in ZHENG_CALLS))


def live_cues(timeline: Timeline) -> list[str]:
    """The ids of the cues judged live: every shooting cue of the played selection."""
    return [c.id for c in timeline.cues if c.kind in SHOOTING_KINDS]


def compiled_calls(timeline: Timeline, cue_ids: Iterable[str]) -> frozenset[tuple[str, str, float]]:
    """(cue, instrument, onset s) of every compiled 获 and 大射正 call in the cues ``cue_ids``."""
    wanted, callers = set(cue_ids), _callers(timeline)
    return frozenset((n.cue, n.instrument, n.time) for n in timeline.notes
                     if n.cue in wanted and _is_call(n, callers))


def without_calls(messages: Iterable[TimedMessage],
                  calls: frozenset[tuple[str, str, float]]) -> list[TimedMessage]:
    """``messages`` (:class:`yuexuan.formats.midimessages.TimedMessage`) less those of the notes ``calls``."""
    return [m for m in messages if (m.cue, m.track, m.onset_s) not in calls]


def _events(messages: Iterable[TimedMessage], notes: Iterable[Note], start: float) -> tuple[CallEvent, ...]:
    """The messages of ``notes`` as :class:`CallEvent` from ``start`` (s)."""
    keys = {(n.cue, n.instrument, n.time) for n in notes}
    out = []
    for m in messages:
        if (m.cue, m.track, m.onset_s) in keys:
            kind = message_kind(m.message)
            key = (m.message.channel, m.message.note) if kind in (Kind.ON, Kind.OFF) else None
            out.append(CallEvent(m.time_s - start, kind, tuple(m.message.bytes()), key))
    return tuple(sorted(out, key=lambda e: (e.dt, e.kind != Kind.OFF)))


def call_templates(timeline: Timeline, messages: Sequence[TimedMessage]) -> dict[str, tuple[CallEvent, ...]]:
    """{key: the CallEvents of its first compiled call}: for each 侯, :func:`huo_key` → the first 获
    of its 获者 (the 宫 and the 商 that follows it), and each of 留 / 扬 / 方 the 大射正 calls
    somewhere in ``timeline``. A 侯 whose 获者 has no compiled call is absent (its 获者 has no track
    to sound on); a 大射正 word with none falls back on another (the spoken key is the same)."""
    callers = _callers(timeline)
    calls = [n for n in timeline.notes if _is_call(n, callers)]
    out: dict[str, tuple[CallEvent, ...]] = {}
    for caller, hou in callers[0].items():
        huo = [n for n in calls if n.instrument == caller and n.lyric == HUO]
        if len(huo) >= 2:
            first, second = huo[0], huo[1]        # 举旌以宫, then 偃旌以商 (compiled in pairs)
            out[huo_key(hou)] = _events(messages, (first, second), first.time)
    zheng = [n for n in calls if n.instrument == callers[1]]
    for word in ZHENG_CALLS:
        said = [n for n in zheng if n.lyric == word] or zheng
        if said:
            out[word] = _events(messages, said[:1], said[0].time)
    return out

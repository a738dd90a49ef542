"""A hit sensor as input (``play --hits-midi PORT``): a MIDI note from a pad on a 侯 is a hit.

E-drum trigger modules send a note-on when a pad is struck. The cue sheet's ``[hits_midi]``
table (:mod:`yuexuan.rite.cuesheet_hits`) maps each note to the 侯 its pad is on. A hit at
timeline time ``t`` on 侯 X is reported to the judging hub (:class:`yuexuan.live.judging.Hub`)
as a shot:

- **who**: whoever's turn it is by the schedule's shooting 节 (:func:`whose_turn`, a pure
  function of the timeline's 射节 strokes): the archer whose stroke lies nearest to when the arrow
  must have left the string, ``t − flight(X)``, among the strokes before ``t``;
- **when**: that archer's pending loose (``/yuexuan/loose``), or with none ``t − flight(X)``:
  the arrow's flight to X as the compiler put it in the timeline (``targets[X].flight_s``: the
  侯道 at the sheet's ``arrow_speed_m_s``, INFERENCE, docs/timeline.md);
- **what**: 贯 on X, round 3, with the archer's rank, role and pair from the timeline. A scorer
  who sees otherwise corrects it over OSC (``/yuexuan/correct``, docs/play.md).

A hit outside the 射节 (no stroke within reach) or before the show started is reported as a bad
message, never raised.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from yuexuan.errors import UserError
from yuexuan.live.osc import Loose, Shot
from yuexuan.rite.cuesheet_hits import HitsMidi
from yuexuan.scoring.nearest import nearest
from yuexuan.timeline import Beat, Timeline

if TYPE_CHECKING:
    from yuexuan.live.judge import JudgedShot
    from yuexuan.live.judging import Hub
    from yuexuan.live.midi_in import Input

NOTE_ON = 0x90
SHOOTING_ROUND = 3          # the 射节 (kind shejie) is round 3's music


@dataclass(frozen=True)
class Strokes:
    """The shooting strokes of the 射节, ascending: each bound to one archer's arrow."""

    time_s: npt.NDArray[np.float64]      # timeline s (the whole ceremony's)
    beats: tuple[Beat, ...]  # the timeline's Beat records, same order
    reach_s: float          # a loose further than this from every stroke is nobody's turn


def shooting_strokes(beats: Iterable[Beat], cue_ids: Iterable[str]) -> Strokes:
    """The strokes of ``cue_ids`` bound to an archer (``Beat.shoot``). ``reach_s`` is the median
    gap between consecutive strokes (one arrow's share of a shooting 节)."""
    wanted = set(cue_ids)
    chosen = sorted((b for b in beats if b.cue in wanted and b.shoot and b.archer),
                    key=lambda b: b.time)
    times = np.array([b.time for b in chosen], dtype=np.float64)
    gaps = np.diff(times)
    reach = float(np.median(gaps)) if gaps.size else 0.0
    return Strokes(times, tuple(chosen), reach)


def whose_turn(strokes: Strokes, loose_s: float, hit_s: float) -> Beat | None:
    """The Beat (archer, arrow, rank, role, pair) whose stroke is nearest ``loose_s`` among the
    strokes at or before ``hit_s`` (an arrow lands after it was loosed); None when none lies
    within ``strokes.reach_s`` of ``loose_s``."""
    n = int(np.searchsorted(strokes.time_s, hit_s, side="right"))
    if n == 0:
        return None
    k, off_s = nearest(loose_s, strokes.time_s[:n])
    if abs(float(off_s)) > strokes.reach_s:
        return None
    return strokes.beats[int(k)]


def flight_times(sensor: HitsMidi, timeline: Timeline) -> dict[str, float]:
    """侯 → the arrow's flight, s, for each 侯 the sensor reports: the timeline's
    ``targets[侯].flight_s`` (the compiler's). A 侯 the timeline gives no flight is refused."""
    for target in dict.fromkeys(sensor.notes.values()):
        if target not in timeline.targets:
            raise UserError(f"the timeline gives no arrow flight to {target} (its targets: "
                            f"{', '.join(timeline.targets) or 'none'})", key="--hits-midi")
    return {name: float(t["flight_s"]) for name, t in timeline.targets.items()}


@dataclass(frozen=True)
class Hit:
    """A note from the sensor, read: the 侯 it reports."""

    note: int
    target: str


def read_hit(data: Sequence[int], sensor: HitsMidi) -> Hit | None:
    """A note-on (velocity > 0) of a mapped note on the sensor's channel, else None."""
    if len(data) < 3 or data[0] & 0xF0 != NOTE_ON or data[2] == 0:
        return None
    if sensor.channel is not None and data[0] & 0x0F != sensor.channel:
        return None
    target = sensor.notes.get(int(data[1]))
    return None if target is None else Hit(int(data[1]), target)


class HitSensor:
    """Turns sensor notes into shots for the hub (see the module's docstring)."""

    def __init__(self, hub: Hub, sensor: HitsMidi, flights: dict[str, float], strokes: Strokes) -> None:
        self.hub, self.sensor, self.flights, self.strokes = hub, sensor, flights, strokes
        self.hits = 0               # notes read as hits
        self.ignored = 0            # other MIDI (unmapped notes, note-offs, other channels)

    def midi_in(self, data: Sequence[int], arrival: float) -> JudgedShot | None:
        """One MIDI message that arrived at monotonic ``arrival``: the JudgedShot, or None."""
        hit = read_hit(data, self.sensor)
        if hit is None:
            self.ignored += 1
            return None
        self.hits += 1
        hub = self.hub
        t = hub.timeline_at(arrival)
        if t is None:
            hub.report_bad(f"hit on {hit.target} (note {hit.note}): the show has not "
                           "started (not judged)", arrival)
            return None
        flight = self.flights[hit.target]
        beat = whose_turn(self.strokes, t - flight, t)
        if beat is None or beat.rank is None or beat.archer is None:    # (strokes bound to an archer)
            hub.report_bad(f"hit on {hit.target} (note {hit.note}) at {t:.3f} s: no "
                           "archer's turn by the 射节 (not judged)", arrival)
            return None
        if not hub.judge.pending(beat.archer):        # no loose reported: the flight back
            hub.on_loose(Loose(beat.archer, t - flight, arrival))
        fields = {"archer": beat.archer, "rank": beat.rank, "role": beat.role,
                  "target": hit.target, "result": "贯", "pair": beat.pair,
                  "round": SHOOTING_ROUND}
        return hub.on_shot(Shot(fields, arrival))


def open_sensor(api: str, fragment: str, hub: Hub, sensor: HitsMidi, timeline: Timeline,
                rt_priority: int | None = None) -> tuple[HitSensor, Input]:
    """Open the MIDI input whose name contains ``fragment`` and feed its hits, read by the cue
    sheet's ``[hits_midi]`` map ``sensor`` (:func:`yuexuan.rite.cuesheet_hits.read`) with the
    arrow flights of ``timeline`` (the one played), to ``hub`` (from a thread at SCHED_FIFO
    ``rt_priority`` where allowed). Returns (HitSensor, the open :class:`~yuexuan.live.midi_in.Input`)."""
    from yuexuan.live.midi_in import Input

    rules = hub.judge.rules
    reader = HitSensor(hub, sensor, flight_times(sensor, timeline),
                       shooting_strokes(rules.timeline_beats, rules.cue_ids))
    port = Input(api, fragment, lambda data: reader.midi_in(data, time.monotonic()),
                       option="--hits-midi", role="hits", rt_priority=rt_priority)
    return reader, port

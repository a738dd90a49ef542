"""What the timeline says a recording of the 射节 should hold besides its 建鼓 strokes: how long the
drum is silent before the first stroke and after the last (the 建鼓's nearest strokes in other
cues, up to ``QUIET_MAX_S``). The placement (:mod:`yuexuan.check.drum.placement`) weighs a
candidate start by them; they are read from the Timeline, never fixed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from yuexuan.timeline import Timeline

BEAT_DRUM_KIND = "建鼓"  # the instrument kind whose strokes are the beats (instruments/*.toml)
QUIET_MAX_S = 8.0        # the silence before and after the 射节 is weighed up to this long, s


@dataclass(frozen=True)
class Expected:
    """The planned silence around the 射节's 建鼓 strokes (seconds)."""

    quiet_before_s: float = 0.0   # no 建鼓 stroke this long before the 射节's first stroke
    quiet_after_s: float = 0.0    # nor this long after its last


def expected(timeline: Timeline, plan_s: npt.NDArray[np.float64]) -> Expected:
    """The :class:`Expected` of the 射节 whose 建鼓 strokes are ``plan_s`` (timeline s)."""
    if not len(plan_s):
        return Expected()
    kinds = {name: info.get("kind") for name, info in timeline.instruments.items()}
    main = np.array(sorted(n.time for n in timeline.notes
                           if kinds.get(n.instrument) == BEAT_DRUM_KIND))
    before = main[main < plan_s[0] - 1e-6]
    after = main[main > plan_s[-1] + 1e-6]
    quiet_before = min(QUIET_MAX_S, float(plan_s[0] - before[-1]) if len(before) else QUIET_MAX_S)
    quiet_after = min(QUIET_MAX_S, float(after[0] - plan_s[-1]) if len(after) else QUIET_MAX_S)
    return Expected(quiet_before, quiet_after)

"""The two mixes of a render (docs/render.md, "Two mixes").

- ``seat``: what a person at that seat would hear: every source at its physical sound power, 1/r,
  its travel time, the room (the engine's render as it is).
- ``guide``: produced for a listener who must follow the rite, as a documentary's dialogue mix is:
  :mod:`yuexuan.audio.mixes.guide` levels each cue's music and song, levels every call and formula,
  and ducks the rest under the calls, as gain envelopes the engine applies
  (:mod:`yuexuan.audio.engine.gain_envelope`).

Which one a command makes: ``--mix``, else the cue sheet's ``[ceremony]`` ``mix``, else the
command's default (:func:`chosen`).
"""

from __future__ import annotations

from yuexuan.rite.vocabulary import MIXES

SEAT, GUIDE = MIXES


def chosen(flag: str | None, sheet: str | None, default: str) -> str:
    """The mix a command makes: its ``--mix`` ``flag``, else the cue sheet's key ``sheet``, else the
    command's ``default``."""
    for value in (flag, sheet, default):
        if value is not None:
            return value
    raise AssertionError("a command has a default mix")


__all__ = ["MIXES", "SEAT", "GUIDE", "chosen"]

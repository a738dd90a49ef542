"""The cue sheet's ``[hits_midi]`` table: which MIDI note a hit sensor on each 侯 sends.

E-drum trigger modules send a note when a pad is struck; with a pad on each 侯,
``play --hits-midi PORT`` turns a note into a hit on that 侯 (:mod:`yuexuan.live.hits`).

```toml
[hits_midi]
notes = { 36 = 1, 38 = 2, 40 = 3 }   # MIDI note (0–127) → the 侯 it reports: its name, or its
                                     # place in the rite's 侯 (1 = the first, the farthest)
channel = 10                                    # optional: only this channel (1–16); default any
arrow_speed_m_s = 60.0                          # optional: the arrow's mean speed over the 侯道
```

See docs/cuesheet.md. Every problem raises :class:`~yuexuan.errors.UserError` naming the file,
line and key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from yuexuan.errors import UserError
from yuexuan.rite import tomlfile
from yuexuan.rite.tomlfile import Fields

HITS_KEYS = {"notes", "channel", "arrow_speed_m_s"}
# INFERENCE: no measured speed of a Zhou bow's arrow is known. Traditional (non-compound) bows of
# moderate draw weight launch arrows at roughly 45–65 m/s; 60 m/s as the mean over the 侯道 puts
# the flight to the 干 (50 步, 69.3 m) at 1.2 s and to the 大侯 (90 步, 124.7 m) at 2.1 s, the
# "1–2 s later at 50–90 步" a scorer sees (issue 13). docs/cuesheet.md says so.
DEFAULT_ARROW_SPEED_M_S = 60.0


@dataclass(frozen=True)
class HitsMidi:
    """A hit sensor's map: MIDI note → 侯, the channel it listens on, the arrow's speed."""

    notes: dict[int, str]             # int note 0..127 → 侯 name
    channel: int | None = None        # 0-based MIDI channel; None = any
    arrow_speed_m_s: float = DEFAULT_ARROW_SPEED_M_S
    places: dict[int, int] = field(default_factory=dict)   # note → the 侯's place (1-based) in the rite's

    def for_hou(self, hou: tuple[str, ...]) -> tuple[HitsMidi, list[str]]:
        """(the map with every note naming one of ``hou``, the rite's 侯 in order, by name; the
        notes naming none of them, left out, each a line saying so). A place beyond the rite's 侯 is
        left out silently: a pad on a 侯 this rank does not set up."""
        named = {note: hou[k - 1] for note, k in self.places.items() if k <= len(hou)}
        warnings = []
        for note, target in self.notes.items():
            if target in hou:
                named[note] = target
            else:
                warnings.append(f"note {note}: unknown 侯 {target!r} (this rite's: {', '.join(hou)})")
        return HitsMidi(dict(sorted(named.items())), self.channel, self.arrow_speed_m_s), warnings


def hits_midi(f: Fields) -> HitsMidi | None:
    """The ``[hits_midi]`` table (None when the sheet has none)."""
    if not f.data:
        return None
    f.unknown(HITS_KEYS)
    raw = f.get("notes", dict)
    notes: dict[int, str] = {}
    places: dict[int, int] = {}
    for key, target in raw.items():
        try:
            note = int(key.strip())
        except ValueError:
            note = -1
        if not 0 <= note <= 127:
            raise f.error("notes", f"key {key!r}: expected a MIDI note number 0–127")
        if not (isinstance(target, str) and target.strip()) and \
                not (isinstance(target, int) and not isinstance(target, bool) and target >= 1):
            raise f.error("notes", f"note {note}: {target!r}: expected a 侯's name or its place in the "
                                   "rite's 侯 (1 = the first)")
        if note in notes or note in places:
            raise f.error("notes", f"note {note} is given twice")
        if isinstance(target, int):
            places[note] = target
        else:
            notes[note] = target
    if not notes and not places:
        raise f.error("notes", "expected at least one note, e.g. { 36 = 1 }")
    channel = f.get("channel", int, None, lo=1, hi=16)
    speed = f.get("arrow_speed_m_s", float, DEFAULT_ARROW_SPEED_M_S, lo=1.0, hi=1000.0)
    return HitsMidi(notes, None if channel is None else channel - 1, speed, places)


def read(path: str | Path) -> HitsMidi:
    """The ``[hits_midi]`` table of the cue sheet at ``path`` (TOML); an error when it has none."""
    path = str(path)
    if not path.lower().endswith(".toml"):
        raise UserError("needs a cue sheet (.toml) with a [hits_midi] table (a saved timeline "
                        "has no note map)", file=path, key="--hits-midi")
    data, text = tomlfile.load(path)
    found = hits_midi(Fields(data, path, text, "").table("hits_midi", {}))
    if found is None:
        raise UserError("no [hits_midi] table: --hits-midi needs the note each 侯's sensor sends "
                        "(docs/cuesheet.md)", file=path, key="hits_midi")
    return found

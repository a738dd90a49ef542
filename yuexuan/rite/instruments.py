"""Instrument data: one TOML file per sounding body of the 轩县 (instruments/*.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from yuexuan.data import DataSource
from yuexuan.rite import tomlfile
from yuexuan.errors import UserError
from yuexuan.rite.tuning import Pitch, parse_pitch

FAMILIES = ("bell", "stone", "drum", "string", "pipe", "voice")
KINDS = ("磬", "钟", "鑮", "建鼓", "鼙", "鼗", "簜", "瑟", "歌", "呼")
XIAN = ("东", "西", "北", "南", "堂下", "堂上", "侯")   # 堂下: at the 堂's foot, not hung (the 簜)
SUSPENSIONS = ("编悬", "特悬")
_KEYS = {"name", "pinyin", "english", "family", "kind", "xian", "suspension", "count", "pitched",
         "octave", "pitch_set", "gm_program", "gm_drum_key", "facing", "position_m", "source",
         "notes", "synth"}


@dataclass(frozen=True)
class Instrument:
    """One sounding body (or a group played as one, such as the four 瑟)."""

    name: str                  # exact timeline name, e.g. 建鼓·东
    pinyin: str
    english: str
    family: str                # bell | stone | drum | string | pipe | voice
    kind: str                  # its role in a 县: 磬 钟 鑮 建鼓 鼙 鼗 簜 瑟 歌 呼
    xian: str                  # 东 | 西 | 北 | 南 (hung sides) | 堂下 | 堂上 | 侯
    position_m: tuple          # (x east, y north, z up), metres, rite/courtyard.toml frame
    facing: str
    source: str
    notes: str = ""
    suspension: str | None = None   # 编悬 | 特悬 | None
    count: int = 1
    pitched: bool = False
    octave: int = 0            # its 黄 sounds at huangzhong_hz × 2**octave
    pitch_set: tuple = ()      # Pitches it can sound (relative to its own octave)
    gm_program: int | None = None   # General MIDI program, 0..127
    gm_drum_key: int | None = None  # GM percussion key (channel 10) for unpitched bodies
    synth: dict = field(default_factory=dict)
    file: str = ""

    def can_sound(self, pitch: Pitch) -> bool:
        return pitch in self.pitch_set

    def facts(self) -> dict:
        """Plain dict for the timeline JSON: all that the outputs read of an instrument (the
        renderer synthesises from ``family``, ``pitched`` and ``synth`` and places by
        ``position_m``, never reading the instrument files)."""
        return {"pinyin": self.pinyin, "english": self.english, "family": self.family,
                "kind": self.kind, "xian": self.xian, "position_m": list(self.position_m),
                "facing": self.facing, "suspension": self.suspension, "count": self.count,
                "gm_program": self.gm_program, "gm_drum_key": self.gm_drum_key,
                "source": self.source, "pitched": self.pitched,
                "synth": {k: list(v) if isinstance(v, list) else v for k, v in self.synth.items()}}


def load_instrument(path: str | Path) -> Instrument:
    data, text = tomlfile.load(path)
    f = tomlfile.Fields(data, str(path), text, "")
    f.unknown(_KEYS)
    pitched = f.get("pitched", bool, False)
    pos = f.get("position_m", list)
    if len(pos) != 3 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pos):
        raise f.error("position_m", "expected [x, y, z] in metres")
    if any(abs(v) > 1000 for v in pos):
        raise f.error("position_m", "absurd position; expected metres within 1000 of the 堂")
    pitch_set = ()
    if pitched:
        raw = f.get("pitch_set", list)
        try:
            pitch_set = tuple(parse_pitch(p) for p in raw)
        except UserError as exc:
            raise f.error("pitch_set", exc.message) from None
        if not pitch_set:
            raise f.error("pitch_set", "a pitched instrument needs at least one 律")
    gm_program = f.get("gm_program", int, None, lo=0, hi=127)
    gm_drum_key = f.get("gm_drum_key", int, None, lo=27, hi=87)
    if pitched and gm_program is None:
        raise f.error("gm_program", "a pitched instrument needs a General MIDI program (0..127)")
    if not pitched and gm_drum_key is None:
        raise f.error("gm_drum_key", "an unpitched instrument needs a GM drum key (27..87)")
    return Instrument(
        name=f.get("name", str), pinyin=f.get("pinyin", str, ""), english=f.get("english", str, ""),
        family=f.get("family", str, choices=FAMILIES), kind=f.get("kind", str, choices=KINDS),
        xian=f.get("xian", str, choices=XIAN), position_m=tuple(float(v) for v in pos),
        facing=f.get("facing", str, ""), source=f.get("source", str), notes=f.get("notes", str, ""),
        suspension=f.get("suspension", str, None, choices=SUSPENSIONS),
        count=f.get("count", int, 1, lo=1, hi=64), pitched=pitched,
        octave=f.get("octave", int, 0, lo=-4, hi=4), pitch_set=pitch_set, gm_program=gm_program,
        gm_drum_key=gm_drum_key, synth=dict(f.get("synth", dict, {})), file=str(path))


def load_all(source: DataSource = DataSource()) -> dict:
    """All instruments of instruments/ of ``source`` (default: the packaged data), by name."""
    out = {}
    for p in source.files("instruments"):
        inst = load_instrument(p)
        if inst.name in out:
            raise UserError(f"duplicate instrument name {inst.name!r} (also in {out[inst.name].file})",
                            file=str(p), key="name")
        out[inst.name] = inst
    # layout order: east 县 north to south, then west, north, the hall, the targets
    order = sorted(out.values(), key=lambda i: (XIAN.index(i.xian), -i.position_m[1], i.position_m[0]))
    return {i.name: i for i in order}

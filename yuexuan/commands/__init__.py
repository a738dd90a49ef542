"""The sub-commands: the one table of their names and help, read by the CLI and by ``build``.

Each command is the module ``yuexuan.commands.<name>`` with ``add_arguments(parser)`` and
``run(args) -> int``. The CLI imports only the module of the command being run (some pull in scipy
or music21, which take seconds to load), so this table lives here, not in the modules.
"""

from __future__ import annotations

# name → one-line help, in the order ``yuexuan --help`` lists them
COMMANDS = {
    "build": "the main job: compile CUES (default: the packaged cues/dashe.toml) and write every output "
             "(MIDI, timeline, audio, guide) into a folder",
    "compile": "compile a cue sheet to a Standard MIDI File (type 1, MTS tuning) and the timeline JSON",
    "check": "check a log of shots against the rules of 释获 (不鼓不释 …) and announce each round",
    "render": "render the rite to a stereo WAV/FLAC (−16 LUFS, ≤ −1 dBTP) with .vtt/.cue chapters and stems",
    "note": "audition one note: INSTRUMENT 律 (e.g. 笙钟 夷) as a mono WAV/FLAC, dry "
            "(peak −1 dBFS at velocity 127)",
    "play": "play the timeline live to a MIDI port: operator GO / soft stop / hold / panic, clock, MTC, MSC",
    "layout": "draw the courtyard (堂, stairs, the three 县, 侯道, targets, listeners) as SVG",
    "guide": "write the audio guide: a static bilingual site with audio, captions, cue list and lit layout",
    "score": "write a score (MusicXML; --pdf through LilyPond) of the selected cues, 律 and cents marked",
    "variants": "list the variants (where the commentators disagree), their options and sources, and "
                "each rite's ranks with their pinyin aliases (the cue sheet's [ceremony] rank)",
}

# The commands whose ``build_step(timeline, cues_path, out_dir, source, progress=None, mix=None) -> [paths]``
# ``build`` runs
# after writing the MIDI and the timeline, in this order (the guide takes the audio that render
# wrote); ``source`` is the run's :class:`yuexuan.data.DataSource`.
BUILD_STEPS = ("render", "guide", "score", "layout")

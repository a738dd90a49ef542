"""Where the rite's data files live (instruments/, pieces/, rite/, cues/)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def data_root() -> Path:
    """The folder holding instruments/, pieces/, rite/ and cues/.

    ``$YUEXUAN_DATA`` wins; else the source checkout beside the package (editable installs);
    else ``<prefix>/share/yuexuan``.
    """
    env = os.environ.get("YUEXUAN_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent
    if (here / "instruments").is_dir():
        return here
    return Path(sys.prefix) / "share" / "yuexuan"


def instruments_dir() -> Path:
    return data_root() / "instruments"


def pieces_dir() -> Path:
    return data_root() / "pieces"


def rite_dir() -> Path:
    return data_root() / "rite"

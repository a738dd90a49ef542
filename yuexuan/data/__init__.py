"""Where the rite's data files come from: the package, overridden file by file by a folder.

The data (``instruments/``, ``pieces/``, ``ceremony/``, ``cues/`` at the top of the repository) is
installed with the package as ``yuexuan.data.instruments`` … (a setuptools ``package-dir``
mapping, see pyproject.toml) and read through :mod:`importlib.resources`, so an editable install
and a wheel find it alike. A :class:`DataSource` with an ``overlay`` folder takes
``overlay/instruments/笙钟.toml`` instead of the packaged file of that name and adds files found
only there; everything else comes from the package.

Each command builds its source once from ``--data DIR`` or ``$YUEXUAN_DATA`` (``--data`` wins;
:func:`yuexuan.commands.common.data_source`, the one place the variable is read) and hands it to
every loader. A loader given no source reads the packaged data alone: ``DataSource()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

FOLDERS = ("instruments", "pieces", "ceremony", "cues")
ENV_VAR = "YUEXUAN_DATA"      # the variable naming an overlay folder (read by the CLI only)
DEFAULT_CUES = "dashe.toml"


@dataclass(frozen=True)
class DataSource:
    """The packaged data, with the files of ``overlay`` (a folder laid out the same) in front."""

    overlay: Path | None = None

    def path(self, folder: str, name: str) -> Path:
        """The file ``folder/name``: the overlay's if it has one, else the packaged one."""
        if self.overlay is not None and (self.overlay / folder / name).is_file():
            return self.overlay / folder / name
        return _packaged(folder) / name

    def files(self, folder: str, pattern: str = "*.toml") -> list[Path]:
        """Every ``folder/pattern`` file, packaged and overlay merged by name, sorted by name."""
        found = {p.name: p for p in _packaged(folder).glob(pattern) if p.is_file()}
        if self.overlay is not None:
            found.update((p.name, p) for p in (self.overlay / folder).glob(pattern) if p.is_file())
        return [found[n] for n in sorted(found)]


def _packaged(folder: str) -> Path:
    """The installed folder of ``yuexuan.data.<folder>`` (wheels install unpacked, so a real path)."""
    if folder not in FOLDERS:
        raise ValueError(f"unknown data folder {folder!r}; expected one of {FOLDERS}")
    return Path(str(resources.files(f"{__name__}.{folder}")))


"""Where the rite's data files come from: the package, overridden file by file by a folder.

The data (``instruments/``, ``pieces/``, ``rite/``, ``cues/`` at the top of the repository) is
installed with the package as ``yuexuan.data.instruments`` … (a setuptools ``package-dir``
mapping, see pyproject.toml) and read through :mod:`importlib.resources`, so an editable install
and a wheel find it alike. A :class:`DataSource` with an ``overlay`` folder takes
``overlay/instruments/笙钟.toml`` instead of the packaged file of that name and adds files found
only there; everything else comes from the package.

The CLI builds the source from ``--data DIR`` or ``$YUEXUAN_DATA`` (``--data`` wins) and makes it
current for the run with :func:`using` (a context variable, so nothing outlives the command);
loaders take an explicit ``source=`` and otherwise use :func:`current`.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from yuexuan.errors import UserError

FOLDERS = ("instruments", "pieces", "rite", "cues")
ENV_VAR = "YUEXUAN_DATA"
DEFAULT_CUES = "dashe.toml"


@dataclass(frozen=True)
class DataSource:
    """The packaged data, with the files of ``overlay`` (a folder laid out the same) in front."""

    overlay: Path | None = None

    @classmethod
    def from_option(cls, folder: str | Path | None) -> DataSource:
        """``--data DIR`` when given, else ``$YUEXUAN_DATA``, else the packaged data alone."""
        chosen = folder or os.environ.get(ENV_VAR) or None
        if chosen is None:
            return cls()
        where = "--data" if folder else f"${ENV_VAR}"
        if not Path(chosen).is_dir():
            raise UserError("data folder not found", file=str(chosen), key=where)
        return cls(Path(chosen))

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


_CURRENT: contextvars.ContextVar[DataSource | None] = contextvars.ContextVar("yuexuan_data", default=None)


def current(source: DataSource | None = None) -> DataSource:
    """``source`` when a loader was given one; else the source made current by :func:`using`;
    outside one, ``$YUEXUAN_DATA`` over the package."""
    return source or _CURRENT.get() or DataSource.from_option(None)


@contextlib.contextmanager
def using(data: DataSource):
    """Make ``data`` the current source inside the ``with`` block (the CLI's run of one command).
    A context variable: threads started inside do not inherit it, so load data before fanning out."""
    token = _CURRENT.set(data)
    try:
        yield data
    finally:
        _CURRENT.reset(token)

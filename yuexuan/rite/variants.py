"""The commentators' variants as settings (rite/variants.toml)."""

from __future__ import annotations

from pathlib import Path

from yuexuan.data import DataSource
from yuexuan.rite import tomlfile


def load(path: str | Path | None = None, source: DataSource = DataSource()) -> dict:
    """{variant key: {question, default, options: {name: {source, …effect data}}}} of ``path``
    (default rite/variants.toml of ``source``)."""
    data, _ = tomlfile.load(Path(path) if path else source.path("rite", "variants.toml"))
    return data


def effect(variants: dict, chosen: dict, key: str) -> dict:
    """The effect table of the option chosen for ``key`` (the default when not chosen)."""
    v = variants[key]
    return v["options"][chosen.get(key, v["default"])]

"""The commentators' variants as settings (rite/variants.toml)."""

from __future__ import annotations

from pathlib import Path

from yuexuan import paths
from yuexuan.rite import tomlfile


def load(path: str | Path | None = None) -> dict:
    """{variant key: {question, default, options: {name: {source, …effect data}}}}."""
    data, _ = tomlfile.load(Path(path) if path else paths.rite_dir() / "variants.toml")
    return data


def effect(variants: dict, chosen: dict, key: str) -> dict:
    """The effect table of the option chosen for ``key`` (the default when not chosen)."""
    v = variants[key]
    return v["options"][chosen.get(key, v["default"])]

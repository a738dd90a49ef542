"""User-facing errors: one clear message, exit status 2, never a traceback."""

from __future__ import annotations

EXIT_BAD_INPUT = 2


class UserError(Exception):
    """A mistake in the user's input.

    Parameters
    ----------
    message : str
        What is wrong and what was expected.
    file : str or None
        The file at fault.
    line : int or None
        1-based line number in ``file``, where known.
    key : str or None
        Dotted key or column naming the field at fault (e.g. ``cue[3].piece``).
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 key: str | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.key = key

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = str(self.file)
            if self.line:
                where += f":{self.line}"
            where += ": "
        key = f"{self.key}: " if self.key else ""
        return f"{where}{key}{self.message}"


def unknown_cue(cue_id: str, known: list[str], key: str = "--cues", file: str | None = None) -> UserError:
    """The one error for a cue id that the cue sheet or timeline does not have."""
    return UserError(f"unknown cue {cue_id!r}; the cues are: {', '.join(known)}", file=file, key=key)

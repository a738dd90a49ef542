"""Synthesis of one note of an instrument: the families' models, the drums, the building blocks,
and the source's sound power."""

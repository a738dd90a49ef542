"""The 建鼓 found in a recording of the whole 轩县 (``check --beats-from``): decoding, the
low-band onsets, the drum model, and the alignment to the planned strokes."""

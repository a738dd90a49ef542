"""The shot checker's own part: drum strokes heard in a recording (:mod:`yuexuan.check.drum`), the
evidence for a disputed call and its plot; the rules themselves are :mod:`yuexuan.scoring`."""

"""Audio outputs of the Timeline: synthesis, courtyard space, loudness, the streaming render (its
caption sidecars are :mod:`yuexuan.formats.captions`)."""

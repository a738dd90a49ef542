"""Audio outputs of the Timeline: synthesis, courtyard space, loudness, the streaming render and its sidecars."""

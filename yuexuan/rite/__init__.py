"""The rite as data: tuning, instruments, pieces, variants, suspensions and the cue sheet parser (stage 1)."""

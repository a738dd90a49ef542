"""The voices: a syllable's reading and articulation, the glottal source, one singer or speaker's
take, an ensemble of singers."""

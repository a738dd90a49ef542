"""The keys an instrument's ``[synth]`` table may have, by family: the parameters the synthesis
reads (``yuexuan.audio.synthesis``, ``yuexuan.audio.voice``) and a few that only describe the model
for the reader (marked below). Any other key is a typo, refused when the file is read
(:func:`yuexuan.rite.instruments.load_instrument`); tests/test_data_keys.py checks that every key
the synthesis reads is listed here."""

from __future__ import annotations

#: every family: the sound power (yuexuan.audio.synthesis.source_level) and its citation, a gain
COMMON = frozenset({"sound_power_db", "sound_power_velocity", "sound_power_source", "gain_db", "source"})

SYNTH_KEYS: dict[str, frozenset[str]] = {
    "bell": COMMON | {"partials", "amplitudes", "decay_s", "second_tone_ratio",
                      # descriptive: which strike, the second tone, the interval, the doublet pairs
                      # (in ``partials``), for the reader and the checks of the loader
                      "strike", "second_tone", "interval", "doublets"},
    "stone": COMMON | {"partials", "amplitudes", "decay_s", "loss_factor", "attack_noise"},
    "string": COMMON | {"decay_s", "t60_s", "brightness", "body_hz"},
    "pipe": COMMON | {"harmonics", "vibrato_cents", "vibrato_hz", "breath_noise", "breath_band_hz",
                      "attack_s", "release_t60_s"},
    # yuexuan.audio.synthesis.free_reed: the reed, its slot, its pipe, the attack, the 和音
    "free_reed": COMMON | {"reed_offset", "slot_depth", "gap", "edge", "pipe_detune", "pipe_radius_m",
                           "attack_cycles", "release_s", "dyad", "dyad_level"},
    "drum": COMMON | {"modes", "fundamental_hz", "amplitudes", "decay_s", "contact_ms", "upper_level",
                      "upper_decay_s", "upper_decay_exponent", "upper_slope_db", "click",
                      "rattle_strokes", "rattle_rate_hz", "head_ratio", "mode_shapes"},
    "voice": COMMON | {"vibrato_hz", "vibrato_cents", "vibrato_cv", "vibrato_delay_s", "glide_cents",
                       "jitter_percent", "shimmer_percent", "aspiration", "high_band", "shout",
                       "attack_s",
                       # an ensemble (count > 1 singing each): yuexuan.audio.voice.ensemble
                       "ensemble", "pitch_scatter_cents", "onset_spread_s", "level_sd_db", "seat_m"},
}

"""The live show: a compiled timeline played on MIDI ports under an operator (scheduler, ports,
outlet, sync, operator, the show), with its live judging (OSC, a hit sensor, the judge)."""

"""MIDI outputs of the Timeline: the Standard MIDI File, and the live show (scheduler, ports, sync, operator)."""

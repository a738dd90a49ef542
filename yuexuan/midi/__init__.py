"""The Standard MIDI File of the Timeline."""

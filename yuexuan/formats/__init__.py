"""What the output stages share, below all of them: the timeline's MIDI messages and tuning,
the caption files (WebVTT, CUE), the SVG style."""

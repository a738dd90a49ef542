"""yuexuan (乐县): the soundscape of the 大射仪 compiled from a cue sheet to one Timeline."""

__version__ = "0.1.0"

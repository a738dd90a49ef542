"""Loudness: ITU-R BS.1770 metering (integrated, true peak) and the gain fit to a loudness target."""

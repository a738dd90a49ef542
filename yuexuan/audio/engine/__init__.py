"""The render engine: the plan of a timeline's notes, their waveforms' cache, the two passes over
blocks, the spool, the worker processes, the writers of the output files."""

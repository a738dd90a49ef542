"""The render engine, behind one door: a timeline (and its plan) in, blocks of the mix or a file out.

:func:`yuexuan.audio.engine.render.render` is the way in (``Options`` says what to render, and
``Options.envelopes`` how a produced mix shapes it: :mod:`yuexuan.audio.engine.gain_envelope`);
:func:`yuexuan.audio.engine.mix.blocks` gives a plan's mix block by block. Behind the door, and
nowhere else in the package, is the machinery for speed: the worker processes
(:mod:`~yuexuan.audio.engine.workers`, the one fork mechanism), the memory they share
(:mod:`~yuexuan.audio.engine.arena`), the spool (:mod:`~yuexuan.audio.engine.spool`), the scheduling of
the stretches of both passes (:mod:`~yuexuan.audio.engine.passes`), and every process-wide setting
(BLAS's threads, for the render's length). The sound's stages — synthesis, the voice,
the room, loudness — know nothing of it (an import-linter contract in pyproject.toml), and ruff's
TID251 keeps its tricks (``os.fork``, ``ctypes``, ``mmap``, ``posix_fallocate``, …) inside it.
"""

"""SciPy's compiled second-order-section loop, put in force for a render: the one private part of
SciPy the project uses, and only here, behind the engine's door.

The voices' formant filter calls the kernel some 5000 times in the ceremony (a call for each
stretch of a syllable where the formants hold), and the K-weighting meter once a block. The public
``scipy.signal.sosfilt`` gives the same samples (tests/test_dsp.py) but spends 50–300 µs a call
checking and moving its arguments, and importing ``scipy.signal`` costs about 0.7 s of CPU. Measured
side by side on ``render cues/dashe.toml --cues wusuan`` (CPU, user): 2.5 s with this kernel,
7.7 s with ``scipy.signal.sosfilt``, 4.2 s (and 105 MB more memory) with the same loop compiled
by Numba, loading its cached code and LLVM in every process. So the module that holds the loop
(``scipy/signal/_sosfilt*.so``) is loaded by file, without running ``scipy.signal``'s
``__init__``; where SciPy's layout does not allow it, the public function stays in force.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
from collections.abc import Iterator

from yuexuan.audio import dsp


@functools.cache
def load() -> dsp.Kernel:
    """SciPy's own compiled loop, as :func:`yuexuan.audio.dsp.sos_rows` calls a kernel; the public
    :func:`yuexuan.audio.dsp.public_rows` where it cannot be loaded."""
    try:
        import scipy

        folder = os.path.join(os.path.dirname(scipy.__file__), "signal")
        name = next(f for f in os.listdir(folder)
                    if f.startswith("_sosfilt.") and f.endswith((".so", ".pyd")))
        spec = importlib.util.spec_from_file_location("scipy.signal._sosfilt", os.path.join(folder, name))
        if spec is None or spec.loader is None:
            raise ImportError(name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kernel: dsp.Kernel = module._sosfilt  # noqa: SLF001 (SciPy's loop: this module is its door)
        return kernel
    except (ImportError, OSError, StopIteration, AttributeError):     # pragma: no cover (layout)
        return dsp.public_rows


@contextlib.contextmanager
def in_force() -> Iterator[dsp.Kernel]:
    """SciPy's loop as :data:`yuexuan.audio.dsp.SOS_KERNEL` for the ``with`` block (and the
    workers forked and the threads started in it by the engine: they share the loaded module)."""
    token = dsp.SOS_KERNEL.set(load())
    try:
        yield dsp.SOS_KERNEL.get()
    finally:
        dsp.SOS_KERNEL.reset(token)

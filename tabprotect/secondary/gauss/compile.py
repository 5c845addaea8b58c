"""How the elimination kernel runs: compiled by numba, or as plain Python.

numba is a dependency; where it cannot be imported (or ``TABPROTECT_NO_NUMBA=1``) the
kernel runs as plain Python: same results, many times slower.  The compiled functions are
cached on disk (``cache=True``): the first process compiles, later ones load the cache.
"""
from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path
from types import ModuleType

try:
    if os.environ.get("TABPROTECT_NO_NUMBA") == "1":  # as if numba could not be imported
        raise ImportError
    from numba import njit as _njit
except ImportError:  # pragma: no cover - exercised by a subprocess test
    _njit = None

#: numba can be imported: the kernel is compiled
NUMBA = _njit is not None


def _identity(fn):
    return fn


def decorators(compiled: bool = True):
    """``(jit, jit_inline)``: numba's decorators (the second for small helpers of hot
    loops, inlined into their caller) when ``compiled`` and numba imports, else no-ops."""
    if not (compiled and NUMBA):
        return _identity, _identity
    return (_njit(cache=True, nogil=True),
            _njit(cache=True, nogil=True, inline="always"))


#: numba's decorators, for kernels elsewhere in the package
jit, jit_inline = decorators()


@lru_cache(maxsize=None)
def plain_kernel() -> ModuleType:
    """The kernel module's source run without numba's decorators (a separate module)."""
    path = Path(__file__).with_name("kernel.py")
    spec = importlib.util.spec_from_file_location(f"{__package__}.kernel_plain", path)
    module = importlib.util.module_from_spec(spec)
    module.COMPILED = False  # read by kernel.py before it decorates anything
    spec.loader.exec_module(module)
    return module


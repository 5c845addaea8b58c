"""How the elimination kernel runs: compiled by numba, or as plain Python.

numba is a dependency; where it is not installed (or ``TABPROTECT_NO_NUMBA=1``) the kernel
runs as plain Python: same results, many times slower.

numba is imported when a kernel is first called, not when the package is: a run that
needs no kernel (every method but ``gauss``, and the leaf-cube searches of the others)
does not pay for importing it.  The first call compiles every kernel decorated so far
together (their globals then hold numba's dispatchers, so kernels call each other
compiled); a kernel decorated after that is handed to numba at once.

The compiled functions are cached on disk (``cache=True``): the first process compiles,
later ones load the cache.  numba keeps the cache beside the source when that folder is
writable and in the user's cache folder when it is not (a read-only installation), or in
``NUMBA_CACHE_DIR`` when that is set.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import threading
from functools import lru_cache
from pathlib import Path
from types import ModuleType


def _numba_installed() -> bool:
    if os.environ.get("TABPROTECT_NO_NUMBA") == "1":  # as if numba could not be imported
        return False
    return importlib.util.find_spec("numba") is not None


#: numba is installed (and not switched off): the kernels are compiled on first use
NUMBA = _numba_installed()

#: the kernels decorated before numba was imported, compiled together on first use
_PENDING: list["_LazyKernel"] = []
#: numba's ``njit``, once imported (None before, or where it cannot be imported)
_NJIT = None
_LOCK = threading.Lock()


class _LazyKernel:
    """A kernel function that numba compiles when any kernel is first called."""

    def __init__(self, fn, options: dict):
        self.py_func = fn
        self.options = options
        self.compiled = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if self.compiled is None:
            with _LOCK:             # threads calling kernels at once compile them once
                if self.compiled is None:
                    _compile_pending()
        return self.compiled(*args, **kwargs)


def _compile_pending() -> None:
    """Import numba and hand it every pending kernel; each kernel's module then holds
    the compiled function under the kernel's name.  Where numba cannot be imported after
    all, the kernels stay plain Python (same results)."""
    global _NJIT
    try:
        from numba import njit
    except ImportError:  # pragma: no cover - a broken numba installation
        njit = None
    _NJIT = njit
    pending = list(_PENDING)
    _PENDING.clear()
    for kernel in pending:
        kernel.compiled = kernel.py_func if njit is None else \
            njit(**kernel.options)(kernel.py_func)
    for kernel in pending:
        namespace = kernel.py_func.__globals__
        for name, value in list(namespace.items()):
            if isinstance(value, _LazyKernel) and value.compiled is not None:
                namespace[name] = value.compiled


def _lazy(**options):
    def decorate(fn):
        if _NJIT is not None:           # numba is loaded already: compile as usual
            return _NJIT(**options)(fn)
        kernel = _LazyKernel(fn, options)
        _PENDING.append(kernel)
        return kernel
    return decorate


def _identity(fn):
    return fn


def decorators(compiled: bool = True):
    """``(jit, jit_inline)``: numba's decorators, applied on first use (the second for
    small helpers of hot loops, inlined into their caller) when ``compiled`` and numba is
    installed, else no-ops."""
    if not (compiled and NUMBA):
        return _identity, _identity
    return (_lazy(cache=True, nogil=True),
            _lazy(cache=True, nogil=True, inline="always"))


#: numba's decorators, for kernels elsewhere in the package
jit, jit_inline = decorators()


def numba_loaded() -> bool:
    """numba has been imported for the kernels (a kernel has been called)."""
    return _NJIT is not None


@lru_cache(maxsize=None)
def plain_kernel() -> ModuleType:
    """The kernel module's source run without numba's decorators (a separate module)."""
    path = Path(__file__).with_name("kernel.py")
    spec = importlib.util.spec_from_file_location(f"{__package__}.kernel_plain", path)
    module = importlib.util.module_from_spec(spec)
    module.COMPILED = False  # read by kernel.py before it decorates anything
    spec.loader.exec_module(module)
    return module

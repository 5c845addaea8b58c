"""The limits of the search of product moves (:mod:`tabprotect.secondary.product_moves`):
a settings type of its own, so that :class:`~tabprotect.secondary.protect_settings.
ProtectSettings` names it without loading the search and its compiled kernel."""
from __future__ import annotations

from dataclasses import dataclass, fields

from tabprotect.errors import InputError

__all__ = ["ProductSearchLimits"]


@dataclass(frozen=True)
class ProductSearchLimits:
    """How far the search of product moves goes, and when it is compiled."""

    #: per primary, at most this many steps tried (the search is exhaustive below it)
    budget: int = 20_000
    #: at most this many cells in a move (4-D tables of 3-level hierarchies: a few hundred)
    max_corners: int = 4096
    #: seconds of plain-Python search per process before the compiled search is loaded:
    #: numba's import and cached kernels cost a new process about 0.4 s CPU, more than
    #: the plain search of an everyday table's primaries takes
    plain_seconds: float = 0.4
    #: primaries searched per plain-Python batch (the clock is read between batches)
    plain_batch: int = 8

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            seconds = f.name == "plain_seconds"
            if isinstance(value, bool) or not isinstance(value, (int, float) if seconds
                                                         else int) \
                    or not value >= (0 if seconds else 1):
                kind = "a number >= 0" if seconds else "an integer >= 1"
                raise InputError(f"ProductSearchLimits.{f.name} must be {kind}, "
                                 f"not {value!r}")

"""Controlled tabular adjustment (CTA): publish every cell, protect by least adjustment.

``protect(table, method="cta", cost="relative", time_limit=60, options=CTAOptions(...))``
or :func:`cta` directly.  Every sensitive cell is published at least its protection
level away from its true value (up or down, one choice per cell), every relation of the
table holds for the published values, fixed cells keep theirs, and the weighted L1 or L2
distance to the true values is least (Dandekar & Cox 2002; Castro 2006).  The result is
a :class:`CTAResult`; its audit (:func:`tabprotect.audit_adjusted.audit_adjusted`)
checks protection, additivity and bounds from the published values alone.
"""
from __future__ import annotations

from tabprotect.adjust.method import cta
from tabprotect.adjust.options import WEIGHTS, CTAOptions, cell_weights
from tabprotect.adjust.result import CTAResult

__all__ = ["cta", "CTAOptions", "CTAResult", "cell_weights", "WEIGHTS"]

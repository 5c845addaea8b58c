"""Gaussian-elimination secondary suppression (Langsrud's method), exact and sparse.

The intruder can compute a suppressed cell exactly iff its vector (the cell as a linear
combination of the inner cells, :mod:`.vectors`) is in the span of the published cells'
vectors.  Candidates for publication are taken one at a time, most expensive first
(forced published ``P`` and empty ``Z`` cells before everything); a candidate is
published unless that would put some primary cell in the span of the published cells,
in which case it becomes a secondary suppression (:mod:`.method`).  With the
single-contributor attack (``singleton=True``) a candidate is also refused when it would
put a primary in the span of the published cells and one suppressed single-contributor
cell (:mod:`.singletons`).  The result has no exact linear disclosure of any primary; on
count tables an attack step then gives every primary witnesses of its levels against
each single contributor (:mod:`.attack`).
On general tables a width step first gives every primary a feasible table that reaches
its protection levels (:mod:`.widths`); elsewhere the levels are enforced by
:func:`tabprotect.secondary.protect`'s audit and repair.

Elimination is incremental (:mod:`.elimination`), with each primary kept reduced against
the published basis; a primary enters the span exactly when its reduced vector becomes
zero, which for a new basis vector ``r`` happens iff the primary's reduced vector is
proportional to ``r`` -- that is the test.  Publishing ``r`` updates every vector holding
its pivot.

Arithmetic is modulo the prime ``P = 2^31 - 1`` on flat arrays (:mod:`.kernel`).  Why
modular arithmetic is acceptable: a vector in the rational span of the published vectors
is in their span modulo ``P`` too unless ``P`` divides a denominator of the combination
(a minor of the published vectors: for these 0/+-1 hierarchical vectors small integers,
so a prime of 2^31 - 1 dividing one is negligible); a vector outside the rational span
that looks inside it modulo ``P`` (same condition) only makes the method suppress one
cell more than needed; and protect() audits every pattern by LP anyway (the audit, not
the method, is the judge).  The kernel is compiled by numba (:mod:`.compile`).
"""
from tabprotect.secondary.gauss.method import GaussOptions, gauss
from tabprotect.secondary.gauss.vectors import (CellVectors, RelationVectors, cell_vectors,
                                                marginals)

__all__ = ["GaussOptions", "gauss", "CellVectors", "RelationVectors", "cell_vectors",
           "marginals"]

"""Audit of a rounded table: what an intruder knows of every cell.

The intruder sees the published rounded values ``a_i``, knows the base ``b`` and the
rounding method, and knows that the *true* table is additive (``A x = 0``) and integral.
The method alone confines each true value to a range (tau-Argus manual sec. 2.14):

=====================================  ===================================================
method                                 true value ``x`` of a cell published as ``a``
=====================================  ===================================================
deterministic (ties up)                ``a - b/2 <= x < a + b/2``, i.e. integers
                                       ``[ceil(a - b/2), ceil(a + b/2) - 1]`` (and ``>= 0``)
random, controlled (zero-restricted)   ``a = 0``: ``[0, b-1]``; otherwise ``[a-b+1, a+b-1]``
controlled with K extra steps          ``a < (K+1) b``: ``[0, (K+1) b - 1]``;
                                       otherwise ``[a-(K+1) b+1, a+(K+1) b-1]``
random, totals from inner cells        inner cells as random; totals: no own range (when
                                       inner cells are unpublished, the hidden rounded
                                       inner cells bound the totals: ``hidden``)
small-count (threshold t)              inner ``a = 0``: ``[0, t-1]``; ``a = b``:
                                       ``[1, max(b, t-1)]``; other inner values are exact
                                       (large counts are published unrounded); totals: no
                                       own range (they are sums of rounded cells)
unpublished cell                       the table's a-priori bounds (default ``[0, inf)``)
=====================================  ===================================================

The audit intersects these ranges with additivity and integrality: for every cell the
integer minimum and maximum over ``{x integer : A x = 0, lo <= x <= hi}``.  Intervals can
be far narrower than the ranges.  The audit judges what the method promises to protect
(:func:`promised_cells`): every published cell the method rounds, and for small-count
rounding only the small counts -- inner cells published 0 or ``b`` and totals whose true
value may lie below the threshold (large counts, and totals made of them only, are
published exactly by design).  It flags

* **narrower** cells: the interval is strictly inside the method's own (finite) range,
* **exact** disclosure: a promised cell whose interval is a single value, or an
  unpublished cell that can be derived exactly,
* **pinned small values**: the interval lies inside ``[1, small_max]`` (default 1 and 2),
  so the intruder learns that the cell holds a group of one or two units.

How it stays fast and exact, in this order:

0. **No binding total.**  When every total's range contains the sums of its inner cells'
   range ends (small-count rounding; random rounding with totals from inner cells), the
   inner cells are independent: their bounds are their range ends, a total's the sums.
   See :func:`~tabprotect.audit_rounded.certificates.independent_inner_bounds`.
0b. **Propagation.**  Integer bound propagation over the relations narrows each range to
   one that every feasible integer table keeps (:mod:`.propagate`); the search runs
   there, and an integral table at one of its ends proves that end.
1. **Certificates without LPs.**  The data owner knows a feasible integer table: the
   published values when they are additive and inside their ranges (controlled
   rounding), else the true table.  From it, feasible *moves* carry cells to their range
   ends: ``t`` units added to one inner cell and to every total containing it (all
   relations stay balanced), or the alternating move over a box of sibling inner cells
   (no total changes).  A cell whose range end is reached by such a feasible integer
   table has that end as its exact bound (no feasible table leaves the range).  For
   zero-restricted controlled rounding with every cell published this settles *every*
   bound: the published table shifted by ``+-(b-1)`` along one inner cell's totals is
   feasible.  See :func:`move_certificates`.
2. **Local LPs** (components of more than ``local_min_batches x local_lp_batch`` cells of
   :class:`RoundedAuditSettings`, 32 000 by default): the unsettled cells first by
   blocks of the table's array (few relations each: small LPs), then in random batches
   with random helper cells; every other cell is held at the feasible table, so any
   solution of such a sub-problem is a feasible table of the whole, and integral optima
   certify range ends like step 1.
2b. **Integer pushes** (components up to ``push_max_cells``): short branch-and-bound runs
   (node limit, loose gap) with the open cells pushed down, then up, at random weights;
   every integral table found is checked exactly and settles the cells at its range ends
   (:mod:`.pushes`; on 3-D tables, whose LP vertices are fractional, one push settles
   hundreds of bounds that would each cost an integer program).
3. **LPs on the whole component** for what is left: fixed cells are substituted out, the
   rest splits into independent components, one persistent HiGHS model per component.
   A few LPs push *all* unresolved cells down (then up) at once; cells at their range end
   in an integral feasible solution are settled; the remaining cells get their own
   min/max LP, warm-started; a fractional optimum triggers the integer program for that
   bound (integrality is exact, never assumed).

Modules: ``api`` (``audit_rounded``), ``result``, ``settings``, ``ranges`` (the method's
ranges, the promised cells), ``propagate`` (step 0b), ``certificates`` (step 1), ``local``
(step 2), ``pushes`` (step 2b, components of ``push_min_cells`` to ``push_max_cells``
cells), ``component`` (step 3), ``hidden`` (published totals of unpublished rounded inner
cells).
"""
from tabprotect.audit_rounded.api import audit_rounded
from tabprotect.audit_rounded.certificates import array_blocks, move_certificates
from tabprotect.audit_rounded.ranges import AUDIT_METHODS, method_ranges, promised_cells
from tabprotect.audit_rounded.result import RoundedAuditResult
from tabprotect.audit_rounded.settings import RoundedAuditSettings

__all__ = ["audit_rounded", "RoundedAuditResult", "RoundedAuditSettings", "method_ranges",
           "promised_cells", "move_certificates", "array_blocks", "AUDIT_METHODS"]

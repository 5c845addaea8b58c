"""Rounding of frequency tables: deterministic, random, controlled and small-count.

Every method rounds to multiples of a base ``b``.  With ``floor_b(x) = b * floor(x / b)``
and the remainder ``r = x - floor_b(x)``:

* **deterministic** -- every cell (inner cells and totals independently) to the nearest
  multiple; a tie (``r == b/2``, even bases only) goes *up* ("round half up", as in
  conventional rounding).  Not additive: published totals are generally not the sums of
  the published parts.
* **random** -- unbiased random rounding: down to ``floor_b(x)`` with probability
  ``1 - r/b``, up with ``r/b``; multiples unchanged; seeded (the seed is reported).  With
  ``margins_from_interior=True`` only the inner cells are rounded and every total is the sum
  of its rounded inner cells (additive, totals not multiples of ``b``).
* **controlled** -- zero-restricted (each cell to one of its two adjacent multiples,
  multiples unchanged) and additive through every level of every hierarchy, with minimum
  total (optionally weighted) absolute deviation.  Only non-multiples are variables:
  ``R_i = floor_b(x_i) + b d_i`` with ``d_i in {0, 1}``, so ``A R = 0`` becomes the sparse
  equality system ``A_nm d = -A floor_b(x) / b`` and the deviation ``|R_i - x_i| =
  r_i + d_i (b - 2 r_i)`` is linear in ``d``.  Two-dimensional tables are a network flow
  (node-arc incidence matrix, totally unimodular): the LP relaxation solved by simplex has an
  integral optimal vertex, which is checked, so no branching is needed.  Large LPs (from
  ``RoundingSettings.sifting_min_columns`` free cells) are solved by sifting (:func:`sifted_lp`): HiGHS sees
  only a working set of cells, started from nearest rounding, and reduced-cost pricing of
  all cells proves the optimum for the whole LP.  That holds for
  two-way tables with subtotals in at most one dimension; with hierarchies in both
  dimensions, and in three and more dimensions, the MILP is needed and a zero-restricted
  solution may not exist; the error says so
  and ``k_step=K`` allows cells to move up to ``K`` further multiples (each extra step
  penalised).  Large hierarchical tables are solved by partitioning along a hierarchy
  (top slice first, then each parent's children with the parent's rounded slice fixed):
  exactly additive by construction, optimal per part rather than globally.
* **small-count** -- only inner cells with ``0 < x < threshold`` are rounded, to 0 or
  ``b``; every published aggregate is the sum of its rounded inner cells.  Which small cells
  go up is chosen by a MILP that keeps the number rounded up equal to the rounded sum of the
  small counts and minimises the aggregates' absolute deviations (the grand total most).
  Each aggregate's deviation lies above the convex hull of ``|b k - s|`` over integer
  ``k``, so the LP relaxation is tight (integral on two-way tables); elsewhere swaps improve
  the relaxation's choice, which starts the branch and bound.

Every result carries its deviation and, unless ``audit=False``, the rounded-table audit
(:func:`tabprotect.audit_rounded.audit_rounded`): what an intruder can derive from the
published values.

Modules: ``api`` (``round_table``), ``result`` (``RoundingResult``), ``settings``
(``RoundingSettings``), ``simple`` (deterministic and random), ``controlled``,
``partition`` and ``sifting`` (controlled rounding), ``small_count`` and
``small_count_search`` (small-count rounding), ``checks``.
"""
from tabprotect.rounding.api import round_table
from tabprotect.rounding.controlled import ControlledRounder
from tabprotect.rounding.result import METHODS, RoundingResult, ZeroRestrictedInfeasible
from tabprotect.rounding.settings import RoundingSettings
from tabprotect.rounding.sifting import SiftedLPResult, sifted_lp
from tabprotect.rounding.simple import deterministic_round, random_round
from tabprotect.rounding.small_count import small_count_round

__all__ = ["round_table", "RoundingResult", "RoundingSettings", "ZeroRestrictedInfeasible",
           "METHODS", "deterministic_round", "random_round", "small_count_round",
           "sifted_lp", "SiftedLPResult", "ControlledRounder"]

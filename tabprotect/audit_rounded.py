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
random, totals from inner cells        inner cells as random; totals: no own range
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
2. **Local LPs** (components of more than 32 000 cells): the unsettled cells first by
   blocks of the table's array (few relations each: small LPs), then in random batches
   with random helper cells; every other cell is held at the feasible table, so any
   solution of such a sub-problem is a feasible table of the whole, and integral optima
   certify range ends like step 1.
3. **LPs on the whole component** for what is left: fixed cells are substituted out, the
   rest splits into independent components, one persistent HiGHS model per component.
   A few LPs push *all* unresolved cells down (then up) at once; cells at their range end
   in an integral feasible solution are settled; the remaining cells get their own
   min/max LP, warm-started; a fractional optimum triggers the integer program for that
   bound (integrality is exact, never assumed).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve
from tabprotect.model.relations import linked_components
from tabprotect.errors import InputError
from tabprotect.model.table import Table, aggregate_leaves

_TOL = 1e-6
#: local LPs (see _ComponentAudit.local_certificates): cells per random batch; they run on
#: components of more than 4 batches of cells
LOCAL_LP_BATCH = 8000
#: cells per block of the table's array for the first local LPs
LOCAL_LP_BLOCK = 10_000
#: seconds for the branch and bound of a local sub-problem with a fractional LP optimum
LOCAL_MIP_SECONDS = 5.0
AUDIT_METHODS = ("deterministic", "random", "controlled", "small-count")


@dataclass
class RoundedAuditResult:
    """Intervals of the true values of a rounded table, as an intruder can compute them.

    Arrays have one entry per cell.

    Attributes
    ----------
    published_array : the rounded values the audit assumed published (nan where
        unpublished; also ``published_values``)
    range_lower, range_upper : the range the method alone implies for each cell
    lower, upper : integer min and max of each cell given everything the intruder knows
    is_published : mask of the cells the intruder sees
    promised : the published cells the method promises to protect (see
        :func:`promised_cells`)
    narrower : interval strictly inside the method's own finite range
    exact : single-value interval of a promised cell, or of an unpublished cell
    pinned_small : interval inside ``[1, small_max]``
    true_inside : when true values are known: each lies in its interval (a check of the
        audit and of the rounding; None otherwise)
    table : the audited table as published (codes and structure; rounded values only)
    params : the settings of the audit (base, method, k_step, small_max)

    It follows the result protocol of :mod:`tabprotect.results` (``passed``,
    ``published()``, ``params``, ``seconds``, ``notes``, ``summary()``, ``to_frame()``).
    """

    published_array: np.ndarray
    range_lower: np.ndarray
    range_upper: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    is_published: np.ndarray
    narrower: np.ndarray
    exact: np.ndarray
    pinned_small: np.ndarray
    promised: np.ndarray
    base: int
    method: str
    k_step: int
    small_max: int
    n_components: int
    n_lp: int
    n_mip: int
    runtime: float
    true_inside: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    n_certified: int = 0
    n_local_lp: int = 0
    table: Table | None = None
    params: dict[str, Any] = field(default_factory=dict)
    true_values: np.ndarray | None = field(default=None, repr=False)  # confidential

    @property
    def seconds(self) -> float:
        return self.runtime

    def published(self) -> pd.DataFrame:
        """What the intruder was given: codes and the published rounded ``value`` (NaN
        where unpublished)."""
        if self.table is None:
            raise ValueError("this audit holds no table: call to_frame(table=...)")
        out = self.table.to_frame(())
        out["value"] = self.published_values
        return out

    @property
    def published_values(self) -> np.ndarray:
        """The rounded values the audit assumed published (nan where unpublished)."""
        return self.published_array

    @property
    def passed(self) -> bool:
        """No exact disclosure and no pinned small value."""
        return not bool(self.exact.any() or self.pinned_small.any())

    def summary(self) -> dict[str, Any]:
        width = self.upper - self.lower
        fin = np.isfinite(width) & self.is_published
        return {
            "cells": int(len(self.lower)),
            "published": int(self.is_published.sum()),
            "promised_protection": int(self.promised.sum()),
            "narrower_than_method": int(self.narrower.sum()),
            "exactly_disclosed": int(self.exact.sum()),
            "pinned_small_values": int(self.pinned_small.sum()),
            "min_width_published": float(width[fin].min()) if fin.any() else None,
            "mean_width_published": float(width[fin].mean()) if fin.any() else None,
            "passed": self.passed,
            "components": self.n_components,
            "lp_solved": self.n_lp,
            "mip_solved": self.n_mip,
            "bounds_certified_without_lp": self.n_certified,
            "local_lp_solved": self.n_local_lp,
            "seconds": round(self.runtime, 3),
        }

    def to_frame(self, confidential: bool = False, *, table: Table | None = None,
                 only_flagged: bool = False) -> pd.DataFrame:
        """Cells with ``published, range_lower, range_upper, lower, upper`` and the flags.

        ``confidential=True`` adds ``confidential_value``, the true value of every cell
        (from ``table`` when given, else the true values the audit was given; never for
        files that leave the office). ``table``: the table whose codes label the rows
        (default: the audited one). ``only_flagged`` keeps the flagged cells only."""
        labels = self.table if table is None else table
        if labels is None:
            raise ValueError("this audit holds no table: call to_frame(table=...)")
        out = labels.to_frame(())
        if confidential:
            if table is None and self.true_values is None:
                raise ValueError("this audit was given no true values: call "
                                 "to_frame(True, table=<the original table>)")
            out["confidential_value"] = self.true_values if table is None else table.value
        out["published"] = self.published_array
        out["range_lower"] = self.range_lower
        out["range_upper"] = self.range_upper
        out["lower"] = self.lower
        out["upper"] = self.upper
        out["promised"] = self.promised
        out["narrower"] = self.narrower
        out["exact"] = self.exact
        out["pinned_small"] = self.pinned_small
        if only_flagged:
            out = out[self.narrower | self.exact | self.pinned_small]
        return out


def method_ranges(published: np.ndarray, base: int, method: str, *, k_step: int = 0,
                  threshold: int | None = None, inner: np.ndarray | None = None,
                  margins_from_interior: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Integer range of each true value implied by the method alone (ORACLES/tau-Argus).

    Examples
    --------
    >>> lo, hi = method_ranges(np.array([0.0, 5.0, 10.0]), 5, "controlled")
    >>> lo.tolist(), hi.tolist()
    ([0.0, 1.0, 6.0], [4.0, 9.0, 14.0])
    """
    a = np.asarray(published, dtype=float)
    b = float(base)
    n = len(a)
    if inner is None:
        inner = np.ones(n, dtype=bool)
    if method == "deterministic":
        lo = np.ceil(a - b / 2.0 - 1e-9)
        hi = np.ceil(a + b / 2.0 - 1e-9) - 1.0
    elif method in ("random", "controlled"):
        reach = (int(k_step) + 1) * b
        lo = np.where(a < reach - _TOL, 0.0, a - reach + 1.0)
        hi = a + reach - 1.0
        if method == "random" and margins_from_interior:
            lo = np.where(inner, lo, 0.0)
            hi = np.where(inner, hi, np.inf)
    elif method == "small-count":
        t = float(threshold if threshold is not None else base)
        zero = np.abs(a) <= _TOL
        at_base = np.abs(a - b) <= _TOL
        lo = np.where(zero, 0.0, np.where(at_base, 1.0, a))
        hi = np.where(zero, t - 1.0, np.where(at_base, max(b, t - 1.0), a))
        # zero stays zero when nothing below the threshold is rounded (t <= 1)
        hi = np.where(zero & (t <= 1), 0.0, hi)
        lo = np.where(inner, lo, 0.0)
        hi = np.where(inner, hi, np.inf)
    else:
        raise InputError(f"audit-rounded: method must be one of {', '.join(AUDIT_METHODS)}, "
                         f"not {method!r}")
    return np.maximum(lo, 0.0), hi


def promised_cells(published: np.ndarray, range_lower: np.ndarray, range_upper: np.ndarray,
                   lower: np.ndarray, method: str, *, base: int, threshold: int | None = None,
                   inner: np.ndarray | None = None) -> np.ndarray:
    """Cells whose true value the method promises not to give away exactly.

    Deterministic, random and controlled rounding round every cell: each cell whose range
    holds more than one value is promised.  Small-count rounding protects small counts
    only: an inner cell published 0 or ``b`` (its true value may be a small count) and a
    total whose derived lower bound ``lower`` is below the threshold (its true value may be
    small).  Other inner cells are large counts published unrounded, and a total whose
    true value is at least the threshold is a large count too: both are exact by design.

    Examples
    --------
    >>> a = np.array([7.0, 3.0, 0.0, 10.0, 7.0])      # inner 7, 3, 0; totals 10 and 7
    >>> inner = np.array([True, True, True, False, False])
    >>> lo, hi = method_ranges(a, 3, "small-count", threshold=3, inner=inner)
    >>> derived_lower = np.array([7.0, 1.0, 0.0, 8.0, 1.0])
    >>> promised_cells(a, lo, hi, derived_lower, "small-count", base=3, threshold=3,
    ...                inner=inner).tolist()
    [False, True, True, False, True]
    """
    a = np.asarray(published, dtype=float)
    several = np.asarray(range_upper) - np.asarray(range_lower) > _TOL
    if method != "small-count":
        return several
    if inner is None:
        inner = np.ones(len(a), dtype=bool)
    t = float(threshold if threshold is not None else base)
    rounded = (np.abs(a) <= _TOL) | (np.abs(a - float(base)) <= _TOL)
    may_be_small = np.asarray(lower, dtype=float) < t - _TOL
    return several & np.where(inner, rounded, may_be_small)


def audit_rounded(rounded, base: int | None = None, method: str | None = None, *,
                  published: np.ndarray | None = None, k_step: int | None = None,
                  threshold: int | None = None, margins_from_interior: bool | None = None,
                  true_values: np.ndarray | None = None, small_max: int = 2,
                  time_limit: float | None = None, threads: int | None = 1,
                  progress: Callable[[int, int], None] | None = None,
                  certificates: bool = True) -> RoundedAuditResult:
    """Integer intervals of the true values of a rounded table, as an intruder sees them.

    Parameters
    ----------
    rounded : a :class:`~tabprotect.rounding.RoundingResult` (base, method and its
        parameters are taken from it, and the true values are checked to lie inside
        their intervals), or a :class:`Table` whose ``value`` holds the published rounded
        values (give ``base`` and ``method``)
    base, method : the rounding base and method the intruder assumes
    published : mask of the cells the intruder sees (e.g. only the margins); default all
    k_step : controlled rounding with up to ``k_step`` extra steps (default: from the
        result, 0 otherwise)
    threshold : small-count threshold (default: from the result, else ``base``)
    margins_from_interior : random rounding whose totals are sums of rounded inner cells
    true_values : the true table, to check that each lies in its interval (optional)
    small_max : values ``1..small_max`` are "small" for the pinned-value flag
    time_limit : seconds for the whole audit (cells not reached keep their method range,
        and the result says so)
    threads : solver threads
    progress : ``progress(done_components, total_components)``
    certificates : settle bounds where one feasible move from a known feasible table
        (the published values when additive, else ``true_values``) reaches the range end
        (:func:`move_certificates`), then by local LPs around that table (large
        components); False runs LPs on whole components for every bound

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r}, [10, 5, 5], kind="frequency")   # published
    >>> res = audit_rounded(t, base=5, method="controlled")
    >>> res.lower.tolist(), res.upper.tolist()
    ([6.0, 1.0, 1.0], [14.0, 9.0, 9.0])
    """
    start = time.perf_counter()
    params: dict[str, Any] = {}
    if isinstance(rounded, Table):
        table = rounded
    elif hasattr(rounded, "rounded_table"):
        # a RoundingResult (recognised by its fields: rounding calls this audit, so this
        # module does not import rounding)
        table = rounded.rounded_table
        base = rounded.base if base is None else base
        method = rounded.method if method is None else method
        params = rounded.params
        if true_values is None:
            true_values = rounded.confidential_table.value
        if k_step is None and method == "controlled":
            # the intruder assumes the relaxation only when the rounding needed it
            k_step = int(rounded.params.get("k_step", 0)) if rounded.max_steps > 0 else 0
    else:
        raise InputError("audit_rounded: give a RoundingResult or a Table of rounded values")
    if base is None or method is None:
        raise InputError("audit_rounded: give the rounding base and method")
    base = int(base)
    if base < 1:
        raise InputError("audit_rounded: the base must be a positive integer")
    k_step = int(k_step or 0)
    if threshold is None:
        threshold = params.get("threshold")
    if margins_from_interior is None:
        margins_from_interior = bool(params.get("margins_from_interior", False))
    n = table.n_cells
    a = table.value.astype(float)
    if published is None:
        is_pub = np.ones(n, dtype=bool)
    else:
        is_pub = np.asarray(published, dtype=bool)
        if is_pub.shape != (n,):
            raise InputError(f"audit_rounded: 'published' must have {n} entries")
    inner = table.is_inner
    r_lo, r_hi = method_ranges(a, base, method, k_step=k_step, threshold=threshold,
                               inner=inner, margins_from_interior=margins_from_interior)
    box_lo = np.where(is_pub, r_lo, np.ceil(table.lb - 1e-9))
    box_hi = np.where(is_pub, r_hi, np.where(np.isfinite(table.ub),
                                             np.floor(table.ub + 1e-9), np.inf))
    box_lo = np.maximum(box_lo, np.ceil(table.lb - 1e-9))
    box_hi = np.minimum(box_hi, table.ub)
    notes: list[str] = []
    if method == "small-count" and threshold is not None and base > threshold:
        notes.append(f"small-count with base {base} > threshold {threshold}: a published "
                     f"{base} means 1..{threshold - 1} or exactly {base}; the audit uses the "
                     f"hull [1, {base}] (intervals may be reported wider than they are)")
    if np.any(box_lo > box_hi):
        i = int(np.flatnonzero(box_lo > box_hi)[0])
        raise InputError(f"audit_rounded: cell {table.cell_name(i)} has an empty range "
                         f"(published value inconsistent with base {base} and method {method})")
    lower, upper = box_lo.copy(), box_hi.copy()
    counters = {"lp": 0, "mip": 0}
    deadline = None if time_limit is None else start + time_limit
    free = box_lo < box_hi
    comps = _components(table.relations, free)
    _check_fixed_rows(table, free, box_lo)
    # certificates without LPs: from one feasible integer table, feasible moves that
    # carry a cell to the end of its range prove that end is its exact bound
    start_point = _feasible_start(table, [a, true_values], box_lo, box_hi)
    lo_cert = np.zeros(n, dtype=bool)
    hi_cert = np.zeros(n, dtype=bool)
    if start_point is not None and certificates:
        lo_cert, hi_cert = move_certificates(table, start_point, box_lo, box_hi)
    n_certified = int(lo_cert[free].sum() + hi_cert[free].sum())
    block_ids = array_blocks(table, LOCAL_LP_BLOCK) \
        if start_point is not None and certificates else None
    for k, cells in enumerate(comps):
        if lo_cert[cells].all() and hi_cert[cells].all():
            pass  # every bound is its range end: lower/upper already hold the box
        else:
            comp = _ComponentAudit(table, free, box_lo, box_hi, cells, threads)
            lo_known, hi_known = lo_cert[cells], hi_cert[cells]
            if start_point is not None and certificates:
                comp.local_certificates(start_point[cells], lo_known, hi_known, counters,
                                        deadline, blocks=None if block_ids is None
                                        else block_ids[cells])
            lo, hi = comp.bounds(counters, deadline, lo_known, hi_known)
            lower[cells] = lo
            upper[cells] = hi
        if progress is not None:
            progress(k + 1, len(comps))
    if deadline is not None and (time.perf_counter() > deadline or counters.get("cut")):
        notes.append("time limit reached: some cells keep their method range (the audit may "
                     "understate what an intruder can derive)")
    promised = is_pub & promised_cells(a, r_lo, r_hi, lower, method, base=base,
                                       threshold=threshold, inner=inner)
    narrower = is_pub & np.isfinite(r_hi) & ((lower > r_lo + _TOL) | (upper < r_hi - _TOL))
    single = np.abs(upper - lower) <= _TOL
    exact = single & (promised | ~is_pub)
    pinned = (lower >= 1 - _TOL) & (upper <= small_max + _TOL)
    inside = None
    if true_values is not None:
        tv = np.asarray(true_values, dtype=float)
        inside = (tv >= lower - _TOL) & (tv <= upper + _TOL)
        if not inside.all():
            i = int(np.flatnonzero(~inside)[0])
            notes.append(f"{int((~inside).sum())} true value(s) outside their interval (first "
                         f"{table.cell_name(i)}): the rounding does not follow the stated "
                         f"method/base")
    return RoundedAuditResult(
        published_array=np.where(is_pub, a, np.nan), range_lower=np.where(is_pub, r_lo, box_lo),
        range_upper=np.where(is_pub, r_hi, box_hi), lower=lower, upper=upper,
        is_published=is_pub, narrower=narrower, exact=exact, pinned_small=pinned,
        promised=promised, base=base,
        method=method, k_step=k_step, small_max=int(small_max), n_components=len(comps),
        n_lp=counters["lp"], n_mip=counters["mip"], runtime=time.perf_counter() - start,
        true_inside=inside, notes=notes, n_certified=n_certified,
        n_local_lp=counters.get("local_lp", 0), table=table,
        true_values=None if true_values is None else np.asarray(true_values, dtype=float),
        params={"base": base, "method": method, "k_step": k_step,
                "small_max": int(small_max), "published": int(is_pub.sum())})


# ---------------------------------------------------------------- certificates
def move_certificates(table: Table, start: np.ndarray, lower: np.ndarray,
                      upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells whose range ends are proven reachable by one move from a feasible table.

    In a product table, adding ``t`` units to one inner cell ``d`` and to every total
    containing it (its ancestors in every hierarchy) keeps the table additive.  From an
    integer table ``start`` inside ``[lower, upper]`` the move is feasible for every
    integer ``t`` up to ``up_d = min(upper - start)`` over those cells (down:
    ``min(start - lower)``).  A cell ``c`` reaches its upper end when some inner cell
    below it has ``up_d >= upper_c - start_c``: the move by exactly that amount is a
    feasible integer table with ``c`` at ``upper_c``, so ``upper_c`` is ``c``'s exact
    maximum (no feasible table leaves the range).  Likewise for the lower end.

    Both passes work on the table's array shape, one hierarchy at a time: a minimum
    over ancestors (parents before children), then a maximum over inner descendants.
    Tables without dimensions, or whose relations are not the hierarchies' sums, get no
    certificates (all False).

    Returns ``(lower_reached, upper_reached)`` boolean arrays over the cells.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> h = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"x": h}, [10, 5, 5], kind="frequency")
    >>> lo, hi = move_certificates(t, t.value, t.value - 4, t.value + 4)
    >>> lo.tolist(), hi.tolist()
    ([True, True, True], [True, True, True])
    """
    n = table.n_cells
    none = (np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
    if not table.dimensions or n == 0:
        return none
    hs = [d.hierarchy for d in table.dimensions]
    shape = tuple(len(h) for h in hs)
    if int(np.prod(shape)) != n:
        return none
    # the relations must be exactly the hierarchies' sums: A K u = 0 for the aggregation
    # K of a random inner vector u (fails with probability 0 otherwise)
    inner = table.is_inner
    u = np.random.default_rng(12345).normal(size=n)
    if table.n_relations and np.abs(table.relations @ aggregate_leaves(u, hs)).max() > 1e-6:
        return none
    x0 = np.asarray(start, dtype=float)
    hi_int = np.floor(upper + 1e-9)
    lo_int = np.ceil(lower - 1e-9)
    down = np.where(np.isnan(x0 - lo_int), 0.0, x0 - lo_int)
    up = np.where(np.isnan(hi_int - x0), 0.0, hi_int - x0)
    out = []
    for slack in (down, up):
        move = _min_over_ancestors(slack.reshape(shape), hs)
        move = np.where(inner.reshape(shape), move, -np.inf)
        best = _max_over_descendants(move, hs).ravel()
        out.append(best >= slack - 1e-9)
    _cycle_certificates(hs, shape, np.flatnonzero(inner), down, up, out[0], out[1])
    return out[0], out[1]


def _cycle_certificates(hs, shape, inner_cells, down, up, lo_ok, hi_ok,
                        trials: int = 8, seed: int = 7) -> None:
    """More certificates for inner cells: the alternating move over a box of inner
    cells.  With a partner leaf ``i'_d`` that shares the parent of the cell's leaf
    ``i_d`` in every dimension, adding ``t`` to the corners with an even number of
    partner coordinates and subtracting ``t`` from the others changes no total (every
    relation sees one ``+t`` and one ``-t`` or nothing).  The cell reaches its end when
    every corner has the slack for ``t`` = the cell's own slack.  ``trials`` random
    partner choices per cell; updates ``lo_ok``/``hi_ok`` in place."""
    k = len(hs)
    if len(inner_cells) == 0 or k * 2 ** k > 64:
        return
    coords = np.unravel_index(inner_cells, shape)
    sib_tables = []
    for h in hs:
        # per code: its sibling leaves (padded), and how many
        sibs = [[]] * len(h)
        for p, kids in h.edges():
            leaves = [c for c in kids if h.is_leaf[c]]
            for c in leaves:
                sibs[c] = [o for o in leaves if o != c]
        width = max(1, max(len(x) for x in sibs))
        table = np.full((len(h), width), -1, dtype=np.int64)
        count = np.zeros(len(h), dtype=np.int64)
        for c, lst in enumerate(sibs):
            table[c, :len(lst)] = lst
            count[c] = len(lst)
        sib_tables.append((table, count))
    has_partner = np.ones(len(inner_cells), dtype=bool)
    for d in range(k):
        has_partner &= sib_tables[d][1][coords[d]] > 0
    rng = np.random.default_rng(seed)
    corners = [np.array([(m >> d) & 1 for d in range(k)]) for m in range(2 ** k)]
    for _ in range(trials):
        todo = has_partner & ~(lo_ok[inner_cells] & hi_ok[inner_cells])
        if not todo.any():
            return
        idx = np.flatnonzero(todo)
        partner = []
        for d in range(k):
            table, count = sib_tables[d]
            own = coords[d][idx]
            pick = np.floor(rng.random(len(idx)) * count[own]).astype(np.int64)
            partner.append(table[own, pick])
        cell = inner_cells[idx]
        need_up, need_down = up[cell], down[cell]
        ok_up = np.ones(len(idx), dtype=bool)
        ok_down = np.ones(len(idx), dtype=bool)
        for sel in corners[1:]:
            corner = np.ravel_multi_index(
                tuple(np.where(sel[d], partner[d], coords[d][idx]) for d in range(k)), shape)
            if sel.sum() % 2 == 0:   # moves with the cell
                ok_up &= up[corner] >= need_up - 1e-9
                ok_down &= down[corner] >= need_down - 1e-9
            else:                    # moves against it
                ok_up &= down[corner] >= need_up - 1e-9
                ok_down &= up[corner] >= need_down - 1e-9
        hi_ok[cell[ok_up]] = True
        lo_ok[cell[ok_down]] = True


def array_blocks(table: Table, cells_per_block: int = 10_000) -> np.ndarray | None:
    """Block number of every cell: each dimension's codes (pre-order, so subtrees stay
    together) cut into equal runs, a block being one run per dimension.  None for tables
    without dimensions.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> h = Hierarchy.flat(["a", "b", "c"], total="T")
    >>> t = Table.from_arrays({"x": h, "y": h}, np.ones(16), kind="frequency")
    >>> array_blocks(t, cells_per_block=4).reshape(4, 4).tolist()
    [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]
    """
    if not table.dimensions:
        return None
    shape = [len(d.hierarchy) for d in table.dimensions]
    per_dim = max(1.0, (table.n_cells / cells_per_block) ** (1.0 / len(shape)))
    ids = np.zeros(table.n_cells, dtype=np.int64)
    for d, n in enumerate(shape):
        runs = int(min(n, np.ceil(per_dim)))
        run_of_code = (np.arange(n) * runs) // n
        ids = ids * runs + run_of_code[table.positions[d]]
    return ids


def _min_over_ancestors(arr: np.ndarray, hs) -> np.ndarray:
    arr = arr.copy()
    for d, h in enumerate(hs):
        moved = np.moveaxis(arr, d, 0)  # a view: writes go into arr
        for code in range(1, len(h)):  # pre-order: a parent comes before its children
            moved[code] = np.minimum(moved[code], moved[int(h.parent[code])])
    return arr


def _max_over_descendants(arr: np.ndarray, hs) -> np.ndarray:
    arr = arr.copy()
    for d, h in enumerate(hs):
        moved = np.moveaxis(arr, d, 0)
        depth = h.depth
        for p in sorted((p for p, _ in h.edges()), key=lambda p: -depth[p]):
            kids = list(h.children[p])
            moved[p] = np.maximum(moved[p], moved[kids].max(axis=0))
    return arr


def _feasible_start(table: Table, candidates, lower, upper) -> np.ndarray | None:
    """The first candidate that is an integer, additive table inside the box."""
    for x in candidates:
        if x is None:
            continue
        x = np.asarray(x, dtype=float)
        if x.shape != (table.n_cells,) or not np.all(np.isfinite(x)):
            continue
        if np.abs(x - np.round(x)).max(initial=0.0) > 1e-9:
            continue
        if np.any(x < lower - 1e-9) or np.any(x > upper + 1e-9):
            continue
        if table.n_relations and np.abs(table.relations @ x).max() > 1e-6:
            continue
        return x
    return None


# ---------------------------------------------------------------- internals
def _components(A: sp.csr_matrix, free: np.ndarray) -> list[np.ndarray]:
    return linked_components(A, free)


def _check_fixed_rows(table: Table, free: np.ndarray, box_lo: np.ndarray) -> None:
    """Relations whose cells are all known exactly must balance."""
    A = table.relations
    if A.shape[0] == 0:
        return
    touches_free = (abs(A) @ free.astype(float)) > 0.5
    resid = A @ np.where(free, 0.0, box_lo)
    bad = ~touches_free & (np.abs(resid) > _TOL)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        t = int(table.relation_total[r])
        raise InputError(f"audit_rounded: the published values of total {table.cell_name(t)} "
                         f"and its parts cannot come from an additive table with this method")


class _ComponentAudit:
    def __init__(self, table, free, box_lo, box_hi, cells, threads):
        A = table.relations
        sub = A[:, cells].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        self.M = sub[rows]
        fixed = ~free
        self.rhs = -np.asarray(A[rows][:, fixed] @ box_lo[fixed], dtype=float) \
            if fixed.any() else np.zeros(len(rows))
        self.lo = box_lo[cells].astype(float)
        self.hi = box_hi[cells].astype(float)
        self.k = len(cells)
        self.threads = threads
        self._mip = None

    def _lp(self, integer: bool) -> LinearProgram:
        return LinearProgram(c=np.zeros(self.k), A=self.M, row_lower=self.rhs,
                             row_upper=self.rhs, col_lower=self.lo, col_upper=self.hi,
                             integrality=np.ones(self.k, bool) if integer else None)

    def local_certificates(self, start, lo_done, hi_done, counters, deadline,
                           blocks: np.ndarray | None = None, batch: int | None = None,
                           helpers: int = 2) -> None:
        """Certify range ends with small LPs around a feasible integer table ``start``.

        Each sub-problem frees a set of cells and holds every other cell at ``start``, so
        any of its solutions is a feasible table of the whole component; its unsettled
        cells are pushed down, then up, all at once, and every cell at a range end in an
        *integral* optimum has that end as its exact bound.  First by ``blocks`` (cells
        of one block of the table's array touch few relations: small, fast LPs), then the
        rest in random batches with ``helpers`` times as many random other cells (up to
        three passes: cells pushed together compete for the slack of shared totals).
        Updates ``lo_done``/``hi_done`` in place.  Only for large components: small ones
        go straight to the LPs on the whole component.
        """
        batch = LOCAL_LP_BATCH if batch is None else batch
        if self.k <= 4 * batch:
            return
        rng = np.random.default_rng(2024)
        M = self.M.tocsc()

        def push(cols, n_obj, sense, done):
            if _late(deadline):
                counters["cut"] = 1
                return False
            held = np.ones(self.k, dtype=bool)
            held[cols] = False
            sub = M[:, cols].tocsr()
            rows = np.flatnonzero(np.diff(sub.indptr) > 0)
            rhs = (self.rhs - M @ np.where(held, start, 0.0))[rows]
            c = np.zeros(len(cols))
            c[:n_obj] = 1.0
            lp = LinearProgram(c=c, A=sub[rows], row_lower=rhs, row_upper=rhs,
                               col_lower=self.lo[cols], col_upper=self.hi[cols],
                               sense=sense)
            res = solve(lp, time_limit=_remaining(deadline), threads=self.threads)
            counters["lp"] += 1
            counters["local_lp"] = counters.get("local_lp", 0) + 1
            if res.status != "optimal" or res.x is None:
                return True
            if np.abs(res.x - np.round(res.x)).max(initial=0.0) > _TOL:
                # fractional vertex (not a network): any integer solution of the
                # sub-problem is a certificate, optimal or not, so a short branch and
                # bound run is enough
                lp.integrality = np.ones(len(cols), dtype=bool)
                limit = LOCAL_MIP_SECONDS if deadline is None else \
                    min(LOCAL_MIP_SECONDS, _remaining(deadline))
                res = solve(lp, time_limit=limit, mip_gap=0.05, threads=self.threads)
                counters["mip"] += 1
                if res.x is None or res.status not in ("optimal", "time_limit"):
                    return True
            x = start.copy()
            x[cols] = res.x
            if np.abs(x - np.round(x)).max(initial=0.0) <= _TOL:
                lo_done[:] |= np.abs(x - self.lo) <= _TOL
                hi_done[:] |= np.isfinite(self.hi) & (np.abs(x - self.hi) <= _TOL)
            return True

        if blocks is not None:
            order = np.argsort(blocks, kind="stable")
            cuts = np.flatnonzero(np.diff(blocks[order])) + 1
            for members in np.split(order, cuts):
                for sense, done in (("min", lo_done), ("max", hi_done)):
                    todo = members[~done[members]]
                    if len(todo) == 0:
                        continue
                    rest = np.setdiff1d(members, todo)
                    if not push(np.concatenate([todo, rest]), len(todo), sense, done):
                        return
        for _pass, sense, done in [(p, *sd) for p in range(3)
                                   for sd in (("min", lo_done), ("max", hi_done))]:
            todo = np.flatnonzero(~done)
            rng.shuffle(todo)
            for first in range(0, len(todo), batch):
                group = todo[first:first + batch]
                group = group[~done[group]]
                if len(group) == 0:
                    continue
                n_help = max(helpers * len(group), 2 * batch)
                others = np.setdiff1d(rng.choice(self.k, size=min(self.k, n_help),
                                                 replace=False), group)
                if not push(np.concatenate([group, others]), len(group), sense, done):
                    return

    def bounds(self, counters, deadline, lo_known=None, hi_known=None):
        """Exact integer bounds of the component's cells; ``lo_known``/``hi_known`` mark
        cells whose range end is already proven to be their bound."""
        k = self.k
        lo_done = np.zeros(k, dtype=bool) if lo_known is None else lo_known.copy()
        hi_done = np.zeros(k, dtype=bool) if hi_known is None else hi_known.copy()
        out_lo = self.lo.copy()
        out_hi = self.hi.copy()
        if lo_done.all() and hi_done.all():
            return out_lo, out_hi  # every bound is its range end
        # dual simplex on every re-solve: after an objective change over thousands of
        # columns, primal simplex from the old basis was 10-40x slower in our runs
        model = HighsModel(self._lp(False), threads=self.threads, simplex_strategy=1)

        def absorb(x):
            # an integral feasible table at a cell's range end proves that end is exact
            if x is None or np.abs(x - np.round(x)).max(initial=0.0) > _TOL:
                return
            lo_done[:] |= np.abs(x - self.lo) <= _TOL
            hi_done[:] |= np.isfinite(self.hi) & (np.abs(x - self.hi) <= _TOL)

        # bulk pushes: all unresolved cells down together, then up, while it helps
        for _ in range(6):
            progress = False
            for sense, done in (("min", lo_done), ("max", hi_done)):
                todo = np.flatnonzero(~done)
                if len(todo) == 0 or _late(deadline):
                    continue
                before = int(done.sum())
                model.set_objective(indices=todo, values=np.ones(len(todo)), sense=sense)
                res = model.solve(time_limit=_remaining(deadline))
                counters["lp"] += 1
                if res.status == "infeasible":
                    raise InputError("audit_rounded: no additive integer table is consistent "
                                     "with the published values, base and method")
                if res.status == "optimal":
                    absorb(res.x)
                else:
                    counters["cut"] = 1
                progress |= int(done.sum()) > before
            if not progress:
                break
        # the rest: one LP per bound, warm
        for sense, done, out in (("min", lo_done, out_lo), ("max", hi_done, out_hi)):
            for j in np.flatnonzero(~done):
                if done[j]:
                    continue  # settled by an earlier solution in this loop
                if _late(deadline):
                    break
                model.set_objective(indices=[j], values=[1.0], sense=sense)
                res = model.solve(time_limit=_remaining(deadline))
                counters["lp"] += 1
                if res.status == "unbounded":
                    out[j] = -np.inf if sense == "min" else np.inf
                    done[j] = True
                    continue
                if res.status != "optimal":
                    counters["cut"] = 1
                    continue
                xj = float(res.x[j])
                if np.abs(res.x - np.round(res.x)).max(initial=0.0) > _TOL:
                    xj = self._integer_bound(j, sense, counters)
                else:
                    absorb(res.x)
                out[j] = xj
                done[j] = True
        out_lo = np.where(lo_done, np.where(np.isfinite(out_lo), np.ceil(out_lo - _TOL),
                                            out_lo), self.lo)
        out_hi = np.where(hi_done, np.where(np.isfinite(out_hi), np.floor(out_hi + _TOL),
                                            out_hi), self.hi)
        # a bound never leaves the method's range (an unfinished MILP reports +-inf)
        return np.maximum(out_lo, self.lo) + 0.0, np.minimum(out_hi, self.hi) + 0.0

    def _integer_bound(self, j, sense, counters) -> float:
        if self._mip is None:
            self._mip = HighsModel(self._lp(True), threads=self.threads)
        self._mip.set_objective(indices=[j], values=[1.0], sense=sense)
        res = self._mip.solve()
        counters["mip"] += 1
        if res.status != "optimal":
            return -np.inf if sense == "min" else np.inf
        return float(round(res.x[j]))


def _remaining(deadline) -> float | None:
    """Seconds left for one solve (None = no limit); a solve cut short reports no bound,
    so the cell keeps its method range and the audit notes the time limit."""
    if deadline is None:
        return None
    return max(0.1, deadline - time.perf_counter())


def _late(deadline) -> bool:
    return deadline is not None and time.perf_counter() > deadline

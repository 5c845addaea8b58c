"""``audit_rounded``: the integer intervals of the true values of a rounded table."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tabprotect.audit_rounded.certificates import array_blocks, feasible_start, \
    independent_inner_bounds, move_certificates
from tabprotect.audit_rounded.component import ComponentAudit, Counters, check_fixed_rows
from tabprotect.audit_rounded.hidden import hidden_parts_bounds, hides_rounded_parts
from tabprotect.audit_rounded.local import LocalCertifier
from tabprotect.audit_rounded.propagate import propagated_ranges
from tabprotect.audit_rounded.pushes import IntegerPushes
from tabprotect.audit_rounded.ranges import method_ranges, promised_cells
from tabprotect.audit_rounded.result import TOL, RoundedAuditResult
from tabprotect.audit_rounded.settings import RoundedAuditSettings
from tabprotect.errors import InputError
from tabprotect.model.relations import linked_components
from tabprotect.model.table import Table

__all__ = ["audit_rounded"]


@dataclass
class _Assumed:
    """What the intruder assumes: the published table, the base and the method."""

    table: Table
    base: int
    method: str
    k_step: int
    threshold: int | None
    margins_from_interior: bool
    true_values: np.ndarray | None


def _assumed(rounded, base, method, k_step, threshold, margins_from_interior,
             true_values) -> _Assumed:
    params: dict[str, Any] = {}
    if isinstance(rounded, Table):
        table = rounded
    elif hasattr(rounded, "rounded_table"):
        # a RoundingResult (recognised by its fields: rounding calls this audit, so this
        # package does not import rounding)
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
    # a rounded publication shows every cell's number, an empty one as 0 like a count
    # rounded to 0: the intruder does not know which counts are non-empty
    table = table.replace(empty="suppress")
    if base is None or method is None:
        raise InputError("audit_rounded: give the rounding base and method")
    base = int(base)
    if base < 1:
        raise InputError("audit_rounded: the base must be a positive integer")
    if threshold is None:
        threshold = params.get("threshold")
    if margins_from_interior is None:
        margins_from_interior = bool(params.get("margins_from_interior", False))
    return _Assumed(table, base, method, int(k_step or 0), threshold, margins_from_interior,
                    true_values)


def audit_rounded(rounded, base: int | None = None, method: str | None = None, *,
                  published: np.ndarray | None = None, k_step: int | None = None,
                  threshold: int | None = None, margins_from_interior: bool | None = None,
                  true_values: np.ndarray | None = None, small_max: int = 2,
                  time_limit: float | None = None, threads: int | None = 1,
                  progress: Callable[[int, int], None] | None = None,
                  certificates: bool = True,
                  settings: RoundedAuditSettings | None = None) -> RoundedAuditResult:
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
    settings : tuning of the local LPs (:class:`RoundedAuditSettings`; default
        ``RoundedAuditSettings()``), recorded in ``params``

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
    settings = RoundedAuditSettings() if settings is None else settings
    case = _assumed(rounded, base, method, k_step, threshold, margins_from_interior,
                    true_values)
    scale = _grid_scale(case.true_values)
    if scale != 1:
        case = _scaled(case, scale)
    table, base, method = case.table, case.base, case.method
    n = table.n_cells
    a = table.value.astype(float)
    is_pub = _published_mask(published, n)
    inner = table.is_inner
    r_lo, r_hi = method_ranges(a, base, method, k_step=case.k_step, threshold=case.threshold,
                               inner=inner, margins_from_interior=case.margins_from_interior)
    notes: list[str] = []
    seen = _seen_cells(method, is_pub, inner, notes)
    box_lo, box_hi = _boxes(table, seen, r_lo, r_hi)
    if method == "small-count" and case.threshold is not None and base > case.threshold:
        notes.append(_hull_note(base, case.threshold, scale))
    if np.any(box_lo > box_hi):
        i = int(np.flatnonzero(box_lo > box_hi)[0])
        raise InputError(f"audit_rounded: cell {table.cell_name(i)} has an empty range "
                         f"(published value inconsistent with base {base / scale:g} and method "
                         f"{method})")
    counters = Counters()
    deadline = None if time_limit is None else start + time_limit
    bounds = _Bounds(table, box_lo, box_hi, counters, deadline, threads, settings)
    if hides_rounded_parts(method, case.margins_from_interior, is_pub, inner):
        lower, upper, n_components, n_certified = bounds.hidden_parts(
            a, is_pub, base, certificates, progress)
    else:
        lower, upper, n_components, n_certified = bounds.run(
            [a, case.true_values], certificates, progress)
    if deadline is not None and (time.perf_counter() > deadline or counters.cut):
        notes.append("time limit reached: some cells keep their method range (the audit may "
                     "understate what an intruder can derive)")
    promised = seen & promised_cells(a, r_lo, r_hi, lower, method, base=base,
                                     threshold=case.threshold, inner=inner)
    narrower = seen & np.isfinite(r_hi) & ((lower > r_lo + TOL) | (upper < r_hi - TOL))
    single = np.abs(upper - lower) <= TOL
    exact = single & (promised | ~seen)
    inside = _true_inside(table, case.true_values, lower, upper, notes)
    if scale != 1:
        notes.append(f"the true values have decimals: the audit takes them on their grid of "
                     f"{1 / scale:g} (as an intruder who knows their precision)")
        a, r_lo, r_hi, box_lo, box_hi, lower, upper = (
            x / scale for x in (a, r_lo, r_hi, box_lo, box_hi, lower, upper))
        table, base = _unscaled(case, scale)
    pinned = (lower >= 1 - TOL) & (upper <= small_max + TOL)
    tv = case.true_values if scale == 1 else case.true_values / scale
    return RoundedAuditResult(
        published_array=np.where(is_pub, a, np.nan), range_lower=np.where(is_pub, r_lo, box_lo),
        range_upper=np.where(is_pub, r_hi, box_hi), lower=lower, upper=upper,
        is_published=is_pub, narrower=narrower, exact=exact, pinned_small=pinned,
        promised=promised, base=base,
        method=method, k_step=case.k_step, small_max=int(small_max),
        n_components=n_components, n_lp=counters.lp, n_mip=counters.mip,
        runtime=time.perf_counter() - start,
        true_inside=inside, notes=notes, n_certified=n_certified,
        n_local_lp=counters.local_lp, table=table,
        true_values=None if tv is None else np.asarray(tv, dtype=float),
        params={"base": base, "method": method, "k_step": case.k_step,
                "small_max": int(small_max), "published": int(is_pub.sum()),
                **({"grid": 1 / scale} if scale != 1 else {}), **settings.recorded()})


def _hull_note(base: int, threshold: int, scale: int) -> str:
    """The note on small-count's hull, in the table's units (``base`` and ``threshold`` are
    on the grid of ``1 / scale``)."""
    b, unit, t_top = (f"{x / scale:g}" for x in (base, 1, threshold - 1))
    small = unit if unit == t_top else f"{unit}..{t_top}"
    return (f"small-count with base {b} > threshold {threshold / scale:g}: a published {b} "
            f"means {small} or exactly {b}; the audit uses the hull [{unit}, {b}] "
            f"(intervals may be reported wider than they are)")


#: the finest grid of true values the audit takes (decimals); values with more decimals are
#: taken on this grid, which the intervals' tolerance absorbs
MAX_DECIMALS = 6


def _grid_scale(true_values) -> int:
    """``10**d`` for the fewest decimals ``d`` that the true values have (1: integers).

    The audit's intervals are integer intervals: values with decimals are audited on
    their own grid, scaled to integers, as an intruder who knows their precision sees them
    (a finer grid than the intruder knows only narrows the intervals: the audit errs on the
    safe side).

    >>> _grid_scale(np.array([3.0, 12.0])), _grid_scale(np.array([285.3, 70.25]))
    (1, 100)
    """
    if true_values is None:
        return 1
    v = np.asarray(true_values, dtype=float)
    v = v[np.isfinite(v)]
    for d in range(MAX_DECIMALS + 1):
        x = v * 10 ** d
        if np.all(np.abs(x - np.round(x)) <= 1e-6 + 1e-12 * np.abs(x)):
            return 10 ** d
    return 10 ** MAX_DECIMALS


def _scaled(case: _Assumed, scale: int) -> _Assumed:
    """The case in units of the true values' grid: every value, bound and the base times
    ``scale``; the true values exact integers on it."""
    t = case.table
    table = t.replace(value=t.value * scale, lb=t.given_lb * scale, ub=t.ub * scale)
    return _Assumed(table, case.base * scale, case.method, case.k_step,
                    None if case.threshold is None else case.threshold * scale,
                    case.margins_from_interior, np.round(case.true_values * scale))


def _unscaled(case: _Assumed, scale: int) -> tuple[Table, int]:
    t = case.table
    return (t.replace(value=t.value / scale, lb=t.given_lb / scale, ub=t.ub / scale),
            case.base // scale)


def _published_mask(published, n: int) -> np.ndarray:
    if published is None:
        return np.ones(n, dtype=bool)
    is_pub = np.asarray(published, dtype=bool)
    if is_pub.shape != (n,):
        raise InputError(f"audit_rounded: 'published' must have {n} entries")
    return is_pub


def _seen_cells(method: str, is_pub: np.ndarray, inner: np.ndarray,
                notes: list[str]) -> np.ndarray:
    """The cells whose rounded values the bounds start from: the published ones, except
    for small-count with hidden inner cells under published totals.  Its totals are sums
    of the rounded inner cells, which take 0, ``b`` or their own value: what published
    totals tell about hidden ones is not modelled, so the audit takes every rounded cell as
    seen.  An intruder who sees fewer cells derives intervals at least as wide, so the
    verdict errs on the safe side and the intervals are never wider than the intruder's."""
    if method == "small-count" and (inner & ~is_pub).any() and (~inner & is_pub).any():
        notes.append("small-count with hidden inner cells: the audit takes every rounded cell "
                     "as seen (intervals no wider than an intruder's; the verdict errs on the "
                     "safe side)")
        return np.ones_like(is_pub)
    return is_pub


def _boxes(table: Table, is_pub: np.ndarray, r_lo: np.ndarray, r_hi: np.ndarray):
    """Per cell, the integer range the intruder starts from: the method's range where
    published, the table's a-priori bounds elsewhere (and never outside them)."""
    box_lo = np.where(is_pub, r_lo, np.ceil(table.lb - 1e-9))
    box_hi = np.where(is_pub, r_hi, np.where(np.isfinite(table.ub),
                                             np.floor(table.ub + 1e-9), np.inf))
    box_lo = np.maximum(box_lo, np.ceil(table.lb - 1e-9))
    box_hi = np.minimum(box_hi, table.ub)
    return box_lo, box_hi


def _true_inside(table: Table, true_values, lower, upper, notes: list[str]):
    """Whether each true value (when known) lies in its interval; a note when not."""
    if true_values is None:
        return None
    tv = np.asarray(true_values, dtype=float)
    inside = (tv >= lower - TOL) & (tv <= upper + TOL)
    if not inside.all():
        i = int(np.flatnonzero(~inside)[0])
        notes.append(f"{int((~inside).sum())} true value(s) outside their interval (first "
                     f"{table.cell_name(i)}): the rounding does not follow the stated "
                     f"method/base")
    return inside


@dataclass
class _Bounds:
    """The bound computation of one audit: certificates, then per component local LPs
    and LPs on the whole component."""

    table: Table
    box_lo: np.ndarray
    box_hi: np.ndarray
    counters: Counters
    deadline: float | None
    threads: int | None
    settings: RoundedAuditSettings

    def hidden_parts(self, a, is_pub, base: int, certificates: bool, progress):
        """``run`` for totals that are sums of hidden rounded inner cells
        (:mod:`~tabprotect.audit_rounded.hidden`): the bounds of the hidden table in units
        of the base, then the true values' bounds from them."""
        table = self.table
        prior_lo, prior_hi = _boxes(table, np.zeros(table.n_cells, dtype=bool),
                                    self.box_lo, self.box_hi)
        found = []

        def z_bounds(lo, hi, start):
            z = _Bounds(table, lo, hi, self.counters, self.deadline, self.threads,
                        self.settings)
            found.append(z.run([start], certificates, progress))
            return found[-1][:2]

        lower, upper = hidden_parts_bounds(table, a, is_pub, base, prior_lo, prior_hi,
                                           z_bounds, self.counters, self.deadline,
                                           self.threads)
        return lower, upper, found[0][2], found[0][3]

    def run(self, candidates, certificates: bool, progress):
        """``(lower, upper, n_components, n_certified)``; ``candidates`` are the tables
        that may serve as the known feasible table (the first that is one)."""
        table = self.table
        n = table.n_cells
        free = self.box_lo < self.box_hi
        check_fixed_rows(table, free, self.box_lo)
        closed = independent_inner_bounds(table, self.box_lo, self.box_hi) \
            if certificates else None
        if closed is not None:      # no total's range binds: no LP at all
            comps = linked_components(table.relations, free)
            return closed[0], closed[1], len(comps), 2 * int(free.sum())
        # every feasible integer table stays inside the propagated ranges: the search
        # runs there, and an integral table at one of their ends proves that end
        box_lo, box_hi = propagated_ranges(table.relations, self.box_lo, self.box_hi,
                                           self.settings.propagation_rounds)
        lower, upper = box_lo.copy(), box_hi.copy()
        free = box_lo < box_hi
        comps = linked_components(table.relations, free)
        check_fixed_rows(table, free, box_lo)
        # certificates without LPs: from one feasible integer table, feasible moves that
        # carry a cell to the end of its range prove that end is its exact bound
        start_point = feasible_start(table, candidates, box_lo, box_hi)
        lo_cert = np.zeros(n, dtype=bool)
        hi_cert = np.zeros(n, dtype=bool)
        local = start_point is not None and certificates
        if local:
            lo_cert, hi_cert = move_certificates(table, start_point, box_lo, box_hi)
        n_certified = int(lo_cert[free].sum() + hi_cert[free].sum())
        block_ids = array_blocks(table, self.settings.local_lp_block) if local else None
        for k, cells in enumerate(comps):
            if not (lo_cert[cells].all() and hi_cert[cells].all()):
                # (when all are certified, lower/upper already hold the box)
                comp = ComponentAudit(table, free, box_lo, box_hi, cells, self.threads,
                                      self.settings.primal_max_cells)
                lo_known, hi_known = lo_cert[cells], hi_cert[cells]
                if local:
                    LocalCertifier(comp, start_point[cells], lo_known, hi_known,
                                   self.counters, self.deadline, self.settings).run(
                        blocks=None if block_ids is None else block_ids[cells])
                if certificates:
                    IntegerPushes(comp, lo_known, hi_known, self.counters, self.deadline,
                                  self.settings).run()
                lower[cells], upper[cells] = comp.bounds(
                    self.counters, self.deadline, lo_known, hi_known,
                    None if start_point is None else start_point[cells])
            if progress is not None:
                progress(k + 1, len(comps))
        return lower, upper, len(comps), n_certified

"""The state of a verdict search over one component: witness values, exact ends and
proven shortfalls of every variable.

Every LP solution is a feasible table, so it is a *witness*: each cell's interval
reaches at least the values witnesses give it. A primary is *satisfied* when its
witnesses spread it across its required interval; it is *decided* when an outer bound
(or, screening, the lack of a witness) settles it as short.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tabprotect.audit_result import TOL
from tabprotect.audit.moves import mirror_share

if TYPE_CHECKING:
    from tabprotect.audit.component import ComponentTask
    from tabprotect.audit.system import Knowledge, ReducedSystem


class VerdictState:
    """Witness bounds of one component's variables against one attacker.

    Attributes
    ----------
    lo, hi : the lowest / highest value some feasible table gives each variable seen so
        far (the true table first); exact LP bounds where ``ex_lo`` / ``ex_hi``
    want : the primaries this search decides
    req_lo, req_hi, req_w : their requirements (impossible-to-miss values elsewhere)
    tol : the comparison tolerance per variable
    scale : each primary's requirement scale, so that aggregate objectives weigh cells
        of very different magnitude alike
    outer_lo, outer_hi : limits from relaxed LPs, set only where they prove a shortfall
    decided : primaries shown short (or, screening, left uncertified)
    fixed : what the attacker knows (:class:`~tabprotect.audit.system.Knowledge`)
    lb, ub : the variables' bounds for this attacker
    """

    def __init__(self, system: "ReducedSystem", task: "ComponentTask", targets,
                 counters: dict, fixed: "Knowledge | None" = None):
        k = system.k
        self.system, self.task, self.counters = system, task, counters
        self.integer = task.integer
        self.fixed = fixed
        # the true table is feasible: the first witness
        self.lo = system.value.copy()
        self.hi = system.value.copy()
        self.ex_lo = np.zeros(k, dtype=bool)
        self.ex_hi = np.zeros(k, dtype=bool)
        self.tol = TOL * np.maximum(1.0, np.abs(system.value))
        self.req_lo = np.where(np.isnan(task.req_lo), np.inf, task.req_lo)
        self.req_hi = np.where(np.isnan(task.req_hi), -np.inf, task.req_hi)
        self.req_w = np.where(np.isnan(task.req_w), -np.inf, task.req_w)
        self.n_targets = len(targets)
        self.want = np.zeros(k, dtype=bool)
        self.want[targets] = True
        self.want &= task.primary
        self.lb, self.ub = system.bounds(fixed)
        if fixed is not None:
            known = fixed.known
            self.lo[known] = self.hi[known] = system.value[known]
            self.ex_lo[known] = self.ex_hi[known] = True
            self.want[fixed.index] = False
        scale = np.maximum(np.maximum(self.req_hi - system.value,
                                      system.value - self.req_lo), 1.0)
        self.scale = np.where(np.isfinite(scale), scale, 1.0)
        self.outer_lo = np.full(k, -np.inf)
        self.outer_hi = np.full(k, np.inf)
        self.decided = np.zeros(k, dtype=bool)

    @property
    def k(self) -> int:
        return self.system.k

    def short_hi(self) -> np.ndarray:
        return self.want & (self.hi < self.req_hi - self.tol) & ~self.ex_hi

    def short_lo(self) -> np.ndarray:
        return self.want & (self.lo > self.req_lo + self.tol) & ~self.ex_lo

    def short_w(self) -> np.ndarray:
        # a positive width is always needed: an exactly disclosed primary is never safe
        width = self.hi - self.lo
        return self.want & ((width < self.req_w - self.tol) | (width <= self.tol)) \
            & ~(self.ex_lo & self.ex_hi)

    def satisfied(self) -> np.ndarray:
        return self.want & ~self.short_hi() & ~self.short_lo() & ~self.short_w()

    def open(self) -> np.ndarray:
        """Primaries neither satisfied nor decided."""
        return self.want & ~self.satisfied() & ~self.decided

    def narrow(self, j: int) -> bool:
        width = self.hi[j] - self.lo[j]
        return width < self.req_w[j] - self.tol[j] or width <= self.tol[j]

    def needs_hi(self, j: int) -> bool:
        return self.hi[j] < self.req_hi[j] - self.tol[j] or self.narrow(j)

    def needs_lo(self, j: int) -> bool:
        return self.lo[j] > self.req_lo[j] + self.tol[j] or self.narrow(j)

    def absorb(self, x, keep: bool = True) -> None:
        """Widen the witness bounds by the feasible table ``x`` and its mirror image;
        ``keep`` it for later attackers (:class:`~tabprotect.audit.system.WitnessBank`)."""
        if x is None or (self.integer and np.abs(x - np.round(x)).max() > 1e-6):
            return   # a fractional point is no witness for an integer intruder
        lo, hi, value = self.lo, self.hi, self.system.value
        np.minimum(lo, x, out=lo)
        np.maximum(hi, x, out=hi)
        if keep:
            self.system.bank.keep(x - value)
        # its mirror image: x = value + d with A d = 0, so value - t d satisfies the
        # relations too, for the largest t <= 1 that keeps every cell in its bounds; a
        # push up thus also gives a push down (often the whole way: levels are mostly
        # symmetric) without another LP
        d = x - value
        moved = np.flatnonzero(np.abs(d) > 1e-9 * np.maximum(1.0, np.abs(value)))
        if len(moved) == 0:
            return
        dm, vm = d[moved], value[moved]
        t = mirror_share(vm, self.lb[moved], self.ub[moved], dm)
        if self.integer and t < 1.0:
            return   # a scaled point need not be integral
        if t > 1e-9:
            mirrored = vm - t * dm
            lo[moved] = np.minimum(lo[moved], mirrored)
            hi[moved] = np.maximum(hi[moved], mirrored)

    def absorb_all(self, X: np.ndarray) -> None:
        """:meth:`absorb` every row of ``X`` (feasible tables kept before, not kept
        again), all rows at once: the same bounds as one row after another."""
        if len(X) == 0:
            return
        value, lb, ub = self.system.value, self.lb, self.ub
        if self.integer:
            X = X[np.abs(X - np.round(X)).max(axis=1) <= 1e-6]
            if len(X) == 0:
                return
        np.minimum(self.lo, X.min(axis=0), out=self.lo)
        np.maximum(self.hi, X.max(axis=0), out=self.hi)
        D = X - value
        moved = np.abs(D) > 1e-9 * np.maximum(1.0, np.abs(value))
        room = np.where(D > 0, value - lb, ub - value)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(moved, room / np.abs(D), np.inf)
        t = np.minimum(1.0, ratio.min(axis=1))
        keep = moved.any(axis=1) & (t > 1e-9)
        if self.integer:
            keep &= t >= 1.0   # a scaled point need not be integral
        if not keep.any():
            return
        mirrored = np.where(moved[keep], value - t[keep, None] * D[keep], value)
        np.minimum(self.lo, mirrored.min(axis=0), out=self.lo)
        np.maximum(self.hi, mirrored.max(axis=0), out=self.hi)

    def reach(self) -> float:
        """How far from the true values an aggregate objective may push a variable whose
        a-priori bound is infinite: far beyond any protection level, yet finite."""
        return reach(self.system.value, self.task)


def reach(value: np.ndarray, task: "ComponentTask") -> float:
    """See :meth:`VerdictState.reach`."""
    levels = np.nan_to_num(np.concatenate([np.abs(task.req_hi - value),
                                           np.abs(value - task.req_lo),
                                           np.abs(task.req_w)]),
                           nan=0.0, posinf=0.0)
    return float(10.0 * (np.abs(value).max() + levels.max()) + 1.0)

"""The attacker problems every secondary method is judged by, and their Benders cuts.

For a suppression pattern ``z`` (1 = unpublished) the intruder's freedom in cell ``i`` is
the deviation ``y_i = x_i - a_i`` with

    A y = 0,    -(a_i - lb_i) z_i <= y_i <= (ub_i - a_i) z_i.

Primary cell ``s`` is protected upwards when ``max y_s >= UPL'_s`` (``UPL'`` is the
protection level capped at the a-priori bound, as in :func:`tabprotect.audit.audit`),
downwards when ``max -y_s >= LPL'_s`` and for the sliding level when the two maxima add up
to ``SPL_s``.  A contributor of a single-contributor cell ``j`` knows ``x_j``: the same
conditions must hold with ``y_j = 0`` (for a published ``j`` nothing changes, so the
condition can be imposed for every single-contributor cell whatever the pattern).

Benders (capacity) cuts: for any row multipliers ``lam`` let ``r = c - A' lam`` with
``c = +-e_s``; weak LP duality gives, for every pattern ``z``,

    max c'y  <=  sum_i ( (ub_i - a_i) r_i^+ + (a_i - lb_i) r_i^- ) z_i,

so ``sum_i coef_i z_i >= UPL'_s`` is a valid inequality.  Because ``z`` is binary, each
coefficient can be capped at the right-hand side, which also turns an infinite bound into
a finite coefficient without any big-M.  With ``lam`` the optimal duals of the attacker LP
at the current pattern the cut is tight there (strong duality), so a violated condition
always yields a violated cut.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.model.relations import linked_components, masked_entries
from tabprotect.secondary.attack_requirements import Requirements


def components(A: sp.csr_matrix, cells: np.ndarray) -> list[np.ndarray]:
    """Cells grouped into components linked through relations they share."""
    mask = np.zeros(A.shape[1], dtype=bool)
    mask[np.asarray(cells, dtype=np.int64)] = True
    return linked_components(A, mask)


def component_rows(A: sp.csr_matrix, comp: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
    """The relations touching the cells ``comp`` and their columns over them, ``(rows,
    A[rows][:, comp])``, read off the CSR arrays: scipy's two fancy slices cost more than
    the small LPs built on them."""
    comp = np.asarray(comp, dtype=np.int64)
    local = np.full(A.shape[1], -1, dtype=np.int64)
    local[comp] = np.arange(len(comp))
    at, row = masked_entries(A, local >= 0)
    rows, count = np.unique(row, return_counts=True)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(count, out=indptr[1:])
    sub = sp.csr_matrix((A.data[at], local[A.indices[at]], indptr),
                        shape=(len(rows), len(comp)))
    return rows, sub


class ComponentRows:
    """The relations of a component and their columns over it, ``(rows, A[rows][:,
    comp])``, kept for the components met again: the search meets the same components
    at point after point, and slicing the relations anew each time costs more than the
    small LPs over them.  At most ``max_nonzeros`` entries are kept (the oldest
    component goes first)."""

    def __init__(self, A: sp.csr_matrix, max_nonzeros: int = 2_000_000):
        self.A = A
        self.max_nonzeros = max_nonzeros
        self._kept: dict = {}
        self._held = 0

    def of(self, comp: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
        key = np.asarray(comp, np.int64).tobytes()
        hit = self._kept.get(key)
        if hit is not None:
            return hit
        rows, sub = component_rows(self.A, comp)
        # canonical, so that the LPs built on it share it without changing it in place
        sub.sum_duplicates()
        sub.sort_indices()
        hit = (rows, sub)
        if hit[1].nnz <= self.max_nonzeros:
            while self._kept and self._held + hit[1].nnz > self.max_nonzeros:
                self._held -= next(iter(self._kept.values()))[1].nnz
                del self._kept[next(iter(self._kept))]
            self._kept[key] = hit
            self._held += hit[1].nnz
        return hit


@dataclass
class Cut:
    """``sum(coef * z[cols]) >= rhs`` over cell indices ``cols`` (all cells, fixed ones
    included; :meth:`BendersCuts` moves fixed ones to the right-hand side)."""

    cols: np.ndarray
    coef: np.ndarray
    rhs: float
    primary: int
    kind: str  # "up", "down", "width"
    attacker: int = -1  # single-contributor cell fixed by the attacker, -1 for none


@dataclass
class Check:
    """Outcome of checking one pattern against every attacker problem."""

    violated: list[tuple[int, str, int]] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)
    n_lp: int = 0
    runtime: float = 0.0
    complete: bool = True  # False when a deadline stopped the check early

    @property
    def ok(self) -> bool:
        """Every condition was checked and none is violated."""
        return self.complete and not self.violated


class AttackerOracle:
    """Solves the attacker LPs of a pattern and returns the violated conditions and cuts.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))
    >>> oracle = AttackerOracle(t, Requirements.from_table(t))
    >>> oracle.check(t.status == "U").ok
    False
    >>> oracle.check(np.isin(np.arange(9), [4, 5, 7, 8])).ok
    True
    """

    def __init__(self, table, req: Requirements, simplex_strategy: int | None = 1):
        self.table = table
        self.req = req
        # 1 = dual simplex on every re-solve (None: HiGHS' own choice, which is the primal
        # simplex after objective-only changes, 100x slower on these LPs: TABLE3, 40 LPs
        # 10.9 s vs 0.08 s)
        self._model_options = {} if simplex_strategy is None else \
            {"simplex_strategy": simplex_strategy}
        self.A = table.relations.tocsr()
        self.AT = self.A.T.tocsr()
        self.slot = np.full(table.n_cells, -1, dtype=np.int64)
        self.slot[req.primary] = np.arange(len(req.primary))
        self.component_rows = ComponentRows(self.A)

    def check(self, z: np.ndarray, *, cuts: bool = True, primaries: np.ndarray | None = None,
              deadline: float | None = None, first_only: bool = False) -> Check:
        """Check pattern ``z`` (bool, or floats in [0, 1] for fractional separation).

        ``primaries`` restricts the check to some primary cells; ``first_only`` stops at the
        first violated condition (feasibility tests).
        """
        t0 = time.perf_counter()
        req = self.req
        z = np.asarray(z, dtype=float)
        out = Check()
        active = np.flatnonzero(z > 1e-9)
        want = np.zeros(self.table.n_cells, bool)
        want[req.primary if primaries is None else primaries] = True
        for comp in self._components(active):
            targets = comp[want[comp]]
            if len(targets) == 0:
                continue
            self._check_component(comp, targets, z, out, cuts, deadline, first_only)
            if first_only and out.violated:
                break
            if deadline is not None and time.perf_counter() > deadline:
                out.complete = False
                break
        out.runtime = time.perf_counter() - t0
        return out

    def separate(self, z: np.ndarray, *, deadline: float | None = None,
                 min_violation: float = 1e-6) -> Check:
        """Capacity cuts violated by a fractional ``z`` (separation for the master LP).

        The exact check (:meth:`check`) bounds cell ``i`` by ``up_i z_i``; with a large
        range and a small ``z_i`` that one cell already "protects" the primary and no
        cut is found, although the capped cut (coefficients at most the level) is
        violated.  Here the attacker LP bounds each cell by ``min(up_i, level) z_i``
        instead; its duals are only used as multipliers ``lam`` of a capacity cut,
        which is valid for any ``lam`` (weak duality), and the cut is kept when the
        point violates it by more than ``min_violation`` (relative).  A condition
        :meth:`_separation_met` shows met needs no LP.
        """
        t0 = time.perf_counter()
        req = self.req
        z = np.asarray(z, dtype=float)
        out = Check()
        # primaries with no level (a view asking for some primaries only) need no LP
        want = np.zeros(self.table.n_cells, bool)
        asked = (req.need_up > 0) | (req.need_down > 0) | (req.need_width > 0)
        want[req.primary[asked]] = True
        for comp in self._components(np.flatnonzero(z > 1e-9)):
            targets = comp[want[comp]]
            if len(targets) == 0:
                continue
            if self._separate_component(comp, targets, z, out, deadline, min_violation):
                out.complete = False
                break
        out.runtime = time.perf_counter() - t0
        return out

    def _separate_component(self, comp, targets, z, out: Check, deadline, min_violation
                            ) -> bool:
        """Separation over one component; True when the deadline stopped it."""
        req = self.req
        lp = _SeparationLP(self, comp, z)
        attackers = [-1] + ([int(j) for j in comp[req.singleton[comp]]]
                            if req.singleton.any() else [])
        for j in attackers:
            for s in targets:
                if not req.attacks(j, int(s)):
                    continue
                s, p = int(s), self.slot[s]
                for kind, sign, rhs in req.levels(p):
                    if self._separation_met(p, kind, sign, s, j, z, rhs, min_violation):
                        continue
                    cut = self._condition_cut(lp, s, p, kind, sign, rhs, j, out,
                                              min_violation)
                    if cut is None:
                        continue
                    lhs = float(np.minimum(cut.coef, rhs) @ z[cut.cols])
                    if lhs < rhs * (1.0 - min_violation):
                        out.violated.append((s, kind, j))
                        out.cuts.append(cut)
                if deadline is not None and time.perf_counter() > deadline:
                    return True
        return False

    def _components(self, active: np.ndarray) -> list[np.ndarray]:
        """The cells ``active`` grouped into components (a hook: the optimal method's
        oracle keeps the last grouping)."""
        return components(self.A, active)

    def _separation_met(self, p, kind, sign, s, j, z, rhs, min_violation) -> bool:
        """Whether a condition is known met at ``z`` without its LP (a hook: none here)."""
        return False

    def _condition_cut(self, lp, s, p, kind, sign, rhs, j, out: Check, min_violation):
        """The cut of one condition from its separation LP, or None (a hook: the optimal
        method's oracle builds none where the LP meets the level)."""
        return lp.cut(s, p, kind, sign, rhs, j, out)

    def _separation_solved(self, p: int, sign: float, comp: np.ndarray) -> None:
        """Called after each separation LP with an optimum (a hook: nothing here)."""

    # ------------------------------------------------------------ internals
    def _new_model(self, lp: LinearProgram):
        """The persistent model of one component's attacker LP (a hook for subclasses:
        anything with HighsModel's ``set_col_bounds``, ``set_objective`` and ``solve``)."""
        return HighsModel(lp, **self._model_options)

    def _component_model(self, comp: np.ndarray, lo: np.ndarray, hi: np.ndarray):
        """The attacker LP over the component ``comp`` with column bounds ``lo``..``hi``
        (its objective set by each solve; a hook: the optimal method's oracle keeps one
        model per component)."""
        rows, sub = self.component_rows.of(comp)
        return self._new_model(LinearProgram(
            c=np.zeros(len(comp)), A=sub, row_lower=np.zeros(len(rows)),
            row_upper=np.zeros(len(rows)), col_lower=lo, col_upper=hi))

    def _check_component(self, comp, targets, z, out, cuts, deadline, first_only):
        req = self.req
        rows, _ = self.component_rows.of(comp)
        lo = -req.down[comp] * z[comp]
        hi = req.up[comp] * z[comp]
        model = self._component_model(comp, lo, hi)
        local = {int(c): k for k, c in enumerate(comp)}
        attackers = [-1]
        if req.singleton.any():
            attackers += [int(j) for j in comp[req.singleton[comp]]]
        for j in attackers:
            if j >= 0:
                model.set_col_bounds([local[j]], 0.0, 0.0)
            for s in targets:
                if not req.attacks(j, int(s)):
                    continue
                self._check_primary(int(s), j, model, local, comp, rows, z, out, cuts)
                if first_only and out.violated:
                    return
                if deadline is not None and time.perf_counter() > deadline:
                    out.complete = False
                    return
            if j >= 0:
                model.set_col_bounds([local[j]], lo[local[j]], hi[local[j]])

    def _solve(self, model, k, sign):
        model.set_objective(indices=[k], values=[float(sign)], sense="max")
        res = model.solve()
        if res.status == "unbounded":
            return np.inf, None
        if res.status != "optimal":
            raise RuntimeError(f"attacker LP ended with status {res.status}")
        return float(res.objective), res.duals

    def _check_primary(self, s, j, model, local, comp, rows, z, out, cuts):
        req = self.req
        p = self.slot[s]
        k = local[s]
        need = {"up": req.need_up[p], "down": req.need_down[p]}
        width = req.need_width[p]
        tol = req.tol[p]
        results = {}
        for kind, sign in (("up", 1.0), ("down", -1.0)):
            if need[kind] <= 0 and width <= 0:
                continue
            val, duals = self._solve(model, k, sign)
            out.n_lp += 1
            results[kind] = (val, duals, sign)
            if need[kind] > 0 and val < need[kind] - tol:
                out.violated.append((s, kind, j))
                if cuts:
                    out.cuts.append(self._cut(s, sign, duals, rows, need[kind], kind, j))
        if width > 0 and "up" in results and "down" in results:
            (vu, du, _), (vd, dd, _) = results["up"], results["down"]
            if vu + vd < width - tol:
                out.violated.append((s, "width", j))
                if cuts:
                    cu = self._cut(s, 1.0, du, rows, width, "up", j)
                    cd = self._cut(s, -1.0, dd, rows, width, "down", j)
                    cols = np.concatenate([cu.cols, cd.cols])
                    coef = np.concatenate([cu.coef, cd.coef])
                    merged = sp.csr_matrix((coef, (np.zeros(len(cols), int), cols)),
                                           shape=(1, self.table.n_cells))
                    merged.sum_duplicates()
                    out.cuts.append(Cut(merged.indices.astype(np.int64), merged.data, width,
                                        s, "width", j))

    def _cut(self, s, sign, duals, rows, rhs, kind, j) -> Cut:
        """The capacity cut from the attacker LP's row duals (see the module docstring)."""
        req = self.req
        lam = np.zeros(self.A.shape[0])
        lam[rows] = duals
        r = -(self.AT @ lam)
        r[s] += sign
        nz = np.flatnonzero(np.abs(r) > 1e-12)
        rn = r[nz]
        up, down = req.up[nz], req.down[nz]
        coef = np.where(rn > 0, np.where(np.isinf(up) & (rn <= 1e-9), 0.0, up * rn), 0.0)
        coef = coef + np.where(rn < 0, np.where(np.isinf(down) & (rn >= -1e-9), 0.0,
                                                 down * -rn), 0.0)
        if j >= 0:
            coef[nz == j] = 0.0  # the attacker knows x_j: its deviation is 0 whatever z_j
        coef = np.where(np.isinf(coef), rhs, coef)
        keep = coef > 0
        return Cut(nz[keep].astype(np.int64), coef[keep], float(rhs), s, kind, j)


class _SeparationLP:
    """One component's capped attacker LP of :meth:`AttackerOracle.separate`, its model,
    relations and cell positions found on the first solve (a component whose conditions
    are all met needs none of them)."""

    def __init__(self, oracle: AttackerOracle, comp: np.ndarray, z: np.ndarray):
        self.oracle, self.comp, self.z = oracle, comp, z
        self.rows = self.local = self.model = None

    def solve(self, s: int, p: int, sign: float, rhs: float, j: int, out: Check):
        """``(value, duals)`` of moving ``s`` by ``sign`` within the capped bounds
        (attacker ``j`` knows its own cell)."""
        oracle, comp, z, req = self.oracle, self.comp, self.z, self.oracle.req
        if self.local is None:
            self.rows, _ = oracle.component_rows.of(comp)
            self.local = {int(c): k for k, c in enumerate(comp)}
        hi = np.minimum(req.up[comp], rhs) * z[comp]
        lo = -np.minimum(req.down[comp], rhs) * z[comp]
        if j >= 0:
            lo[self.local[j]] = hi[self.local[j]] = 0.0
        if self.model is None:
            self.model = oracle._component_model(comp, lo, hi)
        else:
            self.model.set_col_bounds(np.arange(len(comp)), lo, hi)
        val, duals = oracle._solve(self.model, self.local[s], sign)
        out.n_lp += 1
        if duals is not None:
            oracle._separation_solved(p, sign, comp)
        return val, duals

    def cut(self, s: int, p: int, kind: str, sign: float, rhs: float, j: int, out: Check
            ) -> Cut | None:
        """The capacity cut of one condition from its LP's duals (the width: the up and
        down cuts summed); None when an LP has no duals."""
        oracle = self.oracle
        if kind != "width":
            _, duals = self.solve(s, p, sign, rhs, j, out)
            return None if duals is None else \
                oracle._cut(s, sign, duals, self.rows, rhs, kind, j)
        _, du = self.solve(s, p, 1.0, rhs, j, out)
        _, dd = self.solve(s, p, -1.0, rhs, j, out)
        if du is None or dd is None:
            return None
        cu = oracle._cut(s, 1.0, du, self.rows, rhs, "up", j)
        cd = oracle._cut(s, -1.0, dd, self.rows, rhs, "down", j)
        merged = sp.csr_matrix(
            (np.concatenate([cu.coef, cd.coef]),
             (np.zeros(len(cu.cols) + len(cd.cols), int), np.concatenate([cu.cols, cd.cols]))),
            shape=(1, oracle.table.n_cells))
        merged.sum_duplicates()
        return Cut(merged.indices.astype(np.int64), np.minimum(merged.data, rhs), rhs, s,
                   "width", j)

"""Protection levels against the single-contributor attack, after the elimination.

The elimination keeps every primary out of the span of the published cells and any one
attacker's cell (:mod:`.singletons`): no contributor derives a primary exactly.  The
audit asks more -- an interval reaching the protection levels against each attacker --
and in 3-D count tables the two differ: the moves that keep one count-1 cell at its
value can all pass through another count-1 cell twice as fast as through the primary,
so its interval is 1.5 wide where 2 is asked (a vertex with coefficient 2).

This step gives every condition (a primary and a direction, :func:`conditions`) witnesses
against every attacker: feasible deviations (``A y = 0``, within each cell's range, every
published cell at its value) that move the primary by its need and leave the attacker's
cells where they are.  Per condition at most two protection LPs: the first over the
pattern, attackers free but dear to move; the second with the attackers the first moved
kept at their values.  The first holds against every attacker it does not move, the
second against those it moved, so the two together hold against all; where the second
finds none, one LP per attacker it was to hold.  Only when the pattern has no such
deviation does an LP take published cells too (at their cost, as in :mod:`.widths`),
and those are suppressed: the first and the per-attacker LPs, and the second where it
holds ``together`` attackers or more (one LP over the pattern and the published cells
then stands for that many per-attacker ones, each about as large; with fewer the
per-attacker LPs buy cheaper cells, each holding one attacker only).  Such an LP spans
the primary's component of the pattern and the published cells, most of the table; it
is solved on the pattern's component and the primary's relations, the published cells
that price out joining (:mod:`.pricing`): an optimum of the whole LP from a small one.
A witness also serves every other condition it moves far enough (scaled within the
ranges), against the attackers it leaves in place; a condition is settled once no
attacker is left that all its witnesses move.

An attacker is a class of cells holding one record (:func:`tabprotect.records.same_record`;
a cell outside a class is its own): its contributor knows them all and attacks none of
them.  The witnesses are real-valued, as the audit's LP intruder's; the step proves
nothing for an integer intruder (the audit judges that).
"""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel
from tabprotect.model.relations import component_roots, masked_entries
from tabprotect.model.table import Table
from tabprotect.records import same_record
from tabprotect.secondary.gauss.pricing import priced_solve
from tabprotect.secondary.gauss.widths import WidthStep, seconds_left, split_rows
from tabprotect.secondary.prune import Condition


@dataclass
class AttackOutcome:
    """What the attack step did."""

    suppressed: np.ndarray  # the pattern (boolean per cell), extended
    added: int              # cells it suppressed
    lps: int                # protection LPs solved
    unmet: int              # conditions left without witnesses (no LP solution, deadline)
    timed_out: bool         # the deadline stopped it
    skipped: int = 0        # conditions left to the audit: their component is too large
    moves: sp.csr_matrix | None = None   # the integral witnesses, one row each (the
    #                                      audit's candidate moves for its integer intruder)


class AttackStep(WidthStep):
    """The attack step on one table (see the module docstring); the LPs and the
    neighbourhoods are the width step's, with the attackers' cells movable at a price
    (``attacker_weight``, a share of the median cost per unit: far dearer than a
    suppressed cell, far cheaper than a new one).  ``max_component``: a condition whose
    primary's component of the pattern has more cells is left to the audit (each of
    its LPs spans the component).  ``lift``: a fractional witness's multiples up to
    this one are tried as an integral move for the audit (:meth:`_lift`; 1: none).
    ``bound_only``: only the primaries whose range one way is short of their level or
    half their width that way (:meth:`bites`: a count 1 at its bound 1), where the
    elimination, blind to the bounds, falls short; the audit judges the others.
    ``together``: the second LP of a condition (the attackers the first moved kept in
    place) takes published cells too where it keeps at least this many attackers
    (see the module docstring; None: never).  ``stored``: the components whose relation
    rows and warm LP model are kept, the ones used last (more than a 3-D count table's
    pattern has, its widened component included).  ``priced_cells``: a widened LP over
    a component of this many cells or more is priced (:mod:`.pricing`); over a smaller
    one a single LP over the whole costs less than the pricing's rounds (on a 4,704-cell
    3-D count table the step takes a tenth longer priced)."""

    def __init__(self, table: Table, cost: np.ndarray, attacker_weight: float = 1e-3,
                 max_component: int | None = None, lift: int = 4, bound_only: bool = False,
                 together: int | None = None, stored: int = 64, priced_cells: int = 5_000,
                 **kwargs):
        kwargs.setdefault("presolve", False)  # small LPs: presolve costs a third of them
        super().__init__(table, cost, singleton=True, **kwargs)
        self.bound_only = bound_only
        self._labels: dict = {}
        self.max_component = max_component
        self.lift = lift
        self.together = together
        label = same_record(table, zeros_known=np.isin(table.status, ("P", "Z")))
        cells = np.arange(table.n_cells)
        #: per cell the attacker it belongs to (-1: none); a class's smallest cell
        self.attacker = np.where(self.req.singleton, np.where(label >= 0, label, cells), -1)
        self.attacker_weight = attacker_weight * max(float(np.median(self.cost)), 1e-12)
        # the components met, under their cells' bytes, each with its relation rows
        # and its protection LP as a warm model (:class:`_Component`): the conditions
        # of one component differ in column bounds (and costs) only, and a component
        # the pattern's growth does not touch keeps its cells, so its model too
        self._store: OrderedDict[bytes, _Component] = OrderedDict()
        self.stored = stored
        self.priced_cells = priced_cells
        self._pattern_size = -1    # the pattern's size the components' labels belong to

    def conditions(self) -> list[Condition]:
        """The width step's conditions at their levels exactly, without its margin: on
        count tables a level is reached exactly, by an integral move, and a margin over
        it asks for a cell the audit does not need (its tolerance takes rounding)."""
        req = self.req
        out = []
        for c in super().conditions():
            k = c.slot
            rng = req.up[c.cell] if c.sign > 0 else req.down[c.cell]
            need = min(req.way_need(k, c.sign), float(rng))
            # no room (a count 1 at its bound 1): met where the cell is
            if need > 0 and (not self.bound_only or self.bites(k)):
                out.append(Condition(c.cell, k, c.sign, need))
        return out

    def bites(self, k: int) -> bool:
        """Whether primary ``k``'s range (its bounds) one way is short of its level or of
        half its width that way, so that the other way must give more."""
        req, s = self.req, self.req.primary[k]
        half = 0.5 * float(req.need_width[k])
        return bool(req.down[s] < max(float(req.need_down[k]), half) - 1e-9
                    or req.up[s] < max(float(req.need_up[k]), half) - 1e-9)

    def run(self, suppressed: np.ndarray, deadline: float | None = None) -> AttackOutcome:
        """Extend the pattern ``suppressed`` until every condition has its witnesses."""
        z = np.asarray(suppressed, bool).copy()
        start = int(z.sum())
        conds = self.conditions()
        # per cell its upward (row 0) and downward (row 1) condition (-1: none), and
        # per condition its need: the witnesses' serving, array-wise
        self._cond_of = np.full((2, self.table.n_cells), -1, np.int64)
        for q, c in enumerate(conds):
            self._cond_of[0 if c.sign > 0 else 1, c.cell] = q
        self._need = np.asarray([c.need for c in conds], float)
        # per condition the attackers that every witness found so far moves (None: no
        # witness yet); settled when empty
        left: list[set | None] = [None] * len(conds)
        lps = unmet = skipped = 0
        timed_out = False
        self._integral: list[tuple[np.ndarray, np.ndarray]] = []
        for q, cond in enumerate(conds):
            if left[q] is not None and not left[q]:
                continue
            if self.max_component is not None and \
                    len(self._component(cond.cell, z, False).cells) > self.max_component:
                skipped += 1
                continue
            if deadline is not None and time.perf_counter() > deadline:
                timed_out = True
                unmet += sum(1 for s in left[q:] if s is None or s)
                break
            n_lp, ok = self._settle(q, cond, z, left, deadline)
            lps += n_lp
            unmet += not ok
        return AttackOutcome(z, int(z.sum()) - start, lps, unmet, timed_out, skipped,
                             self._moves())

    def _moves(self) -> sp.csr_matrix:
        """The integral witnesses found, one row each over the table's cells."""
        rows = [np.full(len(c), r) for r, (c, _) in enumerate(self._integral)]
        cols = [c for c, _ in self._integral]
        vals = [d for _, d in self._integral]
        empty = [np.zeros(0, np.int64)]
        return sp.csr_matrix((np.concatenate(vals + [np.zeros(0)]),
                              (np.concatenate(rows + empty), np.concatenate(cols + empty))),
                             shape=(len(self._integral), self.table.n_cells))

    def _settle(self, q, cond, z, left, deadline) -> tuple[int, bool]:
        """Witnesses for condition ``q`` until no attacker is left: the first with the
        attackers free, then one with every attacker it moved kept in place, else one per
        such attacker; each over the pattern, with published cells too only where the
        pattern has none (the second only from ``together`` attackers on).  Returns the
        LPs solved and whether the condition is settled."""
        lps = 0

        def step(fixed: set, widen: bool) -> bool:
            nonlocal lps
            found, n_lp = self._witness(cond, z, fixed, deadline, widen)
            lps += n_lp
            if found is not None:
                cells, dev = found
                moved = np.abs(dev) > 1e-9 * max(1.0, cond.need)
                z[cells[moved]] = True
                lifted = self._lift(cells[moved], dev[moved])
                if lifted is not None:
                    self._integral.append((cells[moved], lifted))
                self._serve(cells[moved], dev[moved], left)
            return found is not None

        if left[q] is None and not step(set(), widen=True):
            return lps, False
        if left[q] and len(left[q]) > 1:
            step(set(left[q]), widen=self.together is not None
                 and len(left[q]) >= self.together)
        for a in sorted(left[q]):
            if a in left[q] and not step({a}, widen=True):
                return lps, False
        return lps, True

    def _lift(self, cells: np.ndarray, dev: np.ndarray) -> np.ndarray | None:
        """The witness ``dev`` on ``cells`` as an integral move for the audit: itself
        when integral, else its least integral multiple up to ``lift``, or that
        multiple's mirror image, that keeps every cell within its bounds (3-D count
        tables' vertices are mostly half-integral; a multiple keeps the relations and
        leaves the same attackers in place), or None."""
        v, lb, ub = self.table.value[cells], self.table.lb[cells], self.table.ub[cells]
        for k in range(1, self.lift + 1):
            step = np.round(k * dev)
            if np.abs(k * dev - step).max(initial=0.0) > 1e-6:
                continue
            if k == 1 or ((v + step >= lb) & (v + step <= ub)).all():
                return step
            if ((v - step >= lb) & (v - step <= ub)).all():
                return -step
            return None
        return None

    def _serve(self, cells, dev, left) -> None:
        """Every condition the witness ``dev`` (on ``cells``) or its mirror moves far
        enough, scaled within the ranges, is served against the attackers it leaves in
        place."""
        req = self.req
        moved = set(self.attacker[cells][self.attacker[cells] >= 0].tolist())
        up, dn = req.up[cells], req.down[cells]
        with np.errstate(divide="ignore", invalid="ignore"):
            room_plus = np.where(dev > 0, up / dev, dn / -dev).min(initial=np.inf)
            room_minus = np.where(dev > 0, dn / dev, up / -dev).min(initial=np.inf)
        scales = [max(1.0, room_plus)] + ([-room_minus] if room_minus > 0 else [])
        for scale in scales:
            d = scale * dev
            qs = self._cond_of[np.where(d > 0, 0, 1), cells]
            hit = qs >= 0
            hit[hit] = np.abs(d[hit]) >= (1 - 1e-9) * self._need[qs[hit]]
            for c, q in zip(cells[hit].tolist(), qs[hit].tolist()):
                if left[q] is not None and not left[q]:
                    continue
                against = moved - {int(self.attacker[c])}
                left[q] = against if left[q] is None else left[q] & against

    def _witness(self, cond, z: np.ndarray, fixed: set, deadline: float | None,
                 widen: bool):
        """A deviation proving ``cond`` with the attackers ``fixed`` at their values:
        over the primary's component of the pattern, then (``widen``) of the pattern and
        the published cells; ``(cells, dev)`` or None, and the LPs solved."""
        lps = 0
        inner = None
        for movable in (False, True) if widen else (False,):
            comp = self._component(cond.cell, z, movable)
            if len(comp.cells) < 2:
                continue
            keep = np.isin(self.attacker[comp.cells], list(fixed)) if fixed else None
            lps += 1
            start = None if inner is None or len(comp.cells) < self.priced_cells else \
                self._start(cond.cell, comp, inner)
            y = self._solve_attack(cond, comp, z, keep, deadline, start)
            if y is not None:
                return (comp.cells, y), lps
            inner = comp
            if deadline is not None and time.perf_counter() > deadline:
                break
        return None, lps

    def _start(self, cell: int, comp: _Component, inner: _Component) -> np.ndarray:
        """The widened LP's starting cells (boolean over ``comp``'s): the pattern's
        component ``inner`` and the cells in a relation with ``cell``."""
        near = np.zeros(self.table.n_cells, bool)
        near[inner.cells] = True
        rows = self.incidence_t.indices[
            self.incidence_t.indptr[cell]:self.incidence_t.indptr[cell + 1]]
        near[self.incidence[rows].indices] = True
        return near[comp.cells]

    def _component(self, cell: int, z: np.ndarray, widen: bool) -> _Component:
        """The cells linked to ``cell`` by relations through the pattern ``z`` (``widen``:
        through the pattern and the candidates), with their relation rows and warm
        model; the labels kept while the pattern stays the same (most conditions share
        one component), the widened ones while the pattern and the candidates do (the
        pattern grows by candidates only), a component's rows and model while its cells
        do (:meth:`_stored`)."""
        mask = z | self.candidate if widen else z.copy()
        mask[cell] = True
        key = int(z.sum())
        if key != self._pattern_size:     # the pattern grew: new components
            self._pattern_size = key
            self._labels.pop(False, None)
        cache = self._labels.get(widen)
        if widen and (cache is None or not np.array_equal(cache["mask"], mask)):
            # the pattern grows by cells of the widened mask: that stays the same
            cache = None
        if cache is None or cache["labels"][cell] < 0:
            cache = self._labels[widen] = {"mask": mask, "labels": self._label(mask)}
        labels = cache["labels"]
        comp = cache.get(labels[cell])
        if comp is None:
            comp = cache[labels[cell]] = self._stored(np.flatnonzero(labels == labels[cell]))
        return comp

    def _stored(self, cells: np.ndarray) -> _Component:
        """The component of ``cells`` from the store (its rows and warm model), or new;
        the store keeps the ``stored`` components used last."""
        key = cells.tobytes()
        comp = self._store.get(key)
        if comp is None:
            sub = self.A[:, cells].tocsr()
            sub = sub[np.flatnonzero(np.diff(sub.indptr) > 0)]
            comp = self._store[key] = _Component(cells, sub, split_rows(sub))
            if len(self._store) > self.stored:
                self._store.popitem(last=False)
        else:
            self._store.move_to_end(key)
        return comp

    def _label(self, mask: np.ndarray) -> np.ndarray:
        """Per cell its component among the ``mask`` cells linked by relations, named by
        a node of it (-1 off the mask): read off the incidence's arrays, no graph built."""
        n_rel, n = self.incidence.shape
        at, rows = masked_entries(self.incidence, mask)
        roots = component_roots(rows, n_rel + self.incidence.indices[at], n_rel + n)
        return np.where(mask, roots[n_rel:], -1)

    def _solve_attack(self, cond, comp: _Component, z: np.ndarray,
                      keep: np.ndarray | None, deadline: float | None,
                      start: np.ndarray | None = None):
        """The protection LP (:meth:`_attack_lp`) solved on the component's warm model,
        or (``start``: a widened component's starting cells) on those cells and the ones
        that price out (:func:`.priced_solve`, an optimum of the same LP), the warm
        model where that ends without one; the attack's move per cell, or None."""
        lp = self._attack_lp(cond, comp, z, keep)
        if lp is None:
            return None
        n = len(comp.cells)
        if start is not None:
            if comp.split_csc is None:
                comp.split_csc = comp.split.tocsc()
            weights, _, lo, hi = lp
            x = priced_solve(weights, comp.split_csc, lo, hi, start,
                             seconds_left(self.lp_seconds, deadline))
            if x is not None:
                return x[:n] - x[n:]
        res = self._warm_lp(comp, *lp, deadline)
        if res.status != "optimal":
            return None
        return res.x[:n] - res.x[n:]

    def _attack_lp(self, cond, comp: _Component, z: np.ndarray, keep: np.ndarray | None):
        """The protection LP over the component's cells (every other cell, and the
        ``keep`` ones, at its value) as (costs, A, lo, hi), or None: suppressed cells
        nearly free, attackers' cells at ``attacker_weight``, published cells at their
        cost per unit of range."""
        cells = comp.cells
        up, dn = self.req.up[cells].copy(), self.req.down[cells].copy()
        if keep is not None:
            up[keep] = dn[keep] = 0.0
        hidden = np.where(self.attacker[cells] >= 0, self.attacker_weight,
                          self.free_weight) / cond.need
        # (the LP's own tolerance decides the last part of the need)
        lp = self._protection_lp(cond, cells, comp.split, z, up, dn, hidden,
                                 cond.need * (1 - 1e-9))
        if lp is None:
            return None
        weights, A, lo, hi = lp
        # times the need, a positive factor that leaves the optimum where it is: over
        # the pattern alone the costs are then the same from one condition to the next,
        # so the warm basis stays dual feasible and only the bounds change
        return weights * cond.need, A, lo, hi

    def _warm_lp(self, comp: _Component, weights, A, lo, hi, deadline: float | None):
        """One protection LP on the component's warm model: its costs and column bounds
        set, re-solved from the component's last basis (no model set-up per condition,
        nor per growth of the pattern elsewhere)."""
        if comp.model is None:
            comp.model = self._lp_model(weights, A, lo, hi, presolve=self.presolve)
        else:
            comp.model.set_objective(c=weights)
            # only the bounds that differ from the last LP's: HiGHS then updates the
            # basic solution at those columns alone
            changed = np.flatnonzero((lo != comp.lo) | (hi != comp.hi))
            comp.model.set_col_bounds(changed, lo[changed], hi[changed])
        comp.lo, comp.hi = lo, hi
        return comp.model.solve(time_limit=seconds_left(self.lp_seconds, deadline),
                                duals=False)


@dataclass
class _Component:
    """One component of the attack step's LPs: its cells, their relation rows ``sub``
    and those in a cell's moves up and down (``split``), and the protection LP on them
    as a warm model with the column bounds it was last solved with."""

    cells: np.ndarray
    sub: sp.csr_matrix
    split: sp.csr_matrix
    model: HighsModel | None = None
    split_csc: sp.csc_matrix | None = None   # ``split`` by columns, for pricing
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

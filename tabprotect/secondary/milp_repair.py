"""Repair by small MILPs: the cheapest extra suppressions that give one short primary its
protection, solved on the primary's neighbourhood.

For a primary ``s`` and the pattern so far, the MILP is the optimal model of that one
primary with its attacker problems written out by their *witnesses*: binaries ``z_i``
for the published candidate cells of the region (cost ``c_i``), and per condition a
deviation ``y`` of the region (cells outside it held at 0) with

    A y = 0,    -down_i w_i <= y_i <= up_i w_i,

where ``w_i`` is 1 for a suppressed cell, ``z_i`` for a candidate and 0 for any other
cell.  The up condition asks ``y_s >= UPL'_s`` of its deviation, the down condition
``y_s <= -LPL'_s`` of its own, the width condition ``y^up_s - y^down_s >= SPL_s`` of the
two.  A feasible ``y`` is a table ``x + y`` the intruder cannot rule out once the cells
with ``z_i = 1`` are suppressed, so the pattern the MILP returns protects ``s`` on the
whole table whatever the region (a witness, not a bound): the repair is safe by
construction and the cost is the fewest/cheapest cells that give such witnesses.
With ``integer=True`` (frequency tables, where the audit reasons in integers) ``y`` is
integer, so the witness is an integer table too; protect() asks for that only for a
primary that continuous witnesses left short (they mostly suffice, at a fraction of the
cells).

A single-contributor attacker ``j`` knows ``x_j``: a witness with ``y_j = 0`` serves it
as well.  The MILP starts with the outside intruder's witnesses; for every
single-contributor cell its solution moves, a second pair of witnesses with ``y_j = 0``
is added and the MILP solved again (lazily, a few rounds).  Cells outside the region
never move, so attackers there are served by the first witnesses.

Deviations are capped at a multiple of the primary's largest requirement (a restriction:
the result stays safe) so that the linking constraints stay tight.  Suppressions made for
one primary are free for the next, which is how one addition serves several primaries;
the primaries are taken largest requirement first.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.secondary.attack_requirements import Requirements


@dataclass(frozen=True)
class MilpRepairSettings:
    """How the MILP repair spends its time (none of these changes what is safe: every
    answer is a witness)."""

    #: protect()'s repair rounds start with the MILP repair: True, False (the LP repair
    #: only) or "auto": frequency tables below ``large_table`` cells without the
    #: single-contributor attack, where it settles the shortfalls with fewer, cheaper
    #: cells than the LP repair within its time cap; not with that attack (each
    #: attacker's witness pair makes its MILPs several times slower and the LP repair
    #: reaches the same cost), not on the large-table path (its local deviation LPs
    #: settle the shortfalls as cheaply in a fraction of the time) and not on magnitude
    #: tables (its per-primary optima, taken one primary after another, can cost more
    #: in all than the LP repair's cheapest deviations)
    enabled: bool | str = "auto"
    #: a round takes the MILP repair while it has at most this many primaries to repair
    #: (more: the LP repair, whose leaf cubes and single LPs cost a fraction of the time
    #: per primary, at more cells)
    max_primaries: int = 1_000
    #: seconds of a round's MILP repair at most (the primaries it does not reach go to
    #: the LP repair)
    round_seconds: float = 300.0
    #: ... and at most this many times the call's time so far, at least min_seconds: a
    #: repair should not dwarf the method it repairs (on an everyday table the MILPs
    #: of every short primary cost ten times the rest of the call for a few per cent)
    relative_seconds: float = 2.0
    min_seconds: float = 1.0
    #: ... and its share of what is left of the budget when it has one
    round_share: float = 0.5
    #: ... of which this part goes to MILPs: the primaries left then get the quick
    #: answer (one LP each: the relaxation's witnesses), so that a tight budget still
    #: ends with every short primary given witnesses
    milp_share: float = 0.6

    #: seconds per primary's MILP (its incumbent is taken when the limit stops it)
    seconds_per_primary: float = 5.0
    #: relative gap at which a primary's MILP stops (the cost of a few cells)
    mip_gap: float = 0.02
    #: a deviation moves no cell by more than this many times the primary's largest
    #: requirement (tight linking constraints; a restriction, so still safe)
    range_cap: float = 4.0
    #: rounds that add witnesses for the single-contributor cells a solution moves
    attacker_rounds: int = 6
    #: neighbourhoods tried, the cheapest answer kept: the cells within this many
    #: relation steps of the primary (3 reach the corners of its cubes in a 3-D table;
    #: the cheap routes of linked tables run further); read from the relations alone,
    #: so a table and its general form get the same repair
    steps: tuple[int, ...] = (3, 6)
    #: regions larger than this many cells are not tried (the caller's fallback takes
    #: the primary)
    max_region_cells: int = 6_000

    def __post_init__(self):
        if self.enabled not in (True, False, "auto"):
            raise ValueError(f"MilpRepairSettings.enabled must be True, False or 'auto', "
                             f"not {self.enabled!r}")

    def applies(self, table, singleton: bool = False, large: bool = False) -> bool:
        """Whether protect()'s repair of ``table`` (``singleton``: against the
        single-contributor attack too; ``large``: on the large-table path) starts with
        the MILP repair."""
        if self.enabled == "auto":
            return table.kind == "frequency" and not singleton and not large
        return bool(self.enabled)


@dataclass
class MilpRepairOutcome:
    """What a MILP repair did."""

    #: cells it suppressed (in the order added)
    added: list[int] = field(default_factory=list)
    #: primaries it could not settle (no witness in any region, or out of time)
    unresolved: list[int] = field(default_factory=list)
    #: primaries whose witnesses needed no new cell (the pattern already protects
    #: them; an audit that finds them short disagrees with the witnesses)
    free: list[int] = field(default_factory=list)
    #: the witnesses found: (cells, deviation) pairs in table coordinates
    moves: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    milps: int = 0
    seconds: float = 0.0


class MilpRepair:
    """The MILP repair of one table (see the module docstring).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0),
    ...               lpl=np.where(st == "U", 1.0, 0.0))
    >>> rep = MilpRepair(t, np.ones(9), np.ones(9, bool), Requirements.from_table(t))
    >>> out = rep.run(t.status, [4])
    >>> sorted(out.added), out.unresolved
    ([1, 2, 5], [])
    """

    def __init__(self, table, cost: np.ndarray, candidates: np.ndarray, req: Requirements,
                 *, integer: bool | None = None, settings: MilpRepairSettings | None = None):
        self.table, self.cost, self.req = table, np.asarray(cost, float), req
        self.candidates = np.asarray(candidates, bool)
        self.integer = table.kind == "frequency" if integer is None else bool(integer)
        self.settings = settings or MilpRepairSettings()
        self.A = table.relations.tocsr()
        self.At = self.A.T.tocsr()
        self.slot = np.full(table.n_cells, -1, dtype=np.int64)
        self.slot[req.primary] = np.arange(len(req.primary))

    def order(self, primaries) -> np.ndarray:
        """Largest requirement first (its suppressions then serve smaller ones), ties
        in cell order (neighbours share relations)."""
        cells = np.asarray(primaries, dtype=np.int64)
        cells = cells[self.slot[cells] >= 0]
        p = self.slot[cells]
        need = np.maximum.reduce([self.req.need_up[p], self.req.need_down[p],
                                  self.req.need_width[p]])
        return cells[np.lexsort((cells, -need))]

    def run(self, status: np.ndarray, primaries, *, deadline: float | None = None,
            quick_after: float | None = None, quick_when_late: bool = True,
            kinds: dict[int, tuple[str, ...]] | None = None) -> MilpRepairOutcome:
        """Repair ``primaries`` from ``status`` one by one (suppressions made for one are
        free for the next).  From ``quick_after`` on (a ``time.perf_counter()`` value),
        and (with ``quick_when_late``) whenever the pace so far would leave primaries
        unreached by ``deadline``, each primary gets the quick answer instead of its
        MILPs: the LP relaxation's witnesses with every candidate they move suppressed
        (one LP; safe, dearer).  Without it, the primaries not reached by ``deadline``
        are returned unresolved (the caller's LP repair takes them).
        ``kinds`` (per primary: some of ``"up"``, ``"down"``, ``"width"``) limits the
        conditions asked; default all of the primary's."""
        t0 = time.perf_counter()
        out = MilpRepairOutcome()
        suppressed = np.isin(np.asarray(status), ("U", "M"))
        order = self.order(primaries)
        for done, s in enumerate(order):
            s = int(s)
            now = time.perf_counter()
            if deadline is not None and now > deadline:
                out.unresolved.append(s)
                continue
            want = None if kinds is None else kinds.get(s)
            # quick answers once the MILPs' pace would leave primaries unreached
            pace = (now - t0) / done if done else 0.0
            late = quick_when_late and deadline is not None and done >= 3 and \
                now + pace * (len(order) - done) > deadline
            quick = late or (quick_after is not None and now > quick_after)
            found = self._primary(s, suppressed, want, deadline, out, quick)
            if found is None:
                out.unresolved.append(s)
                continue
            new, moves = found
            if len(new) == 0:
                out.free.append(s)
            suppressed[new] = True
            out.added.extend(int(c) for c in new)
            out.moves.extend(moves)
        out.seconds = time.perf_counter() - t0
        return out

    # ------------------------------------------------------------ one primary
    def _conditions(self, s: int, want) -> tuple[float, float, float]:
        """(need up, need down, width) asked of primary ``s`` (0: not asked)."""
        p = self.slot[s]
        req = self.req
        up, down, width = float(req.need_up[p]), float(req.need_down[p]), \
            float(req.need_width[p])
        if want is not None:
            up = up if "up" in want or "width" in want else 0.0
            down = down if "down" in want or "width" in want else 0.0
            width = width if "width" in want else 0.0
        if up <= 0 and down <= 0 and width <= 0:
            width = float(req.need_width[p])   # not even a point: never exact
        return up, down, width

    def _region(self, s: int, steps: int) -> np.ndarray:
        from tabprotect.secondary.deviation import neighbourhood
        return neighbourhood(self.table, s, steps - 1)

    def _primary(self, s, suppressed, want, deadline, out, quick=False):
        """(new cells, witnesses) for primary ``s``, or None: the cheapest answer over
        the neighbourhoods (a larger one offers more routes; on linked tables the
        cheap ones often run beyond the first), stopping at one that needs no cell."""
        need = self._conditions(s, want)
        last, best, best_cost = None, None, np.inf
        for steps in self.settings.steps:
            region = self._region(s, steps)
            if last is not None and len(region) == len(last):
                continue
            if len(region) > self.settings.max_region_cells:
                break
            last = region
            milp = _RegionMilp(self, s, region, suppressed, need)
            found = milp.quick(deadline, out) if quick else milp.solve(deadline, out)
            if found is None:
                continue
            if quick:
                return found
            cost = float(self.cost[found[0]].sum())
            if cost < best_cost:
                best, best_cost = found, cost
            if len(found[0]) == 0:
                break
        return best


class _RegionMilp:
    """One primary's MILP on one region, with its witnesses added lazily per attacker."""

    def __init__(self, rep: MilpRepair, s: int, region: np.ndarray, suppressed: np.ndarray,
                 need: tuple[float, float, float]):
        self.rep, self.s, self.region = rep, s, np.sort(region)
        self.need_up, self.need_down, self.width = need
        req = rep.req
        cells = self.region
        sup = suppressed[cells]
        cand = rep.candidates[cells] & ~sup
        cap = rep.settings.range_cap * max(need)
        self.hi = np.where(sup | cand, np.minimum(req.up[cells], cap), 0.0)
        self.lo = np.where(sup | cand, -np.minimum(req.down[cells], cap), 0.0)
        movable = (self.hi > 0) | (self.lo < 0)
        self.cand_local = np.flatnonzero(cand & movable)
        self.sup = sup
        rows = np.unique(rep.At[cells].indices)
        self.M = rep.A[rows][:, cells].tocsr()
        self.k = int(np.searchsorted(cells, s))
        self.single = rep.req.singleton[cells]

    def solve(self, deadline, out):
        """(new cells, witnesses) or None.  Witness pairs are added lazily: after each
        solve, the single-contributor cells that every pair moves get one more pair
        that keeps all of them still (each attacker needs one pair that does not move
        its own cell); if that pair is infeasible, one pair per such cell."""
        free = self._free_witnesses()
        if free is not None:
            return np.zeros(0, np.int64), free
        forbidden: list[np.ndarray] = [np.zeros(0, np.int64)]
        rep = self.rep
        split = False
        for _ in range(rep.settings.attacker_rounds + 1):
            limit = rep.settings.seconds_per_primary
            if deadline is not None:
                limit = min(limit, deadline - time.perf_counter())
                if limit <= 0:
                    return None
            res = self._solve(forbidden, limit)
            out.milps += 1
            if res is None:
                if split or len(forbidden) == 1:
                    return None
                # no pair keeps all of them still at once: one pair per cell
                last = forbidden.pop()
                forbidden += [np.array([j]) for j in last]
                split = True
                continue
            z, witnesses, status = res
            if status != "optimal":
                z, witnesses = self._cheaper_relaxed(forbidden, limit, z, witnesses)
            chosen = np.zeros(len(self.region), bool)
            chosen[self.cand_local[z > 0.5]] = True
            unserved = self._unserved(witnesses, chosen)
            if len(unserved) == 0:
                new = self.region[chosen]
                moves = [(self.region[np.flatnonzero(y)], y[np.flatnonzero(y)])
                         for y in witnesses]
                return new, moves
            forbidden.append(unserved)
        return None

    def quick(self, deadline, out):
        """(new cells, witnesses) from the LP relaxation alone (the candidates its
        witnesses move are suppressed), or None (no witness here; on an integer table
        also a fractional one)."""
        forbidden: list[np.ndarray] = [np.zeros(0, np.int64)]
        for _ in range(2):
            limit = self.rep.settings.seconds_per_primary
            if deadline is not None:
                limit = min(limit, deadline - time.perf_counter())
                if limit <= 0:
                    return None
            res = self._solve(forbidden, limit, relaxed=True)
            out.milps += 1
            if res is None:
                return None
            _, ys, _ = res
            if self.rep.integer and any(np.abs(y - np.round(y)).max(initial=0.0) > 1e-7
                                        for y in ys):
                return None
            moved = np.zeros(len(self.region), bool)
            for y in ys:
                moved |= np.abs(y) > 1e-9
            chosen = moved & ~self.sup
            chosen[np.setdiff1d(np.arange(len(self.region)), self.cand_local)] = False
            unserved = self._unserved(ys, chosen)
            if len(unserved) == 0:
                return self.region[chosen], [(self.region[np.flatnonzero(y)],
                                              y[np.flatnonzero(y)]) for y in ys]
            forbidden.append(unserved)
        return None

    def _cheaper_relaxed(self, forbidden, limit, z, witnesses):
        """A MILP stopped by its time limit may hold a poor incumbent: the LP
        relaxation's witnesses with every candidate they move suppressed are a
        solution too; the cheaper of the two (on an integer table only an integral
        relaxed solution counts)."""
        res = self._solve(forbidden, limit, relaxed=True)
        if res is None:
            return z, witnesses
        _, ys, _ = res
        if self.rep.integer and any(np.abs(y - np.round(y)).max(initial=0.0) > 1e-7
                                    for y in ys):
            return z, witnesses
        moved = np.zeros(len(self.region), bool)
        for y in ys:
            moved |= np.abs(y) > 1e-9
        z_lp = moved[self.cand_local].astype(float)
        cost = self.rep.cost[self.region[self.cand_local]]
        if cost @ z_lp < cost @ z:
            return z_lp, ys
        return z, witnesses

    def _free_witnesses(self):
        """Witnesses on the suppressed cells alone, from LPs (no binaries): a primary
        the audit calls short that the pattern protects after all costs no MILP.  On
        an integer table only an integral LP solution counts."""
        forbidden = [np.zeros(0, np.int64)]
        for _ in range(2):
            res = self._solve(forbidden, self.rep.settings.seconds_per_primary,
                              free_only=True)
            if res is None:
                return None
            _, witnesses, _ = res
            if self.rep.integer and any(
                    np.abs(y - np.round(y)).max(initial=0.0) > 1e-7 for y in witnesses):
                return None
            unserved = self._unserved(witnesses, np.zeros(len(self.region), bool))
            if len(unserved) == 0:
                return [(self.region[np.flatnonzero(y)], y[np.flatnonzero(y)])
                        for y in witnesses]
            forbidden.append(unserved)
        return None

    def _unserved(self, witnesses, chosen) -> np.ndarray:
        """Single-contributor cells (unpublished after the repair, not ``s``) that
        every pair of witnesses moves: their attackers have no witness yet."""
        if not self.single.any():
            return np.zeros(0, np.int64)
        unpublished = self.sup | chosen
        served = np.zeros(len(self.region), bool)
        for b in range(0, len(witnesses), self.n_parts):
            still = np.ones(len(self.region), bool)
            for y in witnesses[b:b + self.n_parts]:
                still &= np.abs(y) <= 1e-9
            served |= still
        out = self.single & unpublished & ~served
        out[self.k] = False
        return np.flatnonzero(out)

    def _solve(self, forbidden: list[np.ndarray], limit: float, free_only: bool = False,
               relaxed: bool = False):
        """Solve the MILP with a pair of witnesses per entry of ``forbidden`` (the
        region's cells that pair keeps still); returns (z, witnesses in region
        coordinates, solver status) or None.  ``free_only``: no new cell (z = 0), an
        LP; ``relaxed``: the LP relaxation (witnesses may move any candidate whose
        ``z`` is above 0)."""
        m = len(self.region)
        nc = len(self.cand_local)
        parts = []
        if self.need_up > 0 or self.width > 0:
            parts.append(1.0)
        if self.need_down > 0 or self.width > 0:
            parts.append(-1.0)
        self.n_parts = len(parts)
        blocks = [(f, sign) for f in forbidden for sign in parts]
        nv = len(blocks)
        n_cols = nc + nv * m
        c = np.zeros(n_cols)
        c[:nc] = self.rep.cost[self.region[self.cand_local]]
        col_lo = np.concatenate([np.zeros(nc)] + [self.lo] * nv)
        col_hi = np.concatenate([np.ones(nc)] + [self.hi] * nv)
        rows_eq = []
        link = []
        for b, (j, sign) in enumerate(blocks):
            off = nc + b * m
            col_lo[off + j] = col_hi[off + j] = 0.0
            if sign > 0 and self.need_up > 0:
                col_lo[off + self.k] = max(col_lo[off + self.k], self.need_up)
            if sign < 0 and self.need_down > 0:
                col_hi[off + self.k] = min(col_hi[off + self.k], -self.need_down)
            if sign > 0:
                col_lo[off + self.k] = max(col_lo[off + self.k], 0.0)
            else:
                col_hi[off + self.k] = min(col_hi[off + self.k], 0.0)
            if col_lo[off + self.k] > col_hi[off + self.k] + 1e-9:
                return None
            rows_eq.append(sp.hstack([sp.csr_matrix((self.M.shape[0], off)), self.M,
                                      sp.csr_matrix((self.M.shape[0], n_cols - off - m))]))
            # y_i - hi_i z_i <= 0 and -y_i + lo_i z_i <= 0 for the candidates
            idx = self.cand_local
            r = np.arange(nc)
            up_rows = sp.csr_matrix((np.concatenate([np.ones(nc), -self.hi[idx]]),
                                     (np.concatenate([r, r]),
                                      np.concatenate([off + idx, r]))), shape=(nc, n_cols))
            dn_rows = sp.csr_matrix((np.concatenate([-np.ones(nc), self.lo[idx]]),
                                     (np.concatenate([r, r]),
                                      np.concatenate([off + idx, r]))), shape=(nc, n_cols))
            link += [up_rows, dn_rows]
        n_eq = sum(x.shape[0] for x in rows_eq)
        extra = []
        if self.width > 0 and len(parts) == 2:
            for a in range(len(forbidden)):
                row = np.zeros(n_cols)
                row[nc + (2 * a) * m + self.k] = 1.0
                row[nc + (2 * a + 1) * m + self.k] = -1.0
                extra.append(sp.csr_matrix(row))
        A = sp.vstack(rows_eq + link + extra, format="csr")
        n_link = A.shape[0] - n_eq - len(extra)
        row_lo = np.concatenate([np.zeros(n_eq), np.full(n_link, -np.inf),
                                 np.full(len(extra), self.width)])
        row_hi = np.concatenate([np.zeros(n_eq), np.zeros(n_link),
                                 np.full(len(extra), np.inf)])
        integrality = np.zeros(n_cols, bool)
        integrality[:nc] = True
        if self.rep.integer:
            integrality[nc:] = True
        if free_only:
            col_hi[:nc] = 0.0
        if free_only or relaxed:
            integrality = None
        lp = LinearProgram(c=c, A=A, row_lower=row_lo, row_upper=row_hi, col_lower=col_lo,
                           col_upper=col_hi, integrality=integrality)
        res = solve(lp, time_limit=max(limit, 0.05), mip_gap=self.rep.settings.mip_gap)
        if res.x is None or res.status not in ("optimal", "time_limit"):
            return None
        z = np.round(res.x[:nc])
        witnesses = []
        for b in range(nv):
            y = res.x[nc + b * m: nc + (b + 1) * m].copy()
            if self.rep.integer and integrality is not None:
                y = np.round(y)
            y[np.abs(y) < 1e-9] = 0.0
            if integrality is not None:
                # a witness moves only suppressed and chosen cells
                y[(~self.sup) & ~np.isin(np.arange(m), self.cand_local[z > 0.5])] = 0.0
            witnesses.append(y)
        return z, witnesses, res.status

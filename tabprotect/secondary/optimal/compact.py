"""The compact engine: one MILP with a binary ``z_i`` per candidate cell and, per primary
cell and direction, a deviation vector ``f`` with ``A f = 0``, ``-(a_i - lb_i) z_i <= f_i
<= (ub_i - a_i) z_i`` and ``f_s >= UPL'_s`` (``<= -LPL'_s``).  It needs finite deviation
ranges (given bounds, or bounds the relations imply for every pattern,
:func:`~tabprotect.secondary.attack_requirements.derived_upper_bounds`; never a big-M), and its
memory grows with primaries x cells: small tables only."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.errors import InfeasibleRulesError
from tabprotect.secondary.base import MethodOutcome
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.attacker_oracle import AttackerOracle
from tabprotect.secondary.repair import GreedyRepair


def compact(table, cost: np.ndarray, req: Requirements, cand: np.ndarray, *,
            time_limit: float | None = None, mip_gap: float | None = None,
            progress: Callable[[str, float], None] | None = None,
            max_rounds: int = 50) -> MethodOutcome:
    """The compact deviation-vector MILP (needs finite deviation ranges on the cells that
    may move).  Single-contributor attackers are added as further deviation vectors (with
    ``f_j = 0``) when the oracle finds one violated, and the MILP is re-solved."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    fixed = np.isin(table.status, ("U", "M"))
    movable = np.flatnonzero((cand | fixed) & ((req.up > 0) | (req.down > 0)))
    if np.isinf(req.up[movable]).any() or np.isinf(req.down[movable]).any():
        raise ValueError("compact model needs finite deviation ranges")
    oracle = AttackerOracle(table, req)
    cand_idx = np.flatnonzero(cand)
    zcol = np.full(table.n_cells, -1, dtype=np.int64)
    zcol[cand_idx] = np.arange(len(cand_idx))
    A = table.relations.tocsr()[:, movable].tocsc()
    rows_used = np.flatnonzero(np.diff(A.tocsr().indptr) > 0)
    A = A.tocsr()[rows_used]
    mloc = {int(c): k for k, c in enumerate(movable)}
    # conditions: (primary slot, direction(s), attacker j)
    conditions = []
    for p, s in enumerate(req.primary):
        if req.need_up[p] > 0 or req.need_width[p] > 0:
            conditions.append((p, "up", -1))
        if req.need_down[p] > 0 or req.need_width[p] > 0:
            conditions.append((p, "down", -1))
    stats = {"engine": "compact", "rounds": 0, "vectors": 0}
    proven = False
    status_txt = "time_limit"
    best = None
    gap = None
    for _ in range(max_rounds):
        lp, nz = _compact_lp(A, movable, mloc, zcol, cand_idx, cost, req, conditions, fixed)
        remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
        model = HighsModel(lp, mip_gap=mip_gap)  # threads: see Master
        res = model.solve(time_limit=remaining)
        stats["rounds"] += 1
        stats["vectors"] = len(conditions)
        if res.status == "infeasible":
            raise InfeasibleRulesError("the protection levels cannot be met by any pattern")
        if not res.has_solution:
            break
        z = fixed.copy()
        z[cand_idx] = np.round(res.x[:nz]) > 0.5
        chk = oracle.check(z, cuts=False)
        gap = res.mip_gap
        if chk.ok:
            best = z
            proven = res.status == "optimal"
            status_txt = res.status
            break
        new = {(int(oracle.slot[s]), kind, j) for s, kind, j in chk.violated}
        added = 0
        for p, kind, j in new:
            kinds = ("up", "down") if kind == "width" else (kind,)
            for kd in kinds:
                if (p, kd, j) not in conditions:
                    conditions.append((p, kd, j))
                    added += 1
        if added == 0 or (deadline is not None and time.perf_counter() > deadline):
            break
    if best is None:
        repair = GreedyRepair(table, req, cost, cand, oracle)
        start = z if "z" in locals() else fixed
        best, _ = repair.run(start)
        proven = False
        status_txt = "time_limit"
    status = table.status.copy()
    status[best & ~fixed] = "M"
    stats.update(cost=float(cost[best & ~fixed].sum()), seconds=time.perf_counter() - t0)
    return MethodOutcome(status=status, proven_optimal=proven, solver_status=status_txt,
                         mip_gap=0.0 if proven else gap, details=stats)


def _compact_lp(A, movable, mloc, zcol, cand_idx, cost, req, conditions, fixed):
    """Columns: z (candidates), then one block of len(movable) deviations per condition."""
    nz = len(cand_idx)
    k = len(movable)
    m = A.shape[0]
    up = req.up[movable]
    dn = req.down[movable]
    is_cand = zcol[movable] >= 0
    blocks_A, row_lo, row_hi = [], [], []
    col_lo, col_hi = [np.zeros(nz)], [np.ones(nz)]
    n_rows = 0
    link_rows, link_cols, link_vals = [], [], []
    # per condition: A f = 0 (m rows), f_i - up_i z_i <= 0, f_i + dn_i z_i >= 0 (candidates)
    cand_pos = np.flatnonzero(is_cand)
    zc = zcol[movable][cand_pos]
    by_primary: dict[int, dict[str, int]] = {}
    for b, (p, kind, j) in enumerate(conditions):
        off = nz + b * k
        blocks_A.append((n_rows, off))
        row_lo.append(np.zeros(m))
        row_hi.append(np.zeros(m))
        n_rows += m
        lo = -dn.copy()
        hi = up.copy()
        s = int(req.primary[p])
        ls = mloc[s]
        if kind == "up":
            lo[ls] = max(lo[ls], req.need_up[p] if req.need_up[p] > 0 else lo[ls])
        else:
            hi[ls] = min(hi[ls], -req.need_down[p] if req.need_down[p] > 0 else hi[ls])
        if lo[ls] > hi[ls]:
            # the primary's own range is short of its level: no pattern protects it
            raise InfeasibleRulesError("the protection levels cannot be met by any pattern")
        if j >= 0 and j in mloc:
            lo[mloc[j]] = hi[mloc[j]] = 0.0
        col_lo.append(lo)
        col_hi.append(hi)
        r = np.arange(len(cand_pos))
        # f_i - up_i z_i <= 0
        link_rows += [n_rows + r, n_rows + r, n_rows + len(cand_pos) + r,
                      n_rows + len(cand_pos) + r]
        link_cols += [off + cand_pos, zc, off + cand_pos, zc]
        link_vals += [np.ones(len(r)), -up[cand_pos], np.ones(len(r)), dn[cand_pos]]
        row_lo += [np.full(len(r), -np.inf), np.zeros(len(r))]
        row_hi += [np.zeros(len(r)), np.full(len(r), np.inf)]
        n_rows += 2 * len(cand_pos)
        by_primary.setdefault((p, j), {})[kind] = off + ls
    # sliding: f^up_s - f^down_s >= SPL
    slide_rows = []
    for (p, _j), cols in by_primary.items():
        if req.need_width[p] > 0 and "up" in cols and "down" in cols:
            slide_rows.append((n_rows, cols["up"], cols["down"], req.need_width[p]))
            row_lo.append(np.array([req.need_width[p]]))
            row_hi.append(np.array([np.inf]))
            n_rows += 1
    n_cols = nz + len(conditions) * k
    Acoo = A.tocoo()
    parts_r, parts_c, parts_v = [], [], []
    for r0, off in blocks_A:
        parts_r.append(Acoo.row + r0)
        parts_c.append(Acoo.col + off)
        parts_v.append(Acoo.data)
    for r, cu, cd, _ in slide_rows:
        parts_r.append(np.array([r, r]))
        parts_c.append(np.array([cu, cd]))
        parts_v.append(np.array([1.0, -1.0]))
    M = sp.csr_matrix((np.concatenate(parts_v + link_vals),
                       (np.concatenate(parts_r + link_rows), np.concatenate(parts_c + link_cols))),
                      shape=(n_rows, n_cols))
    c = np.zeros(n_cols)
    c[:nz] = cost[cand_idx]
    integ = np.zeros(n_cols, bool)
    integ[:nz] = True
    lp = LinearProgram(c=c, A=M, row_lower=np.concatenate(row_lo), row_upper=np.concatenate(row_hi),
                       col_lower=np.concatenate(col_lo), col_upper=np.concatenate(col_hi),
                       integrality=integ)
    return lp, nz

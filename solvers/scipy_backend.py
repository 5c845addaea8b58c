"""scipy backend: ``scipy.optimize.milp`` for MIPs, ``linprog(method="highs")`` for LPs.

A fallback needing nothing beyond scipy. It cannot warm-start and ignores ``threads``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from .model import LinearProgram, SolveResult

__all__ = ["solve_scipy"]


def _bounds_list(lp: LinearProgram):
    lo = np.where(np.isfinite(lp.col_lower), lp.col_lower, -np.inf)
    up = np.where(np.isfinite(lp.col_upper), lp.col_upper, np.inf)
    return np.column_stack([lo, up])


def _solve_lp(lp: LinearProgram, time_limit, verbose, options) -> tuple[str, Any, dict]:
    from scipy.optimize import linprog

    sign = -1.0 if lp.sense == "max" else 1.0  # linprog only minimises
    A = lp.A
    lo, up = lp.row_lower, lp.row_upper
    eq = np.flatnonzero(lo == up)
    ub = np.flatnonzero((lo != up) & np.isfinite(up))
    lb = np.flatnonzero((lo != up) & np.isfinite(lo))
    A_eq = A[eq] if eq.size else None
    b_eq = lo[eq] if eq.size else None
    # Row lower bounds become -A x <= -lo.
    if ub.size or lb.size:
        A_ub = sp.vstack([A[ub], -A[lb]], format="csr")
        b_ub = np.concatenate([up[ub], -lo[lb]])
    else:
        A_ub = b_ub = None
    opts = {"disp": bool(verbose)}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    opts.update(options)
    res = linprog(sign * lp.c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                  bounds=_bounds_list(lp), method="highs", options=opts)
    msg = str(getattr(res, "message", ""))
    if res.status == 0:
        status = "optimal"
    elif res.status == 2:
        status = "infeasible"
    elif res.status == 3:
        status = "unbounded"
    elif res.status == 1 and "time" in msg.lower():
        status = "time_limit_no_solution"  # an LP stopped early has no certified point
    elif "infeasible or unbounded" in msg.lower() or "unbounded or infeasible" in msg.lower():
        status = "unbounded_or_infeasible"
    else:
        status = "error"
    out: dict[str, Any] = {"message": msg, "nit": getattr(res, "nit", None)}
    if status == "optimal":
        out["x"] = np.asarray(res.x, dtype=np.float64)
        duals = np.zeros(lp.n_rows)
        try:
            # marginals = d(min objective)/d(rhs); lower rows were negated.
            if eq.size:
                duals[eq] += res.eqlin.marginals
            if ub.size or lb.size:
                mu = np.asarray(res.ineqlin.marginals)
                duals[ub] += mu[: ub.size]
                duals[lb] -= mu[ub.size:]
            rc = np.asarray(res.lower.marginals) + np.asarray(res.upper.marginals)
            out["duals"] = sign * duals
            out["rc"] = sign * rc
        except (AttributeError, TypeError):  # older scipy without marginals
            pass
    return status, res, out


def _solve_mip(lp: LinearProgram, time_limit, mip_gap, verbose, options):
    from scipy.optimize import Bounds, LinearConstraint, milp

    sign = -1.0 if lp.sense == "max" else 1.0
    cons = []
    if lp.n_rows:
        cons.append(LinearConstraint(lp.A, lp.row_lower, lp.row_upper))
    opts: dict[str, Any] = {"disp": bool(verbose)}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    if mip_gap is not None:
        opts["mip_rel_gap"] = float(mip_gap)
    opts.update(options)
    res = milp(sign * lp.c, integrality=lp.integrality.astype(np.uint8),
               bounds=Bounds(lp.col_lower, lp.col_upper), constraints=cons, options=opts)
    msg = str(getattr(res, "message", ""))
    has_x = getattr(res, "x", None) is not None
    if res.status == 0:
        status = "optimal"
    elif res.status == 1:
        if "time" in msg.lower():
            status = "time_limit" if has_x else "time_limit_no_solution"
        else:
            status = "error"
    elif res.status == 2:
        status = "infeasible"
    elif res.status == 3:
        status = "unbounded"
    elif "infeasible or unbounded" in msg.lower() or "unbounded or infeasible" in msg.lower():
        status = "unbounded_or_infeasible"
    else:
        status = "error"
    out: dict[str, Any] = {"message": msg, "nodes": getattr(res, "mip_node_count", None)}
    if status in ("optimal", "time_limit") and has_x:
        out["x"] = np.asarray(res.x, dtype=np.float64)
    gap = getattr(res, "mip_gap", None)
    if gap is not None and np.isfinite(gap):
        out["gap"] = max(float(gap), 0.0)
    return status, res, out


def solve_scipy(
    lp: LinearProgram,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,  # noqa: ARG001 - scipy exposes no thread control
    verbose: bool = False,
    **options: Any,
) -> SolveResult:
    """Solve ``lp`` with scipy; ``options`` go to linprog/milp's ``options`` dict."""
    if lp.is_qp:
        raise ValueError("the 'scipy' backend solves no quadratic objective; use 'highs'")
    t0 = time.perf_counter()
    if lp.n_cols == 0:
        return SolveResult.without_columns(lp.row_lower, lp.row_upper, lp.offset, "scipy",
                                           time.perf_counter() - t0)
    if lp.is_mip:
        status, res, out = _solve_mip(lp, time_limit, mip_gap, verbose, options)
    else:
        status, res, out = _solve_lp(lp, time_limit, verbose, options)
    if status == "unbounded_or_infeasible":
        # Same constraints, zero objective: feasible means the original was unbounded.
        feas = solve_scipy(lp.with_objective(np.zeros(lp.n_cols)), time_limit=time_limit)
        status = "unbounded" if feas.status == "optimal" else "infeasible"
    x = out.get("x")
    objective = float(lp.c @ x + lp.offset) if x is not None else None
    rt = time.perf_counter() - t0
    if lp.is_mip:
        core = f"nodes={out.get('nodes')} gap={out.get('gap')}"
    else:
        core = f"iters={out.get('nit')}"
    summary = f"scipy: {status} ({out.get('message', '')}) {core} time={rt:.3f}s"
    return SolveResult(
        status=status, objective=objective, x=x,
        duals=out.get("duals"), reduced_costs=out.get("rc"),
        mip_gap=out.get("gap") if lp.is_mip and status != "infeasible" else None,
        runtime=rt, backend="scipy", log_summary=summary,
    )

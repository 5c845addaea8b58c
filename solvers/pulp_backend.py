"""PuLP backend: CBC by default, or any solver PuLP knows (commercial ones included)."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from .model import LinearProgram, SolveResult

__all__ = ["solve_pulp", "pulp_available"]


def _import_pulp():
    try:
        import pulp
    except ImportError as exc:
        raise ImportError(
            "the 'pulp' backend needs the PuLP package (pip install pulp); "
            f"import failed with: {exc}"
        ) from exc
    return pulp


def pulp_available() -> bool:
    try:
        _import_pulp()
        return True
    except ImportError:
        return False


def _bound(v: float) -> float | None:
    # PuLP spells an infinite bound as None.
    return None if not np.isfinite(v) else float(v)


_CBC_SOLVERS = ("COIN_CMD", "PULP_CBC_CMD")


def _make_solver(pulp, name: str, verbose: bool, time_limit, mip_gap, threads, options):
    kwargs: dict[str, Any] = {"msg": bool(verbose)}
    if time_limit is not None:
        kwargs["timeLimit"] = float(time_limit)
    if mip_gap is not None:
        kwargs["gapRel"] = float(mip_gap)
    if threads is not None:
        kwargs["threads"] = int(threads)
    if name in _CBC_SOLVERS and "options" not in options:
        # CBC's Cgl preprocessing returns a wrong optimum when it reduces a model to no rows
        # (it then fixes the remaining integer columns without looking at their costs);
        # the MILPs this backend serves are small, so correctness wins over its speed-up.
        kwargs["options"] = ["preprocess off"]
    kwargs.update(options)
    try:
        with warnings.catch_warnings():
            # PuLP 3.x flags its bundled CBC (PULP_CBC_CMD) as deprecated in favour of
            # COIN_CMD + a separately installed CBC; we prefer COIN_CMD when present.
            warnings.simplefilter("ignore", DeprecationWarning)
            solver = pulp.getSolver(name, **kwargs)
    except pulp.PulpSolverError as exc:
        raise ValueError(
            f"PuLP solver {name!r} unknown; PuLP lists {pulp.listSolvers()}"
        ) from exc
    except TypeError:
        kwargs.pop("threads", None)  # not every PuLP solver takes threads
        solver = pulp.getSolver(name, **kwargs)
    if not solver.available():
        raise ImportError(
            f"PuLP solver {name!r} is not available on this machine; available: "
            f"{pulp.listSolvers(onlyAvailable=True)}"
        )
    return solver


_DEFAULT_SOLVER: str | None = None


def _default_solver(pulp) -> str:
    global _DEFAULT_SOLVER
    if _DEFAULT_SOLVER is None:
        try:
            avail = pulp.listSolvers(onlyAvailable=True)
        except Exception:  # pragma: no cover
            avail = []
        _DEFAULT_SOLVER = "COIN_CMD" if "COIN_CMD" in avail else "PULP_CBC_CMD"
    return _DEFAULT_SOLVER


def solve_pulp(
    lp: LinearProgram,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    verbose: bool = False,
    solver: str | None = None,
    **options: Any,
) -> SolveResult:
    """Solve ``lp`` through PuLP.

    ``solver`` is any name from ``pulp.listSolvers()`` (e.g. ``"PULP_CBC_CMD"``,
    ``"HiGHS"``, ``"HiGHS_CMD"``, ``"GUROBI_CMD"``, ``"CPLEX_CMD"``); remaining
    ``options`` go to that solver's constructor. Default: CBC (``COIN_CMD`` when a CBC
    binary is installed, else PuLP's bundled ``PULP_CBC_CMD``).
    """
    if lp.is_qp:
        raise ValueError("the 'pulp' backend solves no quadratic objective; use 'highs'")
    pulp = _import_pulp()
    if solver is None:
        solver = _default_solver(pulp)
    t0 = time.perf_counter()
    prob, xs = _model(pulp, lp)
    row_cons = _add_rows(pulp, prob, lp, xs)

    if lp.n_cols == 0:
        # PuLP cannot write a model without variables; decide feasibility directly.
        return SolveResult.without_columns(lp.row_lower, lp.row_upper, lp.offset, "pulp",
                                           time.perf_counter() - t0)

    error = _solve(pulp, prob, solver, verbose, time_limit, mip_gap, threads, options)
    if error is not None:
        rt = time.perf_counter() - t0
        return SolveResult(status="error", runtime=rt, backend="pulp",
                           log_summary=f"pulp/{solver}: error: {error}")
    st, sol_st = prob.status, prob.sol_status
    status = _status(pulp, st, sol_st, time_limit)
    status, objective, x, duals, rc = _solution(lp, xs, row_cons, status)
    rt = time.perf_counter() - t0
    summary = (f"pulp/{solver}: {status} (status={pulp.LpStatus.get(st, st)}, "
               f"sol_status={pulp.LpSolution.get(sol_st, sol_st)}) time={rt:.3f}s")
    return SolveResult(status=status, objective=objective, x=x, duals=duals,
                       reduced_costs=rc, mip_gap=(0.0 if (lp.is_mip and status == "optimal" and mip_gap is None) else None),
                       runtime=rt, backend="pulp", log_summary=summary)


def _model(pulp, lp: LinearProgram):
    """The PuLP problem with ``lp``'s variables and objective, and the variables."""
    n = lp.n_cols
    sense = pulp.LpMaximize if lp.sense == "max" else pulp.LpMinimize
    prob = pulp.LpProblem("tabprotect_lp", sense)

    integ = lp.integrality if lp.is_mip else np.zeros(n, dtype=bool)
    # Variables in a plain list: LpVariable.dicts is slow for large n.
    # PuLP >= 3.3 wants variables created through the problem (LpVariable(...) directly
    # is deprecated there); older PuLP only has the constructor.
    make_var = getattr(prob, "add_variable", None) or pulp.LpVariable
    xs = [
        make_var(
            f"x{j}",
            lowBound=_bound(lp.col_lower[j]),
            upBound=_bound(lp.col_upper[j]),
            cat=pulp.LpInteger if integ[j] else pulp.LpContinuous,
        )
        for j in range(n)
    ]
    nz = np.flatnonzero(lp.c)
    obj = pulp.LpAffineExpression([(xs[j], float(lp.c[j])) for j in nz], constant=lp.offset)
    prob.setObjective(obj)
    return prob, xs


def _add_rows(pulp, prob, lp: LinearProgram, xs: list) -> list[list[Any]]:
    """Add ``lp``'s rows to ``prob``; per row, the PuLP constraint(s) that carry its dual."""
    m = lp.n_rows
    row_cons: list[list[Any]] = [[] for _ in range(m)]
    A = lp.A
    indptr, indices, data = A.indptr, A.indices, A.data
    for i in range(m):
        lo, up = lp.row_lower[i], lp.row_upper[i]
        if not np.isfinite(lo) and not np.isfinite(up):
            continue  # a free row constrains nothing
        s, e = indptr[i], indptr[i + 1]
        terms = [(xs[j], float(v)) for j, v in zip(indices[s:e].tolist(), data[s:e].tolist())]
        if lo == up:
            parts = [("e", pulp.LpConstraintEQ, lo)]
        else:
            parts = []
            if np.isfinite(lo):
                parts.append(("l", pulp.LpConstraintGE, lo))
            if np.isfinite(up):
                parts.append(("u", pulp.LpConstraintLE, up))
        for tag, csense, rhs in parts:
            con = pulp.LpConstraint(pulp.LpAffineExpression(terms), sense=csense,
                                    rhs=float(rhs), name=f"r{i}{tag}")
            prob.addConstraint(con)
            row_cons[i].append(con)
    return row_cons


def _solve(pulp, prob, solver: str, verbose: bool, time_limit, mip_gap, threads,
           options: dict):
    """Solve ``prob``; the solver's error, or None."""
    sv = _make_solver(pulp, solver, verbose, time_limit, mip_gap, threads, options)
    try:
        prob.solve(sv)
    except pulp.PulpSolverError as exc:
        error = exc
        if solver in _CBC_SOLVERS and "options" not in options:
            # CBC without its preprocessing crashes on some infeasible models that the
            # preprocessing itself proves infeasible: ask once more with it on
            sv = _make_solver(pulp, solver, verbose, time_limit, mip_gap, threads,
                              {**options, "options": []})
            try:
                prob.solve(sv)
                error = None
            except pulp.PulpSolverError as exc2:
                error = exc2
        return error
    return None


def _status(pulp, st, sol_st, time_limit) -> str:
    """The solve's status from PuLP's status and solution status."""
    has_sol = sol_st in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    if st == pulp.LpStatusOptimal and sol_st == pulp.LpSolutionIntegerFeasible:
        return "time_limit"  # CBC stopped (time limit) with an incumbent
    if st == pulp.LpStatusOptimal:
        return "optimal"
    if st == pulp.LpStatusInfeasible:
        return "infeasible"
    if st == pulp.LpStatusUnbounded:
        return "unbounded"
    if st == pulp.LpStatusNotSolved and time_limit is not None:
        return "time_limit" if has_sol else "time_limit_no_solution"
    return "error"


def _solution(lp: LinearProgram, xs: list, row_cons: list, status: str):
    """(status, objective, x, duals, reduced costs) read back from the variables."""
    objective = x = duals = rc = None
    if status in ("optimal", "time_limit"):
        # A variable in no constraint and with zero cost never reaches the solver
        # (varValue None): any value within its bounds is optimal; take the one nearest 0.
        free_val = np.clip(0.0, lp.col_lower, lp.col_upper)
        x = np.array([v.varValue if v.varValue is not None else free_val[j]
                      for j, v in enumerate(xs)], dtype=np.float64)
        if np.isnan(x).any():
            status, x = ("error" if status == "optimal" else "time_limit_no_solution"), None
        else:
            objective = float(lp.c @ x + lp.offset)
            if not lp.is_mip and status == "optimal":
                duals = _row_duals(row_cons, lp.n_rows)
                rc = np.array([v.dj if v.dj is not None else
                               (0.0 if v.varValue is None else np.nan) for v in xs],
                              dtype=np.float64)
                if duals is None or np.isnan(rc).any():
                    duals = rc = None
    return status, objective, x, duals, rc


def _row_duals(row_cons, m: int) -> np.ndarray | None:
    """Row duals: a ranged row became two constraints; at most one is active, add them."""
    duals = np.zeros(m, dtype=np.float64)
    for i, cons in enumerate(row_cons):
        for con in cons:
            if con.pi is None:
                return None
            duals[i] += float(con.pi)
    return duals

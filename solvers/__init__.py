"""LP/MILP layer of tabprotect. Knows nothing about tables.

A sparse :class:`LinearProgram`, one :func:`solve` entry point over several backends
(``"highs"`` default, ``"pulp"``, ``"scipy"``), a uniform :class:`SolveResult`, and the
persistent :class:`HighsModel` for thousands of warm re-solves on one matrix.

Examples
--------
>>> import numpy as np, scipy.sparse as sp
>>> from solvers import LinearProgram, solve
>>> lp = LinearProgram(c=np.array([-1.0, -2.0]), A=sp.csr_matrix([[1.0, 1.0]]),
...                    row_lower=np.array([-np.inf]), row_upper=np.array([4.0]),
...                    col_upper=np.array([3.0, 3.0]))
>>> res = solve(lp)
>>> res.status, round(res.objective, 6)
('optimal', -7.0)
"""

from __future__ import annotations

from typing import Any, Callable

from .highs_backend import HighsModel, highs_available, solve_highs
from .model import STATUSES, LinearProgram, SolveResult

__all__ = [
    "LinearProgram",
    "SolveResult",
    "solve",
    "HighsModel",
    "BACKENDS",
    "available_backends",
    "STATUSES",
]

def _solve_pulp(lp: LinearProgram, **keywords: Any) -> SolveResult:
    from .pulp_backend import solve_pulp   # loaded when first asked for
    return solve_pulp(lp, **keywords)


def _solve_scipy(lp: LinearProgram, **keywords: Any) -> SolveResult:
    from .scipy_backend import solve_scipy   # loaded when first asked for
    return solve_scipy(lp, **keywords)


def _pulp_available() -> bool:
    from .pulp_backend import pulp_available
    return pulp_available()


#: Backend name -> solve function ``f(lp, time_limit, mip_gap, threads, verbose, **options)``.
BACKENDS: dict[str, Callable[..., SolveResult]] = {
    "highs": solve_highs,
    "pulp": _solve_pulp,
    "scipy": _solve_scipy,
}


def _scipy_available() -> bool:
    try:
        import scipy.optimize  # noqa: F401

        return hasattr(scipy.optimize, "milp")
    except ImportError:  # pragma: no cover
        return False


def available_backends() -> list[str]:
    """Backends whose Python package is importable here (``"highs"`` first)."""
    checks = {"highs": highs_available, "pulp": _pulp_available, "scipy": _scipy_available}
    return [name for name in BACKENDS if checks[name]()]


def solve(
    lp: LinearProgram,
    backend: str = "highs",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    verbose: bool = False,
    **options: Any,
) -> SolveResult:
    """Solve a linear or mixed-integer program.

    Parameters
    ----------
    lp : LinearProgram
    backend : {"highs", "pulp", "scipy"}
        ``"highs"``: highspy (default, fastest, gives duals). ``"pulp"``: PuLP with CBC;
        pass ``solver="HiGHS"`` / ``"GUROBI_CMD"`` / ... for any solver PuLP knows.
        ``"scipy"``: ``scipy.optimize.milp`` / ``linprog(method="highs")``.
    time_limit : float, optional
        Seconds. On expiry the status is ``"time_limit"`` (with the incumbent in ``x``)
        or ``"time_limit_no_solution"``.
    mip_gap : float, optional
        Relative MIP gap at which the search stops (reported as "optimal").
    threads : int, optional
        Solver threads (ignored by scipy; HiGHS fixes its pool at the first solve).
    verbose : bool
        Show the solver log.
    **options
        Backend specific: HiGHS option names (``presolve="off"``), PuLP ``solver=`` and
        solver constructor arguments, scipy ``options`` entries.

    Returns
    -------
    SolveResult

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import LinearProgram, solve
    >>> lp = LinearProgram(c=np.array([1.0]), A=None, row_lower=[], row_upper=[],
    ...                    col_lower=np.array([2.0]), col_upper=np.array([5.0]))
    >>> solve(lp, backend="scipy").objective
    2.0
    """
    if not isinstance(lp, LinearProgram):
        raise TypeError(f"solve() expects a LinearProgram, got {type(lp).__name__}")
    key = str(backend).lower()
    if key not in BACKENDS:
        raise ValueError(
            f"unknown solver backend {backend!r}; available backends: "
            f"{', '.join(available_backends())} (known: {', '.join(BACKENDS)})"
        )
    return BACKENDS[key](lp, time_limit=time_limit, mip_gap=mip_gap, threads=threads,
                         verbose=verbose, **options)

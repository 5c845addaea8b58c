"""Solver-independent problem and result containers.

Nothing here knows about tables: a :class:`LinearProgram` is just a sparse
``min/max c'x  s.t.  row_lower <= A x <= row_upper,  col_lower <= x <= col_upper``
with optional integrality, and a :class:`SolveResult` is what every backend returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

#: Every status a backend may report (see :class:`SolveResult`).
STATUSES = (
    "optimal",
    "time_limit",
    "time_limit_no_solution",
    "infeasible",
    "unbounded",
    "error",
)


def _as_float_vector(x, n: int, default: float, name: str) -> np.ndarray:
    """Return ``x`` as a fresh float64 vector of length ``n`` (``default`` when ``x`` is None)."""
    if x is None:
        return np.full(n, default, dtype=np.float64)
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 0:  # a scalar applies to every entry
        return np.full(n, float(arr), dtype=np.float64)
    arr = arr.ravel()
    if arr.shape[0] != n:
        raise ValueError(f"LinearProgram: {name} has length {arr.shape[0]}, expected {n}")
    return arr.copy()


@dataclass
class LinearProgram:
    """A sparse linear (or mixed-integer) program.

    ``sense c'x + offset`` subject to ``row_lower <= A x <= row_upper`` and
    ``col_lower <= x <= col_upper``; ``integrality[j]`` True makes ``x_j`` integer.

    Parameters
    ----------
    c : array of length n
        Objective coefficients.
    A : scipy.sparse matrix (m x n), dense array, or None
        Constraint matrix; stored as CSR float64. None (or a 0 x n matrix) means no rows.
    row_lower, row_upper : arrays of length m
        Row bounds; ``-inf`` / ``+inf`` allowed. Equal bounds make an equality row.
        None means ``-inf`` / ``+inf``.
    col_lower, col_upper : arrays of length n, or scalars
        Column bounds. Defaults 0 and ``+inf`` (non-negative variables).
    integrality : bool array of length n, or None
        True marks an integer variable. None (or all False) makes the problem an LP.
    hessian : vector of length n, scipy.sparse matrix (n x n), or None
        A quadratic term: the objective becomes ``c'x + 1/2 x'Hx + offset`` (a vector is
        the diagonal of H). H must be symmetric and, for a minimisation, positive
        semi-definite (a convex QP). Only the ``highs`` backend solves quadratic
        programs, and only continuous ones (HiGHS has no mixed-integer QP).
    sense : {"min", "max"}
    offset : float
        Constant added to the objective value.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> lp = LinearProgram(c=np.array([1.0, 2.0]), A=sp.csr_matrix([[1.0, 1.0]]),
    ...                    row_lower=np.array([1.0]), row_upper=np.array([np.inf]))
    >>> lp.n_cols, lp.n_rows, lp.is_mip
    (2, 1, False)
    """

    c: np.ndarray
    A: sp.csr_matrix | None = None
    row_lower: np.ndarray | None = None
    row_upper: np.ndarray | None = None
    col_lower: np.ndarray | None = None
    col_upper: np.ndarray | None = None
    integrality: np.ndarray | None = None
    sense: str = "min"
    offset: float = 0.0
    hessian: sp.csc_matrix | None = None
    #: ``(A, its column-wise arrays)`` once :meth:`columns` made them
    _columns: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        c = np.asarray(self.c, dtype=np.float64)
        if c.ndim != 1:
            raise ValueError(f"LinearProgram: c must be a 1-D vector, got shape {c.shape}")
        n = c.shape[0]
        self.c = c.copy()
        if not np.all(np.isfinite(self.c)):
            raise ValueError("LinearProgram: c contains non-finite values")

        if self.A is None:
            A = sp.csr_matrix((0, n), dtype=np.float64)
        elif sp.issparse(self.A):
            A = sp.csr_matrix(self.A, dtype=np.float64)
        else:
            dense = np.asarray(self.A, dtype=np.float64)
            if dense.size == 0:
                dense = dense.reshape(0, n)
            if dense.ndim != 2:
                raise ValueError(f"LinearProgram: A must be 2-D, got shape {dense.shape}")
            A = sp.csr_matrix(dense)
        if A.shape[1] != n:
            if A.shape[0] == 0:  # an empty matrix of the wrong width is still "no rows"
                A = sp.csr_matrix((0, n), dtype=np.float64)
            else:
                raise ValueError(
                    f"LinearProgram: A has {A.shape[1]} columns but c has length {n}"
                )
        A.sum_duplicates()  # backends expect one entry per (row, col)
        if A.nnz and not np.all(np.isfinite(A.data)):
            raise ValueError("LinearProgram: A contains non-finite coefficients")
        self.A = A
        m = A.shape[0]

        self.row_lower = _as_float_vector(self.row_lower, m, -np.inf, "row_lower")
        self.row_upper = _as_float_vector(self.row_upper, m, np.inf, "row_upper")
        self.col_lower = _as_float_vector(self.col_lower, n, 0.0, "col_lower")
        self.col_upper = _as_float_vector(self.col_upper, n, np.inf, "col_upper")
        for name in ("row_lower", "row_upper", "col_lower", "col_upper"):
            if np.any(np.isnan(getattr(self, name))):
                raise ValueError(f"LinearProgram: {name} contains NaN")
        bad = np.flatnonzero(self.row_lower > self.row_upper)
        if bad.size:
            raise ValueError(
                f"LinearProgram: row_lower > row_upper for row(s) {bad[:10].tolist()}"
            )
        bad = np.flatnonzero(self.col_lower > self.col_upper)
        if bad.size:
            raise ValueError(
                f"LinearProgram: col_lower > col_upper for column(s) {bad[:10].tolist()}"
            )

        if self.integrality is not None:
            integ = np.asarray(self.integrality).ravel()
            if integ.shape[0] != n:
                raise ValueError(
                    f"LinearProgram: integrality has length {integ.shape[0]}, expected {n}"
                )
            self.integrality = integ.astype(bool)

        if self.hessian is not None:
            self.hessian = _as_hessian(self.hessian, n)
            if self.is_mip:
                raise ValueError("LinearProgram: a quadratic objective with integer "
                                 "variables (MIQP) is not supported")

        sense = str(self.sense).lower()
        if sense in ("minimize", "minimise"):
            sense = "min"
        elif sense in ("maximize", "maximise"):
            sense = "max"
        if sense not in ("min", "max"):
            raise ValueError(f"LinearProgram: sense must be 'min' or 'max', got {self.sense!r}")
        self.sense = sense
        self.offset = float(self.offset)

    @property
    def n_cols(self) -> int:
        """Number of variables."""
        return int(self.c.shape[0])

    @property
    def n_rows(self) -> int:
        """Number of constraint rows."""
        return int(self.A.shape[0])

    @property
    def is_qp(self) -> bool:
        """True when the objective has a quadratic term."""
        return self.hessian is not None and self.hessian.nnz > 0

    @property
    def is_mip(self) -> bool:
        """True when at least one variable is integer."""
        return self.integrality is not None and bool(np.any(self.integrality))

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``A`` column-wise as solvers load it (column starts without the final nnz, row
        indices, values), kept while ``A`` is the same matrix: a caller that builds many
        models of one program converts it once."""
        if self._columns is None or self._columns[0] is not self.A:
            A = sp.csc_matrix(self.A)
            A.sort_indices()
            self._columns = (self.A, (np.ascontiguousarray(A.indptr[:-1], dtype=np.int32),
                                      np.ascontiguousarray(A.indices, dtype=np.int32),
                                      np.ascontiguousarray(A.data, dtype=np.float64)))
        return self._columns[1]

    def with_objective(self, c: np.ndarray, sense: str | None = None) -> "LinearProgram":
        """Return a copy with another objective (the matrix is shared, not copied)."""
        return LinearProgram(
            c=c,
            A=self.A,
            row_lower=self.row_lower,
            row_upper=self.row_upper,
            col_lower=self.col_lower,
            col_upper=self.col_upper,
            integrality=self.integrality,
            sense=self.sense if sense is None else sense,
            offset=0.0,
        )

    def objective_value(self, x: np.ndarray) -> float:
        """``c'x + 1/2 x'Hx + offset`` at ``x``."""
        x = np.asarray(x, dtype=np.float64)
        value = float(self.c @ x) + self.offset
        if self.hessian is not None:
            value += 0.5 * float(x @ (self.hessian @ x))
        return value


def _as_hessian(h, n: int) -> sp.csc_matrix:
    """``h`` (a diagonal vector or an n x n matrix) as a symmetric CSC matrix."""
    if sp.issparse(h):
        H = sp.csc_matrix(h, dtype=np.float64)
    else:
        arr = np.asarray(h, dtype=np.float64)
        if arr.ndim == 1:
            if arr.shape[0] != n:
                raise ValueError(f"LinearProgram: hessian diagonal has length {arr.shape[0]}"
                                 f", expected {n}")
            H = sp.diags(arr, format="csc")
        else:
            H = sp.csc_matrix(arr)
    if H.shape != (n, n):
        raise ValueError(f"LinearProgram: hessian has shape {H.shape}, expected {(n, n)}")
    H.sum_duplicates()
    if H.nnz and not np.all(np.isfinite(H.data)):
        raise ValueError("LinearProgram: hessian contains non-finite entries")
    if H.nnz and abs(H - H.T).max() > 1e-12 * max(1.0, abs(H).max()):
        raise ValueError("LinearProgram: hessian is not symmetric")
    H.eliminate_zeros()
    return H


@dataclass
class SolveResult:
    """Outcome of one solve, identical in shape for every backend.

    Attributes
    ----------
    status : str
        ``"optimal"`` (for MIPs: optimal within the requested relative gap),
        ``"time_limit"`` (stopped by the time limit with a feasible solution in ``x``),
        ``"time_limit_no_solution"``, ``"infeasible"``, ``"unbounded"``, ``"error"``.
    objective : float or None
        ``c'x + offset`` in the problem's own sense; None without a solution.
    x : ndarray or None
        Primal solution (None unless ``has_solution``).
    duals : ndarray or None
        Row duals of an LP, HiGHS convention: ``duals[i]`` is the derivative of the
        optimal objective (in the problem's own sense, min or max) with respect to the
        active bound of row ``i``; so ``c = A' duals + reduced_costs``. None for MIPs or
        when the backend gives none.
    reduced_costs : ndarray or None
        Column duals, same convention (derivative with respect to the active column bound).
    mip_gap : float or None
        Relative MIP gap reported by the solver (0 when the search closed); None for LPs
        or when the backend does not report it.
    runtime : float
        Wall-clock seconds spent in the backend (including model building).
    backend : str
    log_summary : str
        One-line summary: backend, status, iterations / nodes, time.
    """

    status: str
    objective: float | None = None
    x: np.ndarray | None = None
    duals: np.ndarray | None = None
    reduced_costs: np.ndarray | None = None
    mip_gap: float | None = None
    runtime: float = 0.0
    backend: str = ""
    log_summary: str = ""
    extra: dict = field(default_factory=dict, repr=False)

    @classmethod
    def without_columns(cls, row_lower, row_upper, offset: float, backend: str,
                        runtime: float = 0.0, n_duals: int | None = None) -> "SolveResult":
        """A problem without columns: optimal (at ``offset``) when every row's range holds
        0, else infeasible; ``n_duals``: a feasible LP's zero row duals (that many) and
        empty reduced costs."""
        ok = bool(np.all(np.asarray(row_lower) <= 0) and np.all(np.asarray(row_upper) >= 0))
        st = "optimal" if ok else "infeasible"
        duals = np.zeros(n_duals) if ok and n_duals is not None else None
        return cls(status=st, objective=offset if ok else None,
                   x=np.zeros(0) if ok else None, duals=duals,
                   reduced_costs=np.zeros(0) if duals is not None else None,
                   runtime=runtime, backend=backend, log_summary=f"{backend}: {st} (no columns)")

    @property
    def has_solution(self) -> bool:
        """True when ``x`` holds a feasible point (status optimal or time_limit)."""
        return self.x is not None and self.status in ("optimal", "time_limit")

    @property
    def proven_optimal(self) -> bool:
        """True when the solver proved optimality (within the MIP gap for MIPs)."""
        return self.status == "optimal"

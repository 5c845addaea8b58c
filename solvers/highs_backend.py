"""HiGHS backend (via highspy): one-shot :func:`solve_highs` and the persistent
:class:`HighsModel` used for thousands of warm re-solves on one matrix."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import highs_spares as spares
from .model import LinearProgram, SolveResult

try:  # highspy is a hard dependency of the distribution, but keep the import error clear
    import highspy

    _IMPORT_ERROR: Exception | None = None
except ImportError as exc:  # pragma: no cover - exercised only without highspy
    highspy = None  # type: ignore[assignment]
    _IMPORT_ERROR = exc

__all__ = ["HighsModel", "solve_highs", "highs_available"]


def highs_available() -> bool:
    return highspy is not None


def _require_highspy() -> None:
    if highspy is None:
        raise ImportError(
            "the 'highs' backend needs the highspy package (pip install highspy); "
            f"import failed with: {_IMPORT_ERROR}"
        )


def _new_highs(spare: bool = False):
    """A bare HiGHS instance (with ``spare``, maybe a spare one: see
    :func:`solvers.highs_spares.new`)."""
    _require_highspy()
    return spares.new(highspy, spare)


def _set_option(h, name: str, value: Any, *, strict: bool = True) -> bool:
    """Set a HiGHS option; raise ValueError for a rejected option when ``strict``."""
    if isinstance(value, (bool, np.bool_)):
        value = bool(value)
    elif isinstance(value, (np.integer,)):
        value = int(value)
    elif isinstance(value, (np.floating,)):
        value = float(value)
    try:
        status = h.setOptionValue(name, value)
    except Exception as exc:  # type mismatch in the pybind overloads
        if strict:
            raise ValueError(f"HiGHS rejected option {name}={value!r}: {exc}") from exc
        return False
    ok = status != highspy.HighsStatus.kError
    if not ok and strict:
        raise ValueError(f"HiGHS rejected option {name}={value!r}")
    return ok


_POOL_THREADS: int | None = None  # the size HiGHS' global thread pool was started with


def _configure(h, *, verbose: bool, time_limit, mip_gap, threads, options: dict) -> None:
    h.setOptionValue("output_flag", bool(verbose))
    if verbose:
        h.setOptionValue("log_to_console", True)
    _set_option(h, "time_limit", float(np.inf if time_limit is None else time_limit))
    if mip_gap is not None:
        _set_option(h, "mip_rel_gap", float(mip_gap))
    global _POOL_THREADS
    # HiGHS keeps one global thread pool per process, sized at the first run; a later
    # model asking for a different size makes every one of its solves fail with an error
    # status. So only the first request in a process sets it; later different requests
    # run on the existing pool (costs speed at most, never correctness).
    if _POOL_THREADS is None:
        _POOL_THREADS = 0 if threads is None else int(threads)
        if threads is not None:
            _set_option(h, "threads", int(threads), strict=False)
    elif threads is not None and int(threads) == _POOL_THREADS:
        _set_option(h, "threads", int(threads), strict=False)
    for key, value in options.items():
        _set_option(h, key, value)


def _pass_lp(h, lp: LinearProgram) -> None:
    """Load ``lp`` into ``h`` column-wise in one call (no Python loop over entries)."""
    starts, index, value = lp.columns()
    n, m = lp.n_cols, lp.n_rows
    sense = highspy.ObjSense.kMaximize if lp.sense == "max" else highspy.ObjSense.kMinimize
    # 1 = kInteger, 0 = kContinuous. Always pass n entries: highspy 1.16 reads an empty
    # array as a dangling pointer and rejects the model.
    if lp.is_mip:
        integ = np.ascontiguousarray(lp.integrality, dtype=np.int32)
    else:
        integ = np.zeros(n, dtype=np.int32)
    # The flat passModel overload takes the n column starts without the final nnz.
    status = h.passModel(
        n,
        m,
        len(index),
        int(highspy.MatrixFormat.kColwise),
        int(sense),
        float(lp.offset),
        lp.c,
        lp.col_lower,
        lp.col_upper,
        lp.row_lower,
        lp.row_upper,
        starts,
        index,
        value,
        integ,
    )
    if status == highspy.HighsStatus.kError:
        raise ValueError("HiGHS rejected the model (passModel returned kError)")
    if lp.is_qp:
        _pass_hessian(h, lp.hessian)


def _pass_hessian(h, H: sp.csc_matrix) -> None:
    """Load the quadratic term: HiGHS takes the lower triangle of H column-wise."""
    low = sp.tril(H, format="csc")
    low.sort_indices()
    status = h.passHessian(
        int(low.shape[0]), int(low.nnz), int(highspy.HessianFormat.kTriangular),
        np.ascontiguousarray(low.indptr[:-1], dtype=np.int32),
        np.ascontiguousarray(low.indices, dtype=np.int32),
        np.ascontiguousarray(low.data, dtype=np.float64))
    if status == highspy.HighsStatus.kError:
        raise ValueError("HiGHS rejected the quadratic term (passHessian returned kError)")


def _has_primal(h) -> bool:
    try:
        return int(h.getInfo().primal_solution_status) == int(highspy.kSolutionStatusFeasible)
    except Exception:  # pragma: no cover - very old highspy
        return bool(h.getSolution().value_valid)


def _map_status(h, run_status) -> str:
    ms = h.getModelStatus()
    S = highspy.HighsModelStatus
    if ms == S.kOptimal:
        return "optimal"
    if ms == S.kTimeLimit:
        return "time_limit" if _has_primal(h) else "time_limit_no_solution"
    if ms == S.kInfeasible:
        return "infeasible"
    if ms == S.kUnbounded:
        return "unbounded"
    if ms == S.kUnboundedOrInfeasible:
        return "unbounded_or_infeasible"  # resolved by the caller
    if ms == S.kModelEmpty:
        # n == 0: nothing to optimise; HiGHS reports kModelEmpty
        return "optimal"
    return "error"


def _disambiguate(lp_like: Any, h_source) -> str:
    """Decide infeasible vs unbounded after kUnboundedOrInfeasible.

    Solve the same constraints with a zero objective (never unbounded): feasible means
    the original problem was unbounded, otherwise it was infeasible. Done on a fresh
    HiGHS copy so a persistent model keeps its basis and objective.
    """
    h2 = _new_highs()
    if isinstance(lp_like, LinearProgram):
        _pass_lp(h2, lp_like.with_objective(np.zeros(lp_like.n_cols)))
    else:
        h2.passModel(h_source.getLp())
        n = h2.getNumCol()
        if n:
            h2.changeColsCost(n, np.arange(n, dtype=np.int32), np.zeros(n))
    h2.run()
    ms = h2.getModelStatus()
    S = highspy.HighsModelStatus
    if ms in (S.kOptimal, S.kModelEmpty):
        return "unbounded"
    if ms == S.kInfeasible:
        return "infeasible"
    return "error"


def _summary(h, status: str, runtime: float, is_mip: bool, *, info) -> str:
    """One line on the solve; ``info``: the solve's ``h.getInfo()`` (read once per solve:
    each call copies every field of HiGHS' info out)."""
    try:
        if is_mip:
            core = f"nodes={int(info.mip_node_count)} gap={info.mip_gap:.3g}"
        else:
            core = f"simplex_iters={int(info.simplex_iteration_count)}"
            if int(info.ipm_iteration_count) > 0:
                core += f" ipm_iters={int(info.ipm_iteration_count)}"
        hs = h.modelStatusToString(h.getModelStatus())
    except Exception:  # pragma: no cover
        core, hs = "", ""
    return f"highs: {status} ({hs}) {core} time={runtime:.3f}s".strip()


def _collect(h, status: str, *, is_mip: bool, info, want_duals: bool = True):
    """Pull objective / x / duals / gap from ``h`` according to ``status`` (the duals
    only with ``want_duals``: each vector read out of HiGHS is a copy); ``info`` as in
    :func:`_summary`."""
    objective = x = duals = rc = gap = None
    if status in ("optimal", "time_limit"):
        objective = float(info.objective_function_value)
        sol = h.getSolution()
        x = np.array(sol.col_value, dtype=np.float64)
        if want_duals and not is_mip and sol.dual_valid:
            duals = np.array(sol.row_dual, dtype=np.float64)
            rc = np.array(sol.col_dual, dtype=np.float64)
    if is_mip and status in ("optimal", "time_limit", "time_limit_no_solution"):
        g = float(info.mip_gap)
        gap = g if np.isfinite(g) else None
        if status == "optimal" and gap is not None:
            gap = max(gap, 0.0)
    return objective, x, duals, rc, gap


def solve_highs(
    lp: LinearProgram,
    time_limit: float | None = None,
    mip_gap: float | None = None,
    threads: int | None = None,
    verbose: bool = False,
    **options: Any,
) -> SolveResult:
    """Solve ``lp`` once with HiGHS. ``options`` are passed to ``Highs.setOptionValue``."""
    t0 = time.perf_counter()
    h = _new_highs()
    _configure(h, verbose=verbose, time_limit=time_limit, mip_gap=mip_gap,
               threads=threads, options=options)
    if lp.n_cols == 0:
        return SolveResult.without_columns(lp.row_lower, lp.row_upper, lp.offset, "highs",
                                           time.perf_counter() - t0,
                                           n_duals=None if lp.is_mip else lp.n_rows)
    _pass_lp(h, lp)
    run_status = h.run()
    status = _map_status(h, run_status)
    if status == "unbounded_or_infeasible":
        status = _disambiguate(lp, h)
    info = h.getInfo()
    objective, x, duals, rc, gap = _collect(h, status, is_mip=lp.is_mip, info=info)
    rt = time.perf_counter() - t0
    return SolveResult(status=status, objective=objective, x=x, duals=duals,
                       reduced_costs=rc, mip_gap=gap, runtime=rt, backend="highs",
                       log_summary=_summary(h, status, rt, lp.is_mip, info=info))


def _one(seq) -> bool:
    """A list or tuple of exactly one entry (the sparse objective's fast path)."""
    return isinstance(seq, (list, tuple)) and len(seq) == 1


def _idx(indices) -> np.ndarray:
    return np.atleast_1d(np.asarray(indices, dtype=np.int32)).ravel()


def _vals(values, k: int) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        return np.full(k, float(arr))
    arr = arr.ravel()
    if arr.shape[0] != k:
        raise ValueError(f"expected {k} values, got {arr.shape[0]}")
    return np.ascontiguousarray(arr)


class HighsModel:
    """Persistent HiGHS model for repeated warm re-solves on one constraint matrix.

    The audit solves ``min x_i`` and ``max x_i`` for thousands of cells ``i`` over one
    polytope. Rebuilding the model each time would dominate the run time; here the
    matrix is loaded once, the objective is changed in O(changed entries), and HiGHS
    re-solves from the previous optimal basis (a valid basis also makes HiGHS skip
    presolve, which would otherwise throw the warm start away).

    Parameters
    ----------
    lp : LinearProgram
        Initial model (its objective and sense become the current objective).
    threads, time_limit, mip_gap, verbose
        As in :func:`solvers.solve`; ``time_limit`` is the default per :meth:`solve` call.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from solvers import LinearProgram, HighsModel
    >>> lp = LinearProgram(c=np.zeros(3), A=sp.csr_matrix([[1.0, -1.0, -1.0]]),
    ...                    row_lower=[0.0], row_upper=[0.0], col_upper=[10.0, 4.0, 5.0])
    >>> m = HighsModel(lp)
    >>> m.minimize_maximize(0)
    (0.0, 9.0, 'optimal')
    """

    def __init__(
        self,
        lp: LinearProgram,
        threads: int | None = None,
        time_limit: float | None = None,
        mip_gap: float | None = None,
        verbose: bool = False,
        **options: Any,
    ) -> None:
        _require_highspy()
        self._h = _new_highs(spare=True)
        self._time_limit = time_limit
        self._current_time_limit = np.inf if time_limit is None else float(time_limit)
        _configure(self._h, verbose=verbose, time_limit=time_limit, mip_gap=mip_gap,
                   threads=threads, options=options)
        self._n = lp.n_cols
        self._m = lp.n_rows
        self._integer = np.zeros(self._n, dtype=bool)
        if lp.is_mip:
            self._integer[:] = lp.integrality
        self._sense = lp.sense
        # Dense copy of the current costs so set_objective(indices=...) can zero exactly
        # the previously nonzero entries (O(changed), not O(n), calls into HiGHS).
        self._cost = lp.c.copy()
        self._nonzero = set(np.flatnonzero(self._cost).tolist())
        if self._n > 0:
            _pass_lp(self._h, lp)
        else:
            # HiGHS cannot hold rows without columns through passModel; keep bounds only.
            self._empty_rows = (lp.row_lower.copy(), lp.row_upper.copy())
        self._offset = lp.offset
        self.last_result: SolveResult | None = None
        # After an optimal solve, changing only the objective leaves the basis primal
        # feasible, so primal simplex re-solves in a handful of iterations (about 3x
        # faster than HiGHS's default dual simplex on the audit's min/max sweeps).
        # Bound/row changes break primal feasibility: go back to the default then.
        self._user_strategy = "simplex_strategy" in options
        self._default_strategy = int(self._h.getOptionValue("simplex_strategy")[1]) \
            if not self._user_strategy else None
        self._primal_feasible_basis = False
        self._strategy_now = self._default_strategy
        self._solved_before = False
        if time_limit is not None and np.isfinite(time_limit):
            self._apply_time_limit(time_limit)  # relative to a spare's run clock too

    def __del__(self):
        try:  # the instance goes to the spares unless someone kept it (spares.release)
            spares.release(self._h, self._n + self._m, holders=2)
        except Exception:  # pragma: no cover - at interpreter exit, or a failed __init__
            pass

    # ------------------------------------------------------------------ properties
    @property
    def n_cols(self) -> int:
        return self._n

    @property
    def n_rows(self) -> int:
        return self._m

    @property
    def highs(self):
        """The underlying highspy object, for anything this wrapper does not cover."""
        return self._h

    @property
    def is_mip(self) -> bool:
        return bool(self._integer.any())

    # ------------------------------------------------------------------ edits
    def set_sense(self, sense: str) -> None:
        sense = {"minimize": "min", "maximize": "max"}.get(sense, sense)
        if sense not in ("min", "max"):
            raise ValueError(f"sense must be 'min' or 'max', got {sense!r}")
        if sense != self._sense:
            self._h.changeObjectiveSense(
                highspy.ObjSense.kMaximize if sense == "max" else highspy.ObjSense.kMinimize
            )
            self._sense = sense

    def set_objective(self, c: np.ndarray | None = None, *, sense: str = "min",
                      indices=None, values=None) -> None:
        """Replace the objective.

        Either a full cost vector ``c`` (length ``n_cols``), or sparse: ``indices`` and
        ``values`` — every previously nonzero cost is zeroed and the given entries set.
        Only changed entries are sent to HiGHS, so ``set_objective(indices=[j],
        values=[1])`` costs O(previous nonzeros), independent of ``n_cols``.
        """
        if c is not None and (indices is not None or values is not None):
            raise ValueError("give either c or indices/values, not both")
        if c is not None:
            new = _vals(c, self._n)
            changed = np.flatnonzero(new != self._cost).astype(np.int32)
            if changed.size:
                self._h.changeColsCost(changed.size, changed, new[changed])
            self._cost = new.copy()
            self._nonzero = set(np.flatnonzero(new).tolist())
        elif _one(indices) and _one(values):
            self._set_one_cost(int(indices[0]), float(values[0]))
        else:
            idx = _idx([] if indices is None else indices)
            vals = _vals(0.0 if values is None else values, idx.size) if idx.size else np.zeros(0)
            if idx.size and (idx.min() < 0 or idx.max() >= self._n):
                raise IndexError(f"column index out of range 0..{self._n - 1}")
            new_map: dict[int, float] = {}
            for j, v in zip(idx.tolist(), vals.tolist()):
                new_map[j] = new_map.get(j, 0.0) + v  # duplicates add up, like a sparse vector
            touched = self._nonzero | set(new_map)
            if touched:
                ch_idx = np.fromiter(touched, dtype=np.int32, count=len(touched))
                ch_val = np.fromiter((new_map.get(j, 0.0) for j in ch_idx.tolist()),
                                     dtype=np.float64, count=ch_idx.size)
                keep = ch_val != self._cost[ch_idx]
                ch_idx, ch_val = ch_idx[keep], ch_val[keep]
                if ch_idx.size:
                    self._h.changeColsCost(int(ch_idx.size), ch_idx, ch_val)
                    self._cost[ch_idx] = ch_val
            self._nonzero = {j for j, v in new_map.items() if v != 0.0}
        self.set_sense(sense)

    def _set_one_cost(self, j: int, v: float) -> None:
        """The objective ``v x_j`` (the sparse form's common case, one entry, without its
        set and array building: attacker LPs set one such objective per solve)."""
        if not 0 <= j < self._n:
            raise IndexError(f"column index out of range 0..{self._n - 1}")
        ch = [i for i in self._nonzero if i != j]
        vals = [0.0] * len(ch)
        if self._cost[j] != v:
            ch.append(j)
            vals.append(v)
        if ch:
            ch_idx = np.array(ch, dtype=np.int32)
            ch_val = np.array(vals, dtype=np.float64)
            self._h.changeColsCost(len(ch), ch_idx, ch_val)
            self._cost[ch_idx] = ch_val
        self._nonzero = {j} if v != 0.0 else set()

    def set_col_bounds(self, indices, lower, upper) -> None:
        """Change bounds of the given columns (scalars broadcast)."""
        self._primal_feasible_basis = False
        idx = _idx(indices)
        if idx.size == 0:
            return
        lo, up = _vals(lower, idx.size), _vals(upper, idx.size)
        self._h.changeColsBounds(int(idx.size), idx, lo, up)

    def forget_basis(self) -> None:
        """Drop the basis and the solution: the next solve starts from scratch, as a new
        model's first solve does (for a model reused on unrelated bounds)."""
        self._h.clearSolver()
        self._primal_feasible_basis = False
        self._solved_before = False

    def set_row_bounds(self, indices, lower, upper) -> None:
        """Change bounds of the given rows (scalars broadcast)."""
        self._primal_feasible_basis = False
        idx = _idx(indices)
        if idx.size == 0:
            return
        lo, up = _vals(lower, idx.size), _vals(upper, idx.size)
        self._h.changeRowsBounds(int(idx.size), idx, lo, up)

    def add_rows(self, A_rows, lower, upper) -> np.ndarray:
        """Append rows ``lower <= A_rows x <= upper``; returns their row indices.

        HiGHS extends the basis with the new (basic) slacks, so the next solve is warm.
        """
        self._primal_feasible_basis = False
        R = sp.csr_matrix(A_rows, dtype=np.float64)
        if R.shape[1] != self._n:
            raise ValueError(f"A_rows has {R.shape[1]} columns, model has {self._n}")
        R.sum_duplicates()
        R.sort_indices()
        k = R.shape[0]
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        lo, up = _vals(lower, k), _vals(upper, k)
        status = self._h.addRows(
            k, lo, up, int(R.nnz),
            np.ascontiguousarray(R.indptr[:-1], dtype=np.int32),
            np.ascontiguousarray(R.indices, dtype=np.int32),
            np.ascontiguousarray(R.data, dtype=np.float64),
        )
        if status == highspy.HighsStatus.kError:
            raise ValueError("HiGHS rejected addRows")
        new = np.arange(self._m, self._m + k, dtype=np.int64)
        self._m += k
        return new

    def delete_rows(self, rows) -> bool:
        """Delete the rows ``rows`` (indices); the rows after them move up.

        HiGHS keeps the basis valid when the deleted rows' slacks are basic (rows that
        are not binding), so the next solve stays warm. Returns False (model unchanged)
        when HiGHS refuses.

        Examples
        --------
        >>> lp = LinearProgram(c=[1.0], A=sp.csr_matrix([[1.0], [1.0]]),
        ...                    row_lower=[1.0, 2.0], row_upper=[np.inf, np.inf],
        ...                    col_lower=[0.0], col_upper=[10.0])
        >>> m = HighsModel(lp)
        >>> m.delete_rows([1]), m.n_rows, round(m.solve().objective, 6)
        (True, 1, 1.0)
        """
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        if len(rows) == 0:
            return True
        if rows[0] < 0 or rows[-1] >= self._m:
            raise ValueError(f"row index out of range (model has {self._m} rows)")
        status = self._h.deleteRows(int(len(rows)), rows.astype(np.int32))
        if status == highspy.HighsStatus.kError:
            return False
        self._m -= len(rows)
        self._primal_feasible_basis = False
        return True

    def add_cols(self, c, lower, upper, A_cols=None, integrality=None) -> np.ndarray:
        """Append columns with costs ``c``, bounds and (m x k, CSC) coefficients."""
        self._primal_feasible_basis = False
        c = np.atleast_1d(np.asarray(c, dtype=np.float64)).ravel()
        k = c.shape[0]
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        lo, up = _vals(lower, k), _vals(upper, k)
        if A_cols is None:
            C = sp.csc_matrix((self._m, k), dtype=np.float64)
        else:
            C = sp.csc_matrix(A_cols, dtype=np.float64)
            if C.shape != (self._m, k):
                raise ValueError(f"A_cols has shape {C.shape}, expected {(self._m, k)}")
        C.sum_duplicates()
        C.sort_indices()
        status = self._h.addCols(
            k, c, lo, up, int(C.nnz),
            np.ascontiguousarray(C.indptr[:-1], dtype=np.int32),
            np.ascontiguousarray(C.indices, dtype=np.int32),
            np.ascontiguousarray(C.data, dtype=np.float64),
        )
        if status == highspy.HighsStatus.kError:
            raise ValueError("HiGHS rejected addCols")
        new = np.arange(self._n, self._n + k, dtype=np.int64)
        self._n += k
        self._cost = np.concatenate([self._cost, c])
        self._nonzero |= set((new[c != 0]).tolist())
        self._integer = np.concatenate([self._integer, np.zeros(k, dtype=bool)])
        if integrality is not None:
            integ = np.broadcast_to(np.asarray(integrality, dtype=bool), (k,))
            if integ.any():
                self.set_integrality(new[integ], True)
        return new

    def set_start(self, x: np.ndarray) -> bool:
        """Hand HiGHS a feasible point (a MIP's first incumbent); returns False when
        HiGHS refuses it."""
        x = _vals(x, self._n)
        status = self._h.setSolution(int(self._n), np.arange(self._n, dtype=np.int32), x)
        return status != highspy.HighsStatus.kError

    def set_integrality(self, indices, is_integer: bool) -> None:
        """Make the given columns integer (True) or continuous (False)."""
        self._primal_feasible_basis = False
        idx = _idx(indices)
        if idx.size == 0:
            return
        flag = np.full(idx.size, 1 if is_integer else 0, dtype=np.uint8)
        self._h.changeColsIntegrality(int(idx.size), idx, flag)
        self._integer[idx] = bool(is_integer)

    # ------------------------------------------------------------------ solving
    def _apply_time_limit(self, time_limit) -> None:
        tl = self._time_limit if time_limit is None else time_limit
        if tl is None or not np.isfinite(tl):
            if self._current_time_limit != np.inf:
                _set_option(self._h, "time_limit", float(np.inf))
                self._current_time_limit = np.inf
            return
        # HiGHS (1.16) checks an LP's time limit against the run clock accumulated over
        # ALL runs of this object, while the MIP solver measures from the start of the
        # run. Without this shift, a persistent LP model stops solving (kTimeLimit, no
        # solution) once the total time of thousands of warm re-solves passes the limit.
        limit = float(tl) if self.is_mip else float(self._h.getRunTime()) + float(tl)
        _set_option(self._h, "time_limit", limit)
        self._current_time_limit = limit

    def _choose_strategy(self) -> None:
        if self._user_strategy:
            return
        want = 4 if (self._primal_feasible_basis and not self.is_mip) else self._default_strategy
        if want != self._strategy_now:
            _set_option(self._h, "simplex_strategy", want)
            self._strategy_now = want

    def _run(self, time_limit=None) -> str:
        self._apply_time_limit(time_limit)
        self._choose_strategy()
        run_status = self._h.run()
        status = _map_status(self._h, run_status)
        if status in ("error", "infeasible") and not self.is_mip and self._solved_before:
            # a warm re-solve after an unbounded (or otherwise abandoned) solve can end in
            # model status "unknown", and (seen on attacker LPs that are always feasible)
            # in a wrong "infeasible"; such answers are confirmed from scratch
            self._h.clearSolver()
            if self._strategy_now != self._default_strategy and not self._user_strategy:
                _set_option(self._h, "simplex_strategy", self._default_strategy)
                self._strategy_now = self._default_strategy
            run_status = self._h.run()
            status = _map_status(self._h, run_status)
        self._primal_feasible_basis = status == "optimal"
        self._solved_before = True
        if status == "unbounded_or_infeasible":
            status = _disambiguate(None, self._h)
        return status

    def solve(self, time_limit: float | None = None, *, duals: bool = True) -> SolveResult:
        """Solve the current model, warm-starting from the previous basis. ``duals=False``
        leaves the row duals and reduced costs out of the result (None): a caller that
        reads only the point does not copy them out of HiGHS on every re-solve."""
        t0 = time.perf_counter()
        if self._n == 0:
            lo, up = self._empty_rows
            res = SolveResult.without_columns(lo, up, self._offset, "highs")
            self.last_result = res
            return res
        status = self._run(time_limit)
        info = self._h.getInfo()
        objective, x, y, rc, gap = _collect(self._h, status, is_mip=self.is_mip,
                                             want_duals=duals, info=info)
        rt = time.perf_counter() - t0
        res = SolveResult(status=status, objective=objective, x=x, duals=y,
                          reduced_costs=rc, mip_gap=gap, runtime=rt, backend="highs",
                          log_summary=_summary(self._h, status, rt, self.is_mip,
                                               info=info))
        self.last_result = res
        return res

    def objective_only(self, time_limit: float | None = None) -> tuple[float, str]:
        """Solve and return ``(objective, status)`` without copying x / duals out of HiGHS.

        The objective is ``-inf`` / ``+inf`` (for min / max) when unbounded and NaN
        when there is no solution.
        """
        status = self._run(time_limit)
        if status in ("optimal", "time_limit"):
            return float(self._h.getInfo().objective_function_value), status
        if status == "unbounded":
            return (-np.inf if self._sense == "min" else np.inf), status
        return float("nan"), status

    def minimize_maximize(self, j: int) -> tuple[float, float, str]:
        """Minimum and maximum of ``x_j`` over the current feasible set.

        Sets the objective to ``e_j`` (sparse change), solves min then max warm.

        Returns
        -------
        (lo, hi, status)
            ``lo = -inf`` / ``hi = +inf`` when that direction is unbounded (exact values,
            not failures). ``status`` is ``"optimal"`` when both solves were optimal,
            ``"unbounded"`` when at least one direction was unbounded and the other
            optimal or unbounded, ``"infeasible"`` when the set is empty (lo = hi = NaN),
            otherwise the first non-optimal status of the two (``"time_limit"``,
            ``"time_limit_no_solution"``, ``"error"``) with NaN for a missing value.
            The model's objective is left at ``e_j``, sense max.
        """
        j = int(j)
        if not 0 <= j < self._n:
            raise IndexError(f"column {j} out of range 0..{self._n - 1}")
        self.set_objective(indices=[j], values=[1.0], sense="min")
        lo, s1 = self.objective_only()
        if s1 == "infeasible":
            return float("nan"), float("nan"), "infeasible"
        self.set_sense("max")
        hi, s2 = self.objective_only()
        if s2 == "infeasible":
            return float("nan"), float("nan"), "infeasible"
        for s in (s1, s2):
            if s not in ("optimal", "unbounded"):
                return lo, hi, s
        status = "unbounded" if "unbounded" in (s1, s2) else "optimal"
        return lo, hi, status

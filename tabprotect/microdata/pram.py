"""Post-randomisation method (PRAM; Gouweleeuw, Kooiman, Willenborg & de Wolf 1998).

Convention: ``P[k, l] = Pr(released category l | true category k)`` -- **rows =
true category**, every row sums to one.  (The misclassification matrix of
Shlomo & Skinner is its transpose, ``M = P.T``: columns = true.)

* Each record's value is redrawn independently from the row of its true
  category; a transition with probability 0 can never occur.
* Unbiased estimator of the original frequencies ``T`` from the released
  frequencies ``T*``: ``T^ = (P')^-1 T*`` with
  ``Var(T^) = (P')^-1 [sum_k T_k (diag(p_k) - p_k p_k')] P^-1`` (``p_k`` = row k).
* Invariant PRAM: ``Q[k, l] = P[l, k] T_l / sum_j P[j, k] T_j``, ``R = P Q`` satisfies
  ``T' R = T'``; ``R* = a R + (1 - a) I`` stays invariant and lets ``a`` tune the
  amount of perturbation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ._validate import RowError, check_columns, check_transition_matrix, draw_seed, label

__all__ = ["generate_pram_matrix", "invariant_matrix", "apply_transition", "pram", "invariant_pram",
           "PramResult", "PramEstimate", "pram_estimate", "pram_variance"]


def generate_pram_matrix(categories: Sequence, d: float | Mapping = 0.8, unperturbed: Sequence = (),
                         spread: str = "equal", seed: int | None = None) -> pd.DataFrame:
    """A PRAM matrix (rows = true) whose diagonal is at least ``d``.

    Parameters
    ----------
    categories : the categories (order of rows and columns).
    d : retention probability (diagonal), a number in (0, 1] or a mapping
        {category: d}; with ``spread="random"`` the diagonal is drawn uniformly
        in ``[d, 1]``.
    unperturbed : categories left alone: their row is the identity and no other
        category moves into them.
    spread : how ``1 - diagonal`` is spread over the other perturbed
        categories: "equal" or "random" (Dirichlet(1) weights).

    Examples
    --------
    >>> generate_pram_matrix(["a", "b", "c"], d=0.8).round(2).values.tolist()
    [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]
    """
    cats = list(categories)
    K = len(cats)
    if K == 0:
        raise ValueError("no categories to perturb")
    if len(set(cats)) != K:
        raise ValueError("duplicated category in the PRAM categories")
    for c in unperturbed:
        if c not in cats:
            raise ValueError(f"unperturbed category {label(c)!r} is not a category of the variable")
    rng = np.random.default_rng(seed)
    dd = np.empty(K)
    for i, c in enumerate(cats):
        v = d.get(c, d.get("default", 0.8)) if isinstance(d, Mapping) else d
        v = float(v)
        if not (0.0 < v <= 1.0):
            raise ValueError(f"retention probability d for category {label(c)!r} must lie in (0, 1]")
        dd[i] = v
    if spread == "random":
        dd = dd + (1.0 - dd) * rng.random(K)
    elif spread != "equal":
        raise ValueError(f"unknown spread {spread!r} (use 'equal' or 'random')")
    frozen = np.array([c in set(unperturbed) for c in cats])
    free = np.flatnonzero(~frozen)
    P = np.zeros((K, K))
    for i in range(K):
        if frozen[i] or free.size == 1:
            P[i, i] = 1.0
            continue
        others = free[free != i]
        w = np.ones(others.size) if spread == "equal" else rng.dirichlet(np.ones(others.size))
        P[i, i] = dd[i]
        P[i, others] = (1.0 - dd[i]) * w / w.sum()
    return pd.DataFrame(P, index=pd.Index(cats, name="true"), columns=pd.Index(cats, name="released"))


def invariant_matrix(P: np.ndarray | pd.DataFrame, T: np.ndarray, a: float = 1.0) -> np.ndarray:
    """Invariant PRAM matrix ``R* = a P Q + (1 - a) I`` with ``T' R* = T'``.

    ``Q[k, l] = P[l, k] T_l / sum_j P[j, k] T_j`` is the backward (Bayes)
    matrix; a category nobody can be released as keeps ``Q[k, k] = 1``.

    Examples
    --------
    >>> P = np.array([[0.9, 0.1], [0.2, 0.8]]); T = np.array([80., 20.])
    >>> R = invariant_matrix(P, T)
    >>> np.allclose(T @ R, T)
    True
    """
    Pm = check_transition_matrix(P.values if isinstance(P, pd.DataFrame) else P, name="P")
    T = np.asarray(T, dtype=float)
    if T.shape != (Pm.shape[0],) or (T < 0).any():
        raise ValueError("T must hold one non-negative frequency per category")
    a = float(a)
    if not (0.0 <= a <= 1.0):
        raise ValueError("a must lie in [0, 1]")
    denom = Pm.T @ T  # sum_j P[j, k] T_j, per released category k
    Q = np.zeros_like(Pm)
    ok = denom > 0
    Q[ok] = (Pm.T[ok] * T[None, :]) / denom[ok, None]
    Q[~ok, np.flatnonzero(~ok)] = 1.0
    R = Pm @ Q
    R = R / R.sum(axis=1, keepdims=True)
    return a * R + (1.0 - a) * np.eye(Pm.shape[0])


def apply_transition(codes: np.ndarray, P: np.ndarray, rng: np.random.Generator | int | None = None,
                     u: np.ndarray | None = None) -> np.ndarray:
    """Redraw integer category codes (0..K-1; negative = missing, kept) from the rows of ``P``.

    Zero-probability transitions are impossible: the cumulative row is set to
    +inf from its last positive entry on, and an empty interval is never hit.

    Examples
    --------
    >>> apply_transition(np.array([0, 1, 1]), np.eye(2), rng=1).tolist()
    [0, 1, 1]
    """
    P = check_transition_matrix(P, name="P")
    K = P.shape[0]
    codes = np.asarray(codes, dtype=np.int64)
    if codes.size and codes.max(initial=-1) >= K:
        raise ValueError("category code outside the transition matrix")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    if u is None:
        u = rng.random(codes.size)
    cum = np.cumsum(P, axis=1)
    for k in range(K):
        last = np.flatnonzero(P[k] > 0)[-1]
        cum[k, last:] = np.inf
    out = codes.copy()
    valid = codes >= 0
    if not valid.all():
        idx_valid = np.flatnonzero(valid)
        vcodes = codes[idx_valid]
    else:
        idx_valid = None
        vcodes = codes
    order = np.argsort(vcodes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(vcodes, minlength=K))])
    for k in range(K):
        sel = order[bounds[k]:bounds[k + 1]]
        if sel.size == 0:
            continue
        if P[k, k] == 1.0:
            continue
        rec = sel if idx_valid is None else idx_valid[sel]
        out[rec] = np.searchsorted(cum[k], u[rec], side="right")
    return out


@dataclass
class PramResult:
    """Perturbed data and the matrices actually used.

    ``matrices[(variable, stratum)]`` is the matrix applied (rows = true,
    DataFrame labelled with the categories); ``stratum`` is None without strata.
    """

    data: pd.DataFrame
    variables: list[str]
    matrices: dict
    seed: int | None
    method: str
    n_changed: dict
    strata: list[str] | None = None
    params: dict = field(default_factory=dict)

    def matrix(self, variable: str | None = None, stratum=None) -> pd.DataFrame:
        """The PRAM matrix ``P`` (rows = true) for a variable (and stratum)."""
        variable = self.variables[0] if variable is None else variable
        return self.matrices[(variable, stratum)]

    def misclassification_matrix(self, variable: str | None = None, stratum=None) -> pd.DataFrame:
        """``M = P'`` (columns = true), as used by the misclassification risk."""
        return self.matrix(variable, stratum).T


def _categories_and_codes(series: pd.Series, categories: Sequence | None, column: str):
    if categories is None:
        cats = list(pd.unique(series.dropna()))
        try:
            cats = sorted(cats)
        except TypeError:
            pass
    else:
        cats = list(categories)
    codes = pd.Index(cats).get_indexer(series).astype(np.int64)
    bad = (codes < 0) & series.notna().to_numpy()
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        # the category is a data field: the row is named, the value not quoted
        raise RowError(f"column {column!r}: the category is not in the transition matrix",
                       i, series.index)
    return cats, codes


def _decode(orig: pd.Series, cats: list, new: np.ndarray):
    """Map perturbed codes back to values with the dtype of the original column."""
    valid = new >= 0
    if isinstance(orig.dtype, pd.CategoricalDtype):
        pos = orig.cat.categories.get_indexer(cats)
        return pd.Categorical.from_codes(np.where(valid, pos[new.clip(min=0)], -1),
                                         dtype=orig.dtype)
    vals = np.asarray(cats)
    if valid.all():
        arr = vals[new]
    else:
        arr = orig.to_numpy(copy=True)
        if arr.dtype != vals.dtype and arr.dtype != object:
            arr = arr.astype(np.result_type(arr.dtype, vals.dtype))
        arr[valid] = vals[new[valid]]
    try:
        return pd.Series(arr, index=orig.index).astype(orig.dtype)
    except (TypeError, ValueError):
        return pd.Series(arr, index=orig.index)


def _matrix_for(P, cats, variable, stratum):
    """Pick the user matrix for (variable, stratum) and align it to ``cats``."""
    if isinstance(P, Mapping):
        key = None
        for cand in ((variable, stratum), variable, stratum):
            if cand in P:
                key = cand
                break
        if key is None:
            raise ValueError(f"no transition matrix given for column {variable!r}"
                             + ("" if stratum is None else f" stratum {stratum!r}"))
        P = P[key]
    if isinstance(P, pd.DataFrame):
        idx = list(P.index)
        if list(P.columns) != idx:
            raise ValueError(f"transition matrix for {variable!r}: rows and columns must list the "
                             "same categories in the same order")
        check_transition_matrix(P.values, idx, name=f"P[{variable}]")
        missing = sum(c not in idx for c in cats)
        if missing:
            raise ValueError(f"column {variable!r}: {missing} of its categories are not in the "
                             f"transition matrix"
                             + ("" if stratum is None else f" of stratum {stratum!r}"))
        return P
    arr = np.asarray(P, dtype=float)
    check_transition_matrix(arr, cats if arr.shape[0] == len(cats) else None, name=f"P[{variable}]")
    if arr.shape[0] != len(cats):
        raise ValueError(f"transition matrix for {variable!r} has {arr.shape[0]} rows but the "
                         f"column has {len(cats)} categories; pass a labelled DataFrame")
    return pd.DataFrame(arr, index=pd.Index(cats, name="true"), columns=pd.Index(cats, name="released"))


def _run(data: pd.DataFrame, variables, P, d, unperturbed, spread, strata, seed, categories,
         invariant_a: float | None) -> PramResult:
    variables = check_columns(data, [variables] if isinstance(variables, str) else variables, "PRAM")
    strata_cols = None if strata is None else check_columns(
        data, [strata] if isinstance(strata, str) else strata, "strata")
    seed = draw_seed(seed)
    rng = np.random.default_rng(seed)
    out = data.copy()
    matrices, changed = {}, {}
    if strata_cols is None:
        groups = [(None, np.arange(len(data)))]
    else:
        g = data.groupby(strata_cols, sort=True, dropna=False).indices
        groups = [(k, np.asarray(v)) for k, v in g.items()]
    for var in variables:
        cats_given = categories.get(var) if isinstance(categories, Mapping) else categories
        if cats_given is None and P is not None:
            Pv = P
            if isinstance(P, Mapping):
                Pv = P.get(var, next(iter(P.values())))
                if isinstance(Pv, Mapping):
                    Pv = next(iter(Pv.values()))
            if isinstance(Pv, pd.DataFrame):
                cats_given = list(Pv.index)
        cats, codes = _categories_and_codes(data[var], cats_given, var)
        u = rng.random(len(data))
        new = codes.copy()
        sub_seed = int(rng.integers(2 ** 31))
        for s, idx in groups:
            if P is None:
                Pm = generate_pram_matrix(cats, d=d, unperturbed=unperturbed, spread=spread,
                                          seed=sub_seed + len(matrices))
            else:
                Pm = _matrix_for(P, cats, var, s).loc[cats, cats]
            Parr = Pm.values
            if invariant_a is not None:
                c = codes[idx]
                T = np.bincount(c[c >= 0], minlength=len(cats)).astype(float)
                Parr = invariant_matrix(Parr, T, invariant_a)
                Pm = pd.DataFrame(Parr, index=Pm.index, columns=Pm.columns)
            new[idx] = apply_transition(codes[idx], Parr, u=u[idx])
            matrices[(var, s)] = Pm
        changed[var] = int(np.count_nonzero(new != codes))
        out[var] = _decode(data[var], cats, new)
    return PramResult(data=out, variables=variables, matrices=matrices, seed=seed,
                      method="pram" if invariant_a is None else "invariant_pram", n_changed=changed,
                      strata=strata_cols, params={"d": d, "a": invariant_a, "spread": spread,
                                                  "unperturbed": list(unperturbed)})


def pram(data: pd.DataFrame, variables: str | Sequence[str], P=None, d: float | Mapping = 0.8,
         unperturbed: Sequence = (), spread: str = "equal", strata: str | Sequence[str] | None = None,
         seed: int | None = None, categories: Sequence | Mapping | None = None) -> PramResult:
    """Apply PRAM independently to every record.

    Parameters
    ----------
    data : microdata (not modified; a perturbed copy is returned).
    variables : column(s) to perturb, each independently.
    P : transition matrix, rows = true category: a labelled DataFrame (index =
        true, columns = released), an array in the order of ``categories``
        (default: sorted values), or a mapping {variable | (variable, stratum): matrix}.
        If None a matrix is generated with :func:`generate_pram_matrix`
        (``d``, ``unperturbed``, ``spread``).
    strata : column(s); the records of each stratum get their own matrix (kept
        in the result).
    seed : seed of numpy's default generator; the same seed gives the same output.

    Missing values are left missing.

    Examples
    --------
    >>> df = pd.DataFrame({"x": ["a", "b"] * 50})
    >>> res = pram(df, "x", d=0.9, seed=1)
    >>> res.matrix("x").shape, bool(res.data["x"].isin(["a", "b"]).all())
    ((2, 2), True)
    """
    return _run(data, variables, P, d, unperturbed, spread, strata, seed, categories, None)


def invariant_pram(data: pd.DataFrame, variables: str | Sequence[str], P=None, a: float = 1.0,
                   d: float | Mapping = 0.8, unperturbed: Sequence = (), spread: str = "equal",
                   strata: str | Sequence[str] | None = None, seed: int | None = None,
                   categories: Sequence | Mapping | None = None) -> PramResult:
    """Invariant PRAM: apply ``R* = a P Q + (1 - a) I`` built from the observed frequencies
    (within each stratum), so that expected frequencies are unchanged.

    The matrices kept in the result are the ``R*`` actually applied.

    Examples
    --------
    >>> df = pd.DataFrame({"x": ["a"] * 80 + ["b"] * 20})
    >>> res = invariant_pram(df, "x", d=0.8, seed=2)
    >>> R = res.matrix("x").values
    >>> bool(np.allclose(np.array([80, 20]) @ R, [80, 20]))
    True
    """
    return _run(data, variables, P, d, unperturbed, spread, strata, seed, categories, float(a))


@dataclass
class PramEstimate:
    """Unbiased estimate of the original frequencies and its covariance."""

    categories: list
    T_hat: np.ndarray
    cov: np.ndarray

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"estimate": self.T_hat, "se": self.se}, index=pd.Index(self.categories))


def pram_variance(T: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Covariance of ``T^ = (P')^-1 T*`` given the true frequencies ``T``:
    ``(P')^-1 [sum_k T_k (diag(p_k) - p_k p_k')] P^-1``.

    Examples
    --------
    >>> pram_variance(np.array([50., 50.]), np.eye(2)).tolist()
    [[0.0, 0.0], [0.0, 0.0]]
    """
    P = check_transition_matrix(np.asarray(P, dtype=float), name="P")
    T = np.asarray(T, dtype=float)
    V = np.diag(T @ P) - (P.T * T[None, :]) @ P  # sum_k T_k diag(p_k) - sum_k T_k p_k p_k'
    Pinv = np.linalg.inv(P)
    return Pinv.T @ V @ Pinv


def pram_estimate(T_star: np.ndarray | pd.Series, P: np.ndarray | pd.DataFrame,
                  T: np.ndarray | None = None) -> PramEstimate:
    """Unbiased estimator ``T^ = (P')^-1 T*`` of the original frequencies.

    The covariance uses ``T`` when given, else the plug-in ``max(T^, 0)``.

    Examples
    --------
    >>> P = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> pram_estimate(np.array([76., 24.]), P).T_hat.round(6).tolist()
    [80.0, 20.0]
    """
    cats = list(P.index) if isinstance(P, pd.DataFrame) else None
    if isinstance(T_star, pd.Series) and cats is not None:
        T_star = T_star.reindex(cats, fill_value=0)
    Pm = check_transition_matrix(P.values if isinstance(P, pd.DataFrame) else P, cats, name="P")
    Ts = np.asarray(T_star, dtype=float)
    if Ts.shape != (Pm.shape[0],):
        raise ValueError("T_star must have one frequency per category of P")
    if abs(np.linalg.det(Pm)) < 1e-12:
        raise ValueError("P is singular: the PRAM estimator does not exist")
    T_hat = np.linalg.solve(Pm.T, Ts)
    base = np.clip(T_hat, 0.0, None) if T is None else np.asarray(T, dtype=float)
    return PramEstimate(categories=cats if cats is not None else list(range(Pm.shape[0])),
                        T_hat=T_hat, cov=pram_variance(base, Pm))

"""Perturbation tables (ptables) for the cell key method on counts.

A ptable gives, for every original count ``i``, the probabilities ``p(i -> j)`` of the
published count ``j = i + v``.  Rows ``i = 0 .. imax`` are stored; the last row stands for
every ``i >= imax`` (its noise no longer depends on ``i``).  The construction follows the
maximum-entropy approach of the ``ptable`` methodology (Giessing 2016; Enderle, Giessing
and Tent 2018): for each row, among the distributions on the allowed noises

* ``|v| <= D`` (the largest deviation),
* ``j = i + v >= 0`` and ``j`` not in ``1 .. js`` (small counts are never published),

take the one of largest entropy with probabilities summing to one, zero mean and the
variance ``V``; with ``pstay`` the probability of ``v = 0`` is fixed first and the rest is
spread by maximum entropy; with ``mono`` (the ``ptable`` package's monotony condition) the
probabilities fall as ``|v|`` grows on each side of 0, and the row is found by SLSQP.  The maximum-entropy distribution under these moment
constraints has the form ``p(v) ~ exp(a v + b v^2)`` on the allowed noises; ``(a, b)`` solve
the convex dual by Newton's method.  Where a row cannot carry the variance ``V`` (small ``i``:
too few allowed noises) the closest feasible variance is used and reported in
:attr:`PTable.variance`; row ``0`` is always ``p(0 -> 0) = 1`` (zeros stay zero).

Probabilities are stored exactly as integers ``q`` over a decimal ``scale`` (``p = q /
scale``, ``10**8`` for generated tables): after rounding, a small integer correction on two
neighbouring noises makes every row sum to exactly one with exactly zero mean, so the
lookup intervals ``[lb, ub)`` of a row tile ``[0, 1)`` without gaps.

The tau-Argus ptable file (as the ``ptable`` package exports it) is ``;``-separated with the
header ``i;j;p;v;p_int_ub``, one line per transition, rows ordered by ``i`` then ``j``.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy.optimize import linprog

from tabprotect.errors import InputError, read_input_text

__all__ = ["PTableParams", "PTable", "count_ptable", "read_ptable", "write_ptable",
           "ptable_text"]

SCALE = 10 ** 8  # decimal resolution of generated probabilities (8 decimals, as tau-Argus files)


@dataclass(frozen=True)
class PTableParams:
    """Parameters of a count perturbation table."""

    D: int  # largest absolute deviation |published - original|: bounds the damage to any cell
    V: float  # noise variance: the spread an intruder must see through (and users must accept)
    js: int = 0  # published counts 1..js never occur: small values are never shown as such
    pstay: float | None = None  # P(no change) when set; None: the maximum-entropy value
    mono: bool = False  # ptable's monotony: p falls as |v| grows on each side of 0

    def __post_init__(self):
        if not (isinstance(self.D, (int, np.integer)) and self.D >= 1):
            raise InputError("ptable: D must be an integer >= 1")
        if not (np.isfinite(self.V) and self.V > 0):
            raise InputError("ptable: V must be a positive number")
        if not (isinstance(self.js, (int, np.integer)) and self.js >= 0):
            raise InputError("ptable: js must be an integer >= 0")
        if self.js >= self.D:
            raise InputError("ptable: js must be smaller than D (counts 1..js must be able "
                             "to move up above js with zero mean)")
        if self.pstay is not None and not (0.0 <= self.pstay < 1.0):
            raise InputError("ptable: pstay must lie in [0, 1)")

    @property
    def imax(self) -> int:
        """The first original count whose row no longer meets a boundary."""
        return self.D + self.js + (1 if self.js > 0 else 0)


@dataclass(frozen=True, eq=False)
class PTable:
    """A perturbation table: flat arrays, one entry per transition ``i -> j``.

    ``q[k] / scale`` is the exact probability of entry ``k``; entries of a row are
    consecutive and ordered by ``j``.  Row ``imax`` applies to every ``i >= imax``.
    """

    i: np.ndarray      # original count of each entry (0 .. imax)
    j: np.ndarray      # published count of each entry (for the last row: imax + v)
    q: np.ndarray      # probability numerators (int64), over ``scale``
    scale: int         # probability denominator
    params: PTableParams | None = None  # how it was made (None: read from a file)

    @property
    def imax(self) -> int:
        return int(self.i.max())

    @property
    def v(self) -> np.ndarray:
        return self.j - self.i

    @property
    def p(self) -> np.ndarray:
        return self.q / self.scale

    @property
    def ub(self) -> np.ndarray:
        """Upper ends of the lookup intervals (cumulative probability within each row)."""
        out = np.empty(self.q.size)
        for r in range(self.imax + 1):
            s = np.flatnonzero(self.i == r)
            out[s] = np.cumsum(self.q[s]) / self.scale
        return out

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """``(v, q)`` of original count ``i`` (the last row for ``i >= imax``)."""
        s = self.i == min(int(i), self.imax)
        return self.v[s], self.q[s]

    def fractions(self, i: int) -> dict[int, Fraction]:
        """Exact probabilities ``{v: p}`` of row ``i``."""
        v, q = self.row(i)
        return {int(a): Fraction(int(b), self.scale) for a, b in zip(v, q)}

    @property
    def variance(self) -> np.ndarray:
        """Noise variance achieved by each row ``0 .. imax``."""
        return np.array([float(sum(Fraction(a * a) * p for a, p in self.fractions(r).items()))
                         for r in range(self.imax + 1)])

    def transition(self, n_original: int) -> np.ndarray:
        """Dense ``P[i, j]`` for originals ``0 .. n_original - 1`` and the published counts
        they reach (``j < n_original + D``)."""
        vmax = int(np.abs(self.v).max())
        P = np.zeros((n_original, n_original + vmax))
        for r in range(n_original):
            v, q = self.row(r)
            P[r, r + v] = q / self.scale
        return P

    def lookup(self, counts: np.ndarray, cell_keys: np.ndarray) -> np.ndarray:
        """Noise ``v`` for each cell: the entry of row ``min(count, imax)`` whose interval
        ``[lb, ub)`` holds the cell key."""
        counts = np.asarray(counts, dtype=np.int64)
        keys = np.asarray(cell_keys, dtype=float)
        rows = np.minimum(counts, self.imax)
        starts = np.searchsorted(self.i, np.arange(self.imax + 2))
        ub = self.ub
        out = np.zeros(counts.size, dtype=np.int64)
        for r in range(self.imax + 1):
            sel = np.flatnonzero(rows == r)
            if not sel.size:
                continue
            a, b = starts[r], starts[r + 1]
            k = np.searchsorted(ub[a:b], keys[sel], side="right")
            out[sel] = self.v[a + np.minimum(k, b - a - 1)]
        return out


# ---------------------------------------------------------------------- construction
def _allowed(i: int, P: PTableParams) -> np.ndarray:
    v = np.arange(-P.D, P.D + 1)
    j = i + v
    ok = (j >= 0) & ~((j > 0) & (j <= P.js))
    return v[ok]


def _moment_range(v: np.ndarray) -> tuple[float, float]:
    """Smallest and largest second moment of a zero-mean distribution on ``v``."""
    A = np.vstack([np.ones(v.size), v.astype(float)])
    out = []
    for sign in (1.0, -1.0):
        res = linprog(sign * v.astype(float) ** 2, A_eq=A, b_eq=[1.0, 0.0],
                      bounds=(0, None), method="highs")
        if res.status != 0:
            raise InputError("ptable: no zero-mean distribution on the allowed noises")
        out.append(sign * res.fun)
    return out[0], out[1]


def _vertex(v: np.ndarray, t: float) -> np.ndarray:
    """A zero-mean distribution on ``v`` with second moment ``t`` (at an end of the range)."""
    A = np.vstack([np.ones(v.size), v.astype(float), v.astype(float) ** 2])
    res = linprog(np.zeros(v.size), A_eq=A, b_eq=[1.0, 0.0, t], bounds=(0, None),
                  method="highs")
    return np.clip(res.x, 0.0, None)


def _maxent(v: np.ndarray, t: float) -> np.ndarray:
    """Maximum-entropy distribution on ``v`` with mean 0 and second moment ``t``."""
    lo, hi = _moment_range(v)
    t = min(max(t, lo), hi)
    if t - lo < 1e-9 or hi - t < 1e-9:
        return _vertex(v, t)
    x = v.astype(float)
    feats = np.vstack([x, x * x - t])          # gradient of the dual = E[feats]
    lam = np.zeros(2)

    def dual(l):
        z = l @ feats
        m = z.max()
        w = np.exp(z - m)
        return m + np.log(w.sum()), w / w.sum()

    f, p = dual(lam)
    for _ in range(200):
        g = feats @ p
        if np.abs(g).max() < 1e-14:
            break
        c = feats - g[:, None]
        H = (c * p) @ c.T + 1e-300 * np.eye(2)
        step = np.linalg.solve(H, g)
        s = 1.0
        while True:
            f2, p2 = dual(lam - s * step)
            if f2 <= f - 1e-4 * s * (g @ step) or s < 1e-12:
                break
            s /= 2
        lam, f, p = lam - s * step, f2, p2
    return p


def _mono_rows(v: np.ndarray) -> np.ndarray:
    """Rows ``G`` with ``G @ p <= 0`` for: p falls as ``|v|`` grows on each side of 0 (a
    noise next to 0 on either side is at most ``p(0)`` when 0 is allowed)."""
    rows = []
    pos = [k for k in np.argsort(v) if v[k] > 0]
    neg = [k for k in np.argsort(-v) if v[k] < 0]
    zero = [k for k in range(v.size) if v[k] == 0]
    for side in (pos, neg):
        chain = zero + side
        for a, b in zip(chain, chain[1:]):
            r = np.zeros(v.size)
            r[b], r[a] = 1.0, -1.0           # p[b] - p[a] <= 0
            rows.append(r)
    return np.array(rows).reshape(-1, v.size)


def _free_maxent(v: np.ndarray, t: float, p0: float | None) -> np.ndarray | None:
    """The maximum-entropy row without the monotony rows (None when it cannot reach ``t``)."""
    if p0 is None or not (v == 0).any():
        lo, hi = _moment_range(v)
        return _maxent(v, t) if lo < t < hi else None
    rest = v[v != 0]
    mass = 1.0 - p0
    if mass <= 0:
        return None
    lo, hi = _moment_range(rest)
    if not lo < t / mass < hi:
        return None
    p = np.zeros(v.size)
    p[v == 0] = p0
    p[v != 0] = mass * _maxent(rest, t / mass)
    return p


def _maxent_mono(v: np.ndarray, t: float, p0: float | None) -> np.ndarray:
    """Maximum entropy on ``v`` with mean 0, second moment ``t`` (clamped into what the
    constraints allow), the monotony rows and optionally ``p(0) = p0``: the free maximum
    when it is monotone, else SLSQP from a feasible start (the start, a feasible row, is
    kept if SLSQP does not converge)."""
    from scipy.optimize import minimize
    x = v.astype(float)
    A = [np.ones(v.size), x]
    b = [1.0, 0.0]
    if p0 is not None:
        A.append((v == 0).astype(float))
        b.append(p0)
    A = np.array(A)
    G = _mono_rows(v)
    ends = []
    for sign in (1.0, -1.0):
        res = linprog(sign * x * x, A_ub=G if G.size else None,
                      b_ub=np.zeros(len(G)) if G.size else None, A_eq=A, b_eq=b,
                      bounds=(0, None), method="highs")
        if res.status != 0:
            raise InputError("ptable: the monotony condition leaves no zero-mean row")
        ends.append(np.clip(res.x, 0, None))
    lo, hi = float(ends[0] @ (x * x)), float(ends[1] @ (x * x))
    t = min(max(t, lo), hi)
    if hi - lo < 1e-12:
        return ends[0]
    a = (hi - t) / (hi - lo)
    start = a * ends[0] + (1 - a) * ends[1]
    if t - lo < 1e-9 or hi - t < 1e-9:
        return start
    free = _free_maxent(v, t, p0)        # the maximum without the monotony rows
    if free is not None and (not G.size or (G @ free <= 1e-12).all()):
        return free
    cons = [{"type": "eq", "fun": lambda p: A @ p - b, "jac": lambda p: A},
            {"type": "eq", "fun": lambda p: np.array([p @ (x * x) - t]),
             "jac": lambda p: (x * x)[None, :]}]
    if G.size:
        cons.append({"type": "ineq", "fun": lambda p: -(G @ p), "jac": lambda p: -G})
    res = minimize(lambda p: float(np.sum(p * np.log(np.maximum(p, 1e-300)))), start,
                   jac=lambda p: np.log(np.maximum(p, 1e-300)) + 1.0, method="SLSQP",
                   bounds=[(0.0, 1.0)] * v.size, constraints=cons,
                   options={"ftol": 1e-13, "maxiter": 300})
    return np.clip(res.x, 0, None) if res.success else start


def _quantize(v: np.ndarray, p: np.ndarray, keep_zero: bool) -> np.ndarray:
    """Integers ``q`` over :data:`SCALE` closest to ``p`` with ``sum q = SCALE`` and
    ``sum q v = 0`` exactly: rounding, then the fewest unit changes that cancel the rounding
    residuals (a breadth-first search over the residuals; ``v = 0`` is left alone when
    ``pstay`` is fixed, unless nothing else works)."""
    q = np.floor(p * SCALE + 0.5).astype(np.int64)
    target = (SCALE - int(q.sum()), -int((q * v).sum()))
    if target == (0, 0):
        return q
    for skip_zero in ((True, False) if keep_zero else (False,)):
        moves = [(s, k) for k in range(v.size) if not (skip_zero and v[k] == 0)
                 for s in (1, -1) if s > 0 or q[k] > 1000]
        d = _shortest_correction(target, moves, v)
        if d is not None:
            return q + d
    raise InputError("ptable: cannot represent a row exactly with 8 decimals; "
                     "choose other D, V or pstay")


def _shortest_correction(target, moves, v, limit: int = 60):
    """Unit changes ``d`` (+1/-1 at a noise) with ``sum d = target[0]`` and ``sum d v =
    target[1]``, as few as possible (None if not within ``limit`` changes)."""
    start = (0, 0)
    prev = {start: None}
    frontier = [start]
    for _ in range(limit):
        nxt = []
        for state in frontier:
            for s, k in moves:
                new = (state[0] + s, state[1] + s * int(v[k]))
                if new in prev or abs(new[0]) > limit or abs(new[1]) > limit * v.size:
                    continue
                prev[new] = (state, s, k)
                if new == target:
                    d = np.zeros(v.size, np.int64)
                    while prev[new] is not None:
                        new, s2, k2 = prev[new]
                        d[k2] += s2
                    return d
                nxt.append(new)
        frontier = nxt
    return None


def count_ptable(D: int, V: float, js: int = 0, pstay: float | None = None,
                 mono: bool = False) -> PTable:
    """The maximum-entropy perturbation table for counts.

    Examples
    --------
    >>> pt = count_ptable(D=1, V=0.5)
    >>> pt.fractions(5)
    {-1: Fraction(1, 4), 0: Fraction(1, 2), 1: Fraction(1, 4)}
    >>> pt.fractions(0)
    {0: Fraction(1, 1)}
    """
    P = PTableParams(int(D), float(V), int(js), None if pstay is None else float(pstay),
                     bool(mono))
    I, J, Q = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)], [np.array([SCALE], np.int64)]
    for i in range(1, P.imax + 1):
        v = _allowed(i, P)
        has_zero = bool((v == 0).any())
        if P.mono:
            p = _maxent_mono(v, P.V, P.pstay if has_zero else None)
        elif P.pstay is not None and has_zero:
            rest = v[v != 0]
            mass = 1.0 - P.pstay
            p = np.zeros(v.size)
            p[v == 0] = P.pstay
            p[v != 0] = mass * _maxent(rest, P.V / mass) if mass > 0 else 0.0
        else:
            p = _maxent(v, P.V)
        q = _quantize(v, p, keep_zero=P.pstay is not None)
        keep = q > 0
        I.append(np.full(int(keep.sum()), i, np.int64))
        J.append(i + v[keep])
        Q.append(q[keep])
    return PTable(np.concatenate(I), np.concatenate(J), np.concatenate(Q), SCALE, P)


# ---------------------------------------------------------------------- tau-Argus files
def write_ptable(pt: PTable, path: str | Path) -> None:
    """Write the tau-Argus ptable file (``i;j;p;v;p_int_ub``, exact decimals)."""
    Path(path).write_text(ptable_text(pt))


def ptable_text(pt: PTable) -> str:
    """The tau-Argus ptable file's text."""
    digits = len(str(pt.scale)) - 1
    if 10 ** digits != pt.scale:
        raise ValueError("only decimal scales can be written")
    cum = 0
    lines = ["i;j;p;v;p_int_ub"]
    last = -1
    for i, j, q in zip(pt.i, pt.j, pt.q):
        if i != last:
            cum, last = 0, i
        cum += int(q)
        lines.append(f"{i};{j};{_fmt(int(q), digits)};{j - i};{_fmt(cum, digits)}")
    return "\n".join(lines) + "\n"


def _fmt(q: int, digits: int) -> str:
    return f"{q // 10 ** digits}.{q % 10 ** digits:0{digits}d}"


def read_ptable(path: str | Path) -> PTable:
    """Read a tau-Argus ptable file; the probabilities are kept as exact decimals.

    Columns may come in any order; ``i``, ``j`` and ``p`` are needed (``v`` and
    ``p_int_ub``, when present, must agree with them).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: ptable file not found")
    lines = [ln for ln in read_input_text(path, "ptable file").splitlines() if ln.strip()]
    if not lines:
        raise InputError(f"{path}: empty ptable file")
    head = [h.strip().strip('"').lower() for h in lines[0].split(";")]
    for need in ("i", "j", "p"):
        if need not in head:
            raise InputError(f"{path}: ptable header lacks column '{need}' "
                             "(expected i;j;p;v;p_int_ub)")
    col = {h: k for k, h in enumerate(head)}
    rows = []
    for n, ln in enumerate(lines[1:], start=2):
        f = [x.strip().strip('"') for x in ln.split(";")]
        if len(f) != len(head):
            raise InputError(f"{path} line {n}: {len(f)} fields, header has {len(head)}")
        try:
            i, j = int(f[col["i"]]), int(f[col["j"]])
            p = Decimal(f[col["p"]])
            v = int(f[col["v"]]) if "v" in col else j - i
        except (ValueError, InvalidOperation):
            raise InputError(f"{path} line {n}: i, j, v must be integers and p a number") from None
        if v != j - i or i < 0 or j < 0 or p < 0 or p > 1:
            raise InputError(f"{path} line {n}: inconsistent entry (v must be j - i, "
                             "0 <= p <= 1, i and j >= 0)")
        rows.append((i, j, p, n))
    digits = max(max(-p.as_tuple().exponent, 0) for _, _, p, _ in rows)
    scale = 10 ** digits
    rows.sort(key=lambda r: (r[0], r[1]))
    I = np.array([r[0] for r in rows], np.int64)
    J = np.array([r[1] for r in rows], np.int64)
    Q = np.array([int(r[2] * scale) for r in rows], np.int64)
    for i in range(int(I.max()) + 1):
        s = I == i
        if not s.any():
            raise InputError(f"{path}: no entries for original count {i}")
        if abs(int(Q[s].sum()) - scale) > scale // 10 ** 6:
            raise InputError(f"{path}: probabilities of original count {i} do not sum to 1")
    return PTable(I, J, Q, scale, None)

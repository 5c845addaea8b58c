"""Record swapping of one variable (e.g. geography) between records that agree on
control variables, random or targeted at high-risk records.

``rate`` is the share of records whose value is exchanged: ``round(rate * n / 2)``
pairs are formed.  A pair is formed only between records in the same control
group with *different* values of the swapped variable (a swap of equal values
changes nothing).  Random swapping picks the first record of each pair at
random; targeted swapping takes the records in decreasing order of a risk
score (ties broken at random).  The partner is drawn at random among the
unused records of the group with another value.

The implied misclassification is reported both ways:
``P[k, l]`` (rows = true) = share of records with true value k released as l,
and ``M = P.T`` (columns = true) for :func:`misclassification_risk`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ._validate import RowError, check_columns, draw_seed

__all__ = ["SwapResult", "swap"]


@dataclass
class SwapResult:
    """Swapped data, the pairs, and the implied transition matrices."""

    data: pd.DataFrame
    variable: str
    control: list[str]
    rate: float
    targeted: bool
    seed: int | None
    pairs: np.ndarray  # (n_swaps, 2) row positions
    P: pd.DataFrame     # rows = true, columns = released (empirical)
    params: dict = field(default_factory=dict)

    @property
    def n_swaps(self) -> int:
        return int(self.pairs.shape[0])

    @property
    def n_records_changed(self) -> int:
        return 2 * self.n_swaps

    @property
    def M(self) -> pd.DataFrame:
        """Implied misclassification matrix, columns = true (``M = P.T``)."""
        m = self.P.T.copy()
        m.index.name, m.columns.name = "released", "true"
        return m


def swap(data: pd.DataFrame, variable: str, control: str | Sequence[str] | None = None, rate: float = 0.05,
         risk: np.ndarray | pd.Series | str | None = None, seed: int | None = None) -> SwapResult:
    """Swap ``variable`` between pairs of records agreeing on ``control``.

    Parameters
    ----------
    data : microdata (not modified).
    variable : the column whose values are exchanged.
    control : columns both records of a pair must agree on (None: any pair).
    rate : share of records whose value is exchanged, in [0, 1].
    risk : per-record risk score (array or column name) for targeted swapping;
        None for random swapping.
    seed : random seed.

    Examples
    --------
    >>> df = pd.DataFrame({"geo": [1, 2, 1, 2, 1, 2], "sex": [0, 0, 0, 1, 1, 1]})
    >>> res = swap(df, "geo", control="sex", rate=0.67, seed=0)
    >>> res.n_swaps, sorted(res.data["geo"]) == sorted(df["geo"])
    (2, True)
    """
    (variable,) = check_columns(data, [variable], "swap")
    ctrl = [] if control is None else check_columns(
        data, [control] if isinstance(control, str) else control, "control")
    if variable in ctrl:
        raise ValueError(f"swap variable {variable!r} cannot also be a control variable")
    rate = float(rate)
    if not (0.0 <= rate <= 1.0):
        raise ValueError("swap rate must lie in [0, 1]")
    n = len(data)
    seed = draw_seed(seed)
    rng = np.random.default_rng(seed)
    if data[variable].isna().any():
        raise RowError(f"swap variable {variable!r} is missing",
                       np.flatnonzero(data[variable].isna().to_numpy())[0], data.index)
    vcodes, vcats = pd.factorize(data[variable], sort=True)
    K = len(vcats)
    if ctrl:
        gcodes = data.groupby(ctrl, sort=False, dropna=False).ngroup().to_numpy()
    else:
        gcodes = np.zeros(n, dtype=np.int64)
    targeted = risk is not None
    if targeted:
        if isinstance(risk, str):
            if risk not in data.columns:
                raise ValueError(f"unknown risk column {risk!r}")
            r = pd.to_numeric(data[risk], errors="coerce").to_numpy(dtype=float)
        else:
            r = np.asarray(risk, dtype=float)
        if r.shape != (n,) or not np.isfinite(r).all():
            raise ValueError("risk must give one finite score per record")
        order = np.lexsort((rng.random(n), -r))
    else:
        order = rng.permutation(n)
    target_pairs = int(round(rate * n / 2))
    # per (group, value): shuffled stack of record positions
    key = gcodes.astype(np.int64) * K + vcodes
    perm = rng.permutation(n)
    srt = perm[np.argsort(key[perm], kind="stable")]
    ks = key[srt]
    starts = np.flatnonzero(np.diff(ks, prepend=-1) != 0)
    stacks: dict[int, list[int]] = {}
    for a, b in zip(starts, np.append(starts[1:], n)):
        stacks[int(ks[a])] = list(srt[a:b])
    avail = {k: len(v) for k, v in stacks.items()}
    used = np.zeros(n, dtype=bool)
    out_codes = vcodes.copy()
    pairs = []
    for i in order:
        if len(pairs) >= target_pairs:
            break
        if used[i]:
            continue
        g, v = int(gcodes[i]), int(vcodes[i])
        others = [(g * K + w) for w in range(K) if w != v and avail.get(g * K + w, 0) > 0]
        if not others:
            continue
        counts = np.array([avail[o] for o in others], dtype=float)
        o = others[int(rng.choice(len(others), p=counts / counts.sum()))]
        st = stacks[o]
        j = st.pop()
        while used[j]:
            j = st.pop()
        used[i] = used[j] = True
        avail[o] -= 1
        avail[g * K + v] -= 1
        out_codes[i], out_codes[j] = vcodes[j], vcodes[i]
        pairs.append((i, j))
    out = data.copy()
    vals = np.asarray(vcats)
    col = pd.Series(vals[out_codes], index=data.index)
    try:
        col = col.astype(data[variable].dtype)
    except (TypeError, ValueError):
        pass
    out[variable] = col
    cnt = np.zeros((K, K))
    np.add.at(cnt, (vcodes, out_codes), 1.0)
    P = cnt / np.maximum(cnt.sum(axis=1, keepdims=True), 1.0)
    labels = list(vcats)
    Pdf = pd.DataFrame(P, index=pd.Index(labels, name="true"), columns=pd.Index(labels, name="released"))
    return SwapResult(data=out, variable=variable, control=ctrl, rate=rate, targeted=targeted, seed=seed,
                      pairs=np.asarray(pairs, dtype=np.int64).reshape(-1, 2), P=Pdf,
                      params={"target_pairs": target_pairs})

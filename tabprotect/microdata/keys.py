"""Key-variable frequencies: sample counts ``f_k``, weighted population estimates
``F^_k``, sample uniques and k-anonymity violations.

Records are grouped on the combination of their key values with
``pandas.factorize`` on integer codes (no Python loop over records), so ten
million records with eight keys take a few seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ._validate import check_columns, check_weights

__all__ = ["KeyFrequencies", "key_frequencies", "encode_keys", "combine_codes"]


def encode_keys(data: pd.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Integer codes of each key column (records x keys, -1 = missing) and the category labels.

    Examples
    --------
    >>> codes, cats = encode_keys(pd.DataFrame({"a": ["x", "y", None]}), ["a"])
    >>> codes[:, 0].tolist(), list(cats[0])
    ([0, 1, -1], ['x', 'y'])
    """
    keys = check_columns(data, keys)
    # column-major: every key is written and read as one contiguous column
    codes = np.empty((len(data), len(keys)), dtype=np.int64, order="F")
    cats = []
    for j, k in enumerate(keys):
        c, u = _factorize(data[k])
        codes[:, j] = c
        cats.append(u)
    return codes, cats


def _factorize(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Sorted factorisation; a lookup table for integer columns of moderate range (O(n))."""
    x = col.to_numpy()
    if x.dtype.kind in "iub" and x.size:
        dtype = x.dtype
        x = x.astype(np.int64, copy=False) if x.dtype.kind == "b" else x
        mn, mx = int(x.min()), int(x.max())
        if mx - mn < 10_000_000:
            shifted = (x - mn) if mn != 0 else x
            present = np.bincount(shifted, minlength=mx - mn + 1) > 0
            lut = np.cumsum(present) - 1
            return lut[shifted].astype(np.int64), (np.flatnonzero(present) + mn).astype(dtype)
    c, u = pd.factorize(col, sort=True, use_na_sentinel=True)
    return c.astype(np.int64, copy=False), np.asarray(u)


def combine_codes(codes: np.ndarray, levels: Sequence[int] | None = None) -> tuple[np.ndarray, int]:
    """Combine per-key codes (all >= 0) into one dense integer per record.

    Returns ``(cell, n_cells_observed)`` where ``cell`` takes values
    0..n_cells_observed-1 in order of first appearance.
    """
    codes = np.asarray(codes)
    n, m = codes.shape
    if m == 0:
        return np.zeros(n, dtype=np.int64), 1 if n else 0
    if levels is None:
        levels = [int(codes[:, j].max()) + 1 if n else 1 for j in range(m)]
    acc = codes[:, 0].astype(np.int64)
    radix = int(levels[0])
    for j in range(1, m):
        lev = int(levels[j])
        if radix * lev >= 2 ** 62:  # compress before overflowing
            acc, uniq = pd.factorize(acc)
            radix = len(uniq)
        acc = acc * lev + codes[:, j]
        radix *= lev
    cell, uniq = pd.factorize(acc)
    return cell.astype(np.int64), len(uniq)


@dataclass
class KeyFrequencies:
    """Frequencies of key combinations, per record and per combination.

    Attributes
    ----------
    keys : key column names.
    fk : sample frequency of each record's key combination (records,).
    Fk : estimated population frequency ``F^_k`` = sum of weights (= ``fk`` unweighted).
    cell : index of each record's combination into ``combinations``.
    combinations : one row per distinct combination: key values, ``f`` and ``F``.
    weighted, missing_matches : the options used.
    """

    keys: list[str]
    fk: np.ndarray
    Fk: np.ndarray
    cell: np.ndarray
    combinations: pd.DataFrame
    weighted: bool = False
    missing_matches: bool = False
    notes: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.fk.size)

    @property
    def sample_unique(self) -> np.ndarray:
        """Boolean mask of records that are unique on the keys (``f_k = 1``)."""
        return self.fk == 1

    @property
    def n_sample_uniques(self) -> int:
        return int(np.count_nonzero(self.fk == 1))

    def violates(self, k: int) -> np.ndarray:
        """Mask of records whose combination occurs fewer than ``k`` times."""
        return self.fk < int(k)

    def k_anonymity_violations(self, k: int) -> int:
        """Number of records violating k-anonymity (``f_k < k``)."""
        return int(np.count_nonzero(self.fk < int(k)))

    def to_frame(self) -> pd.DataFrame:
        """Per-record frame with ``fk`` and ``Fk``."""
        return pd.DataFrame({"fk": self.fk, "Fk": self.Fk})


def _compatible_counts(codes: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """fk / Fk when a missing value (-1) matches any category.

    Records i and j match when they agree on every key observed in both.
    For every pair of missing-value patterns (a, b) the records of pattern b
    are grouped on the keys observed in both patterns and the counts looked up
    for the records of pattern a.
    """
    n, m = codes.shape
    miss = codes < 0
    pat = np.zeros(n, dtype=np.int64)
    for j in range(m):
        pat |= miss[:, j].astype(np.int64) << j
    pats, pat_idx = np.unique(pat, return_inverse=True)
    members = [np.flatnonzero(pat_idx == a) for a in range(pats.size)]
    fk = np.zeros(n, dtype=np.int64)
    Fk = np.zeros(n, dtype=float)
    for a, pa in enumerate(pats):
        ia = members[a]
        for b, pb in enumerate(pats):
            ib = members[b]
            used = [j for j in range(m) if not ((int(pa) | int(pb)) >> j) & 1]
            both = np.concatenate([ia, ib])
            if used:
                cell, ncell = combine_codes(codes[np.ix_(both, used)])
            else:
                cell, ncell = np.zeros(both.size, dtype=np.int64), 1
            cb = cell[ia.size:]
            cnt = np.bincount(cb, minlength=ncell)
            fk[ia] += cnt[cell[:ia.size]]
            wb = np.ones(ib.size) if w is None else w[ib]
            Fk[ia] += np.bincount(cb, weights=wb, minlength=ncell)[cell[:ia.size]]
    return fk, Fk


def key_frequencies(data: pd.DataFrame, keys: Sequence[str], weights: str | np.ndarray | None = None,
                    missing_matches: bool = False) -> KeyFrequencies:
    """Sample frequencies ``f_k`` and weighted estimates ``F^_k`` of key combinations.

    Parameters
    ----------
    data : microdata, one row per record.
    keys : names of the categorical key (quasi-identifier) columns.
    weights : sampling-weight column name or array; ``F^_k`` is the sum of the
        weights in the combination. Weights must be finite and > 0.
    missing_matches : if True a missing key value matches any category (the
        intruder cannot exclude it), so ``f_k`` counts all compatible records;
        if False a missing value is a category of its own.

    Examples
    --------
    >>> df = pd.DataFrame({"A": [1, 1, 2], "B": [3, 3, 3]})
    >>> key_frequencies(df, ["A", "B"]).fk.tolist()
    [2, 2, 1]
    """
    keys = check_columns(data, keys)
    w = check_weights(data, weights)
    codes, cats = encode_keys(data, keys)
    n = len(data)
    has_missing = bool((codes < 0).any())
    if has_missing and not missing_matches:
        # missing is a category of its own: shift codes so -1 -> 0
        ccodes = codes + 1
        levels = [len(c) + 1 for c in cats]
    else:
        ccodes = codes.clip(min=0) if not has_missing else codes
        levels = [len(c) + 1 for c in cats] if has_missing else [max(len(c), 1) for c in cats]
    if has_missing and missing_matches:
        cell, ncell = combine_codes(codes + 1, levels)
        fk, Fk = _compatible_counts(codes, w)
    else:
        cell, ncell = combine_codes(ccodes, levels)
        cnt = np.bincount(cell, minlength=ncell)
        fk = cnt[cell]
        Fk = fk.astype(float) if w is None else np.bincount(cell, weights=w, minlength=ncell)[cell]
    # one representative record per combination
    # cell codes are numbered in order of first appearance (pandas.factorize)
    runmax = np.maximum.accumulate(cell) if n else cell
    first = np.flatnonzero(np.diff(runmax, prepend=-1) > 0)
    comb = data[keys].iloc[first].reset_index(drop=True)
    comb["f"] = fk[first]
    comb["F"] = Fk[first]
    return KeyFrequencies(keys=keys, fk=fk.astype(np.int64), Fk=np.asarray(Fk, dtype=float),
                          cell=cell, combinations=comb, weighted=w is not None,
                          missing_matches=bool(missing_matches and has_missing))

"""Row gathers on CSR (or CSC) matrices, without scipy's row selection.

Selecting rows of a scipy sparse matrix builds and validates a new matrix per call; on
10^6-cell tables, where the audit and the repair cut out thousands of small regions, that
costs more than the LPs solved on them.  These helpers read the index arrays directly.
"""
from __future__ import annotations

import numpy as np


def ranges(start: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(start[i], start[i] + lengths[i])`` without a Python loop.

    Examples
    --------
    >>> ranges(np.array([0, 10]), np.array([2, 3])).tolist()
    [0, 1, 10, 11, 12]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    shift = np.repeat(start - (np.cumsum(lengths) - lengths), lengths)
    return shift + np.arange(total)


def row_positions(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions (into ``indices`` / ``data``) of every stored entry of ``rows``, row by row.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> M = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 3], [4, 5, 0]]))
    >>> M.data[row_positions(M.indptr, np.array([2, 0]))].tolist()
    [4, 5, 1, 2]
    """
    rows = np.asarray(rows, dtype=np.int64)
    return ranges(indptr[rows], indptr[rows + 1] - indptr[rows])


def row_indices(indptr: np.ndarray, indices: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The stored column indices of ``rows`` (of a CSR matrix; rows of a CSC: its columns).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> M = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 3]]))
    >>> row_indices(M.indptr, M.indices, np.array([0, 1])).tolist()
    [0, 2, 2]
    """
    return indices[row_positions(indptr, rows)]


def sum_of_others(rows: np.ndarray, term: np.ndarray, m: int, inf: float) -> np.ndarray:
    """Per stored entry of a matrix with ``m`` rows (``rows``: each entry's row), the sum
    of the other entries' ``term`` in its row; ``inf`` where another term is not finite.
    Bound propagation's "what the rest of the relation can add up to".

    Examples
    --------
    >>> sum_of_others(np.array([0, 0, 1]), np.array([1.0, 2.0, np.inf]), 2, np.inf).tolist()
    [2.0, 1.0, 0.0]
    """
    infinite = ~np.isfinite(term)
    finite_sum = np.bincount(rows, weights=np.where(infinite, 0.0, term), minlength=m)
    n_inf = np.bincount(rows, weights=infinite.astype(float), minlength=m)
    others_inf = n_inf[rows] - infinite > 0.5
    return np.where(others_inf, inf, finite_sum[rows] - np.where(infinite, 0.0, term))

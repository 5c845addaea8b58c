"""Input checks shared by the microdata modules (private).

Error messages name columns, categories and rows, never the confidential values
themselves. A bad row is a :class:`RowError`: its message names the DataFrame's row by its
0-based position and index label; a command that read the frame from a file names the
file's line instead (:meth:`RowError.in_file`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd


class RowError(ValueError):
    """A bad value in one row of the microdata (``position``: 0-based, of the frame or
    array given); the message says what is wrong without quoting the value.

    >>> str(RowError("weight is not > 0", 2, pd.Index(["a", "b", "c"])))
    "row 2 (0-based position; index label 'c'): weight is not > 0"
    >>> RowError("weight is not > 0", 2).in_file("people.csv")
    'people.csv line 4: weight is not > 0'
    """

    def __init__(self, what: str, position: int, index=None):
        self.what, self.position = what, int(position)
        where = f"row {self.position} (0-based position"
        if index is not None:
            where += f"; index label {label(index[self.position])!r}"
        super().__init__(f"{where}): {what}")

    def in_file(self, name: str) -> str:
        """The message for a frame read from the file ``name`` row for row: the line an
        editor shows (the header is line 1); a Parquet file's record, counted from 1."""
        if str(name).lower().endswith((".parquet", ".pq")):
            return f"{name} record {self.position + 1}: {self.what}"
        return f"{name} line {self.position + 2}: {self.what}"


def draw_seed(seed: int | None) -> int:
    """``seed``, or a fresh one drawn from the operating system's entropy when None: a
    random method records the seed it ran with (in its result, the confidential side), so
    every run can be repeated."""
    if seed is not None:
        return seed
    return int(np.random.SeedSequence().entropy % (2 ** 63))


def label(v):
    """A category label for messages (numpy scalars shown as plain Python values)."""
    return v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v


def check_columns(data: pd.DataFrame, columns: Sequence[str], what: str = "key") -> list[str]:
    """Return ``columns`` as a list after checking that each exists in ``data``."""
    if not isinstance(data, pd.DataFrame):
        raise ValueError("microdata must be a pandas DataFrame")
    if isinstance(columns, str):
        columns = [columns]
    cols = list(columns)
    if not cols:
        raise ValueError(f"at least one {what} column is required")
    for c in cols:
        if c not in data.columns:
            raise ValueError(f"unknown {what} column {c!r}")
    if len(set(cols)) != len(cols):
        raise ValueError(f"duplicated {what} column in {cols!r}")
    return cols


def check_weights(data: pd.DataFrame, weights: str | Sequence[float] | np.ndarray | None,
                  n: int | None = None) -> np.ndarray | None:
    """Return the weights as a float array; ValueError for NaN, infinite or <= 0 weights."""
    if weights is None:
        return None
    if isinstance(weights, str):
        if weights not in data.columns:
            raise ValueError(f"unknown weight column {weights!r}")
        name = weights
        w = pd.to_numeric(data[weights], errors="coerce").to_numpy(dtype=float)
    else:
        name = "weights"
        w = np.asarray(weights, dtype=float)
    n = len(data) if n is None else n
    if w.shape != (n,):
        raise ValueError(f"{name}: expected {n} weights, got shape {w.shape}")
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise RowError(f"weight column {name!r} must be finite and > 0 ({rows.size} bad "
                       f"row(s), this the first)", rows[0],
                       data.index if len(data) == n else None)
    return w


def check_fraction(pi: float, name: str = "sampling_fraction") -> float:
    pi = float(pi)
    if not (0.0 < pi < 1.0) or not np.isfinite(pi):
        raise ValueError(f"{name} must lie strictly between 0 and 1")
    return pi


def check_transition_matrix(P: np.ndarray, categories: Sequence | None = None,
                            name: str = "P", axis: int = 1, atol: float = 1e-9) -> np.ndarray:
    """Validate a stochastic matrix.

    ``axis=1``: rows sum to one (PRAM ``P``, rows = true category);
    ``axis=0``: columns sum to one (misclassification ``M``, columns = true category).
    """
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"transition matrix {name} must be square, got shape {P.shape}")
    labels = list(categories) if categories is not None else list(range(P.shape[0]))
    if len(labels) != P.shape[0]:
        raise ValueError(f"transition matrix {name} has {P.shape[0]} rows but "
                         f"{len(labels)} categories")
    if not np.isfinite(P).all():
        i, j = np.argwhere(~np.isfinite(P))[0]
        raise ValueError(f"transition matrix {name} has a non-finite entry at "
                         f"({label(labels[i])!r}, {label(labels[j])!r})")
    if (P < 0).any():
        i, j = np.argwhere(P < 0)[0]
        raise ValueError(f"transition matrix {name} has a negative entry at "
                         f"({label(labels[i])!r}, {label(labels[j])!r})")
    sums = P.sum(axis=axis)
    bad = np.flatnonzero(np.abs(sums - 1.0) > atol)
    if bad.size:
        part = "row" if axis == 1 else "column"
        raise ValueError(f"transition matrix {name}: {part} for category "
                         f"{label(labels[bad[0]])!r} sums to {sums[bad[0]]:.6g}, not 1")
    return P

"""Record keys and cell keys.

A record key is a uniform random number in ``[0, 1)`` drawn once per record and stored with
the microdata, so every table made later from the same records perturbs a given cell in the
same way.  Keys are stored as integers ``r`` in ``[0, 2**KEY_BITS)`` meaning ``r / 2**KEY_BITS``:
sums of integers are exact in any order (in float64 up to ``2**53``), so a cell's key does not
depend on how a tabulation adds its records up, and the same records give the same cell key
in every table.  The cell key is the fractional part of the sum of the record keys of the
cell's records: ``(sum r mod 2**KEY_BITS) / 2**KEY_BITS``.

Magnitude noise uses a second cell key derived from the same sum by an odd multiplier modulo
``2**KEY_BITS`` (a bijection of the key grid), so its lookup does not follow the count's.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tabprotect.errors import InputError

__all__ = ["KEY_BITS", "KEY_SCALE", "record_keys", "add_record_keys", "cell_keys",
           "magnitude_keys", "check_record_keys"]

KEY_BITS = 26                 # key resolution: 2**26 distinct record keys
KEY_SCALE = 1 << KEY_BITS
_MIX = 0x2545F49              # odd multiplier of the magnitude key (a bijection mod 2**26)
_MAX_RECORDS = 1 << (53 - KEY_BITS)   # key sums stay exact below 2**53


def record_keys(n: int, seed: int | None) -> np.ndarray:
    """``n`` record keys (integers meaning ``r / 2**KEY_BITS``), reproducible by ``seed``.

    Examples
    --------
    >>> k = record_keys(4, seed=1)
    >>> k.dtype, bool(((k >= 0) & (k < KEY_SCALE)).all()), bool((k == record_keys(4, 1)).all())
    (dtype('int64'), True, True)
    """
    if n > _MAX_RECORDS:
        raise InputError(f"record keys: at most {_MAX_RECORDS} records (exact key sums)")
    return np.random.default_rng(seed).integers(0, KEY_SCALE, size=n, dtype=np.int64)


def add_record_keys(data: pd.DataFrame, column: str = "rkey", seed: int | None = None,
                    overwrite: bool = False) -> pd.DataFrame:
    """A copy of ``data`` with a record-key column; an existing column is kept unless
    ``overwrite`` (keys are drawn once and then travel with the records)."""
    if column in data.columns and not overwrite:
        check_record_keys(data[column], column)
        return data
    out = data.copy()
    out[column] = record_keys(len(data), seed)
    return out


def check_record_keys(col: pd.Series, name: str) -> np.ndarray:
    """The keys of a column, checked to be integers in ``[0, 2**KEY_BITS)``."""
    x = col.to_numpy()
    if x.dtype.kind not in "iu":
        raise InputError(f"record key column '{name}' must hold integers in "
                         f"[0, {KEY_SCALE}) (from add_record_keys)")
    if x.size and (int(x.min()) < 0 or int(x.max()) >= KEY_SCALE):
        raise InputError(f"record key column '{name}' has values outside [0, {KEY_SCALE})")
    if x.size > _MAX_RECORDS:
        raise InputError(f"record key column '{name}': at most {_MAX_RECORDS} records")
    return x.astype(np.int64, copy=False)


def _residue(key_sums: np.ndarray) -> np.ndarray:
    s = np.asarray(key_sums, dtype=float)
    r = np.rint(s)
    if np.any(np.abs(s - r) > 1e-6):
        raise ValueError("cell key sums must be sums of integer record keys")
    return np.mod(r.astype(np.int64), KEY_SCALE)


def cell_keys(key_sums: np.ndarray) -> np.ndarray:
    """Cell keys in ``[0, 1)`` from the cells' sums of record keys."""
    return _residue(key_sums) / KEY_SCALE


def magnitude_keys(key_sums: np.ndarray) -> np.ndarray:
    """The second cell key (for magnitude noise) from the same sums."""
    return np.mod(_residue(key_sums) * _MIX, KEY_SCALE) / KEY_SCALE

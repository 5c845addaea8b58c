"""Record checks shared by the engines: codes to hierarchy positions, numeric columns,
request flags, required columns.  Every failure is one line naming the source, the column
and the first rows (``line N`` of a file, the header being line 1; ``row <label>`` of a
DataFrame)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from tabprotect.errors import InputError
from tabprotect.model.table import Dimension
from tabprotect.tabulate.spec import MicrodataSpec

__all__ = ["row_label", "code_positions", "numeric_column", "flags", "check_columns"]


def row_label(rows: np.ndarray, index, file_rows: bool) -> str:
    if file_rows:
        return ", ".join(f"line {int(r) + 2}" for r in rows)
    return ", ".join(f"row {index[int(r)]!r}" for r in rows)


def code_positions(values: pd.Series, dim: Dimension, spec: MicrodataSpec, source: str,
                   file_rows: bool) -> np.ndarray:
    """Hierarchy position of every record's code (factorized: each distinct code once)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        uniques = pd.Index(values.cat.categories)
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    uniq = pd.Series(uniques.astype(str), dtype=object).str.strip()
    pos_u = dim.hierarchy.lookup(uniq)
    _reject_totals(values, codes, uniq, pos_u, dim, source, file_rows)
    fallback = spec.unknown.get(dim.name, -1)
    pos_u = np.where(pos_u < 0, fallback, pos_u)
    pos = np.append(pos_u, fallback)[codes]      # code -1 (missing) -> fallback
    bad = np.flatnonzero(pos < 0)
    if len(bad):
        r0 = int(bad[0])
        code = values.iloc[r0]
        what = (f"the code of '{dim.name}' is empty" if pd.isna(code) else
                f"the code in column '{dim.name}' is not in its hierarchy")
        same = bad[codes[bad] == codes[r0]][:3]
        raise InputError(f"{source} {row_label(same[:1], values.index, file_rows)}: "
                         f"{what} ({int(np.sum(codes == codes[r0]))} record(s), "
                         f"first: {row_label(same, values.index, file_rows)}; "
                         f"{len(bad)} record(s) with unknown codes in all); fix the data, add "
                         f"the code to the hierarchy or set unknown_code")
    return pos.astype(np.int64)


def _reject_totals(values: pd.Series, codes: np.ndarray, uniq: pd.Series, pos_u: np.ndarray,
                   dim: Dimension, source: str, file_rows: bool) -> None:
    """A total/subtotal code in the records is an error (microdata carry leaf codes)."""
    leaf = dim.hierarchy.is_leaf
    total_like = (pos_u >= 0) & ~leaf[np.maximum(pos_u, 0)]
    if total_like.any():    # unused categories of a categorical column do not count
        used = np.bincount(codes[codes >= 0], minlength=len(uniq)) > 0
        total_like &= used
    if total_like.any():
        j = int(np.flatnonzero(total_like)[0])
        rows = np.flatnonzero(codes == j)[:3]
        raise InputError(f"{source} {row_label(rows[:1], values.index, file_rows)}: code "
                         f"'{uniq.iloc[j]}' of '{dim.name}' is a total/subtotal of its "
                         f"hierarchy; microdata must carry lowest-level codes "
                         f"({row_label(rows, values.index, file_rows)})")


def numeric_column(frame: pd.DataFrame, col: str, what: str, source: str, file_rows: bool,
                   allow_missing: bool) -> np.ndarray:
    """The column as floats (NaN where missing); non-numeric, infinite, negative values and
    (unless allowed) missing ones are errors."""
    raw = frame[col]
    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        arr = raw.to_numpy(dtype=float, na_value=np.nan)
    else:
        num = pd.to_numeric(raw, errors="coerce")
        bad = num.isna().to_numpy() & ~raw.isna().to_numpy()
        if bad.any():
            rows = np.flatnonzero(bad)[:3]
            raise InputError(f"{source} {row_label(rows[:1], frame.index, file_rows)}: "
                             f"{what} '{col}' is not a number "
                             f"({int(bad.sum())} record(s): {row_label(rows, frame.index, file_rows)})")
        arr = num.to_numpy(dtype=float, na_value=np.nan)
    if np.isinf(arr).any():
        rows = np.flatnonzero(np.isinf(arr))[:3]
        raise InputError(f"{source} {row_label(rows[:1], frame.index, file_rows)}: {what} "
                         f"'{col}' is infinite")
    nan = np.isnan(arr)
    if nan.any() and not allow_missing:
        rows = np.flatnonzero(nan)[:3]
        raise InputError(f"{source} {row_label(rows[:1], frame.index, file_rows)}: {what} "
                         f"'{col}' is missing ({int(nan.sum())} record(s): "
                         f"{row_label(rows, frame.index, file_rows)}); fill it or set "
                         f"missing='zero' or 'drop'")
    neg = arr < 0
    if neg.any():
        rows = np.flatnonzero(neg)[:3]
        raise InputError(f"{source} {row_label(rows[:1], frame.index, file_rows)}: {what} "
                         f"'{col}' is negative ({int(neg.sum())} record(s): "
                         f"{row_label(rows, frame.index, file_rows)}); the sensitivity rules "
                         f"need non-negative contributions")
    return arr


def flags(series: pd.Series) -> np.ndarray:
    """A request column as booleans: 1/true/yes/y/t (any case) are set, the rest not."""
    if pd.api.types.is_bool_dtype(series.dtype):
        return series.fillna(False).to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(series.dtype):
        return series.fillna(0).to_numpy(dtype=float) != 0
    s = series.astype(str).str.strip().str.lower()
    return s.isin(["1", "true", "yes", "y", "t"]).to_numpy() & ~series.isna().to_numpy()


def check_columns(columns, spec: MicrodataSpec, source: str) -> None:
    missing = [c for c in spec.columns if c not in columns]
    if missing:
        raise InputError(f"{source}: column(s) {missing} not found "
                         f"(columns: {', '.join(map(str, columns))})")

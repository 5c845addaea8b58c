"""Record checks shared by the engines: codes to hierarchy positions, numeric columns,
request flags, required columns.  Every failure is one line naming the source, the column
and the first rows (``line N`` of a file, the header being line 1; ``row with index label
<label>`` of a DataFrame, a Dask partition's label being the whole frame's)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tabprotect.errors import InputError, column_names
from tabprotect.model.columns import Columns, factorize, file_places, missing_mask, \
    parse_numbers, text_values
from tabprotect.model.table import Dimension
from tabprotect.tabulate.spec import MicrodataSpec

__all__ = ["row_label", "code_positions", "numeric_column", "flags", "check_columns"]


def row_label(rows: np.ndarray, index, file_rows) -> str:
    """The rows for a message: a file's lines (``file_rows`` the file, or True: the header
    is line 1 and no line is blank), or a DataFrame's index labels."""
    if file_rows:
        return ", ".join(file_places(file_rows if isinstance(file_rows, Path) else None,
                                     rows))
    return ", ".join(f"row with index label {_label(index[int(r)])!r}" for r in rows)


def _label(v):
    """An index label as Python shows it (a numpy scalar as a plain value)."""
    return v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v


def code_positions(values: np.ndarray, dim: Dimension, spec: MicrodataSpec, source: str,
                   file_rows: bool, index=None) -> np.ndarray:
    """Hierarchy position of every record's code (factorized: each distinct code once);
    ``index`` labels the rows of a DataFrame in messages (``file_rows=False``)."""
    codes, uniq = factorize(values)
    pos_u = dim.hierarchy.lookup(uniq)
    _reject_totals(index, codes, uniq, pos_u, dim, source, file_rows)
    fallback = spec.unknown.get(dim.name, -1)
    pos_u = np.where(pos_u < 0, fallback, pos_u)
    pos = np.append(pos_u, fallback)[codes]      # code -1 (missing) -> fallback
    bad = np.flatnonzero(pos < 0)
    if len(bad):
        r0 = int(bad[0])
        what = (f"the code of '{dim.name}' is empty" if codes[r0] < 0 else
                f"the code in column '{dim.name}' is not in its hierarchy")
        same = bad[codes[bad] == codes[r0]][:3]
        raise InputError(f"{source} {row_label(same[:1], index, file_rows)}: "
                         f"{what} ({int(np.sum(codes == codes[r0]))} record(s), "
                         f"first: {row_label(same, index, file_rows)}; "
                         f"{len(bad)} record(s) with unknown codes in all); fix the data, add "
                         f"the code to the hierarchy or set unknown_code")
    return pos.astype(np.int64)


def _reject_totals(index, codes: np.ndarray, uniq: np.ndarray, pos_u: np.ndarray,
                   dim: Dimension, source: str, file_rows: bool) -> None:
    """A total/subtotal code in the records is an error (microdata carry leaf codes)."""
    leaf = dim.hierarchy.is_leaf
    total_like = (pos_u >= 0) & ~leaf[np.maximum(pos_u, 0)]
    if total_like.any():
        j = int(np.flatnonzero(total_like)[0])
        rows = np.flatnonzero(codes == j)[:3]
        raise InputError(f"{source} {row_label(rows[:1], index, file_rows)}: code "
                         f"'{uniq[j]}' of '{dim.name}' is a total/subtotal of its "
                         f"hierarchy; microdata must carry lowest-level codes "
                         f"({row_label(rows, index, file_rows)})")


def records_error(source: str, mask: np.ndarray, index, file_rows: bool, what: str,
                  hint: str = "") -> InputError:
    """One line for the records where ``mask`` holds: the first named, then how many and
    the first three (rows or file lines, never a value)."""
    rows = np.flatnonzero(mask)[:3]
    return InputError(f"{source} {row_label(rows[:1], index, file_rows)}: {what} "
                      f"({int(mask.sum())} record(s): {row_label(rows, index, file_rows)})"
                      f"{hint}")


def numeric_column(frame: Columns, col: str, what: str, source: str, file_rows: bool,
                   allow_missing: bool) -> np.ndarray:
    """The column as floats (NaN where missing); non-numeric, infinite, negative values and
    (unless allowed) missing ones are errors."""
    arr, bad = parse_numbers(frame[col])
    if bad.any():
        raise records_error(source, bad, frame.index, file_rows,
                            f"{what} '{col}' is not a number")
    if np.isinf(arr).any():
        rows = np.flatnonzero(np.isinf(arr))[:3]
        raise InputError(f"{source} {row_label(rows[:1], frame.index, file_rows)}: {what} "
                         f"'{col}' is infinite")
    nan = np.isnan(arr)
    if nan.any() and not allow_missing:
        raise records_error(source, nan, frame.index, file_rows, f"{what} '{col}' is missing",
                            "; fill it or set missing='zero' or 'drop'")
    neg = arr < 0
    if neg.any():
        raise records_error(source, neg, frame.index, file_rows, f"{what} '{col}' is negative",
                            "; the sensitivity rules need non-negative contributions")
    return arr


#: request-flag values that are set, and those that are not (text: any case, stripped;
#: a missing value is not set); any other value is an error
FLAG_SET = ("1", "true", "yes", "y", "t")
FLAG_UNSET = ("0", "false", "no", "n", "f", "")


def flags(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A request column as booleans, and the records whose value is no flag: set are
    1/true/yes/y/t (any case) and the number 1; not set 0/false/no/n/f, the number 0 and
    a missing value.

    Examples
    --------
    >>> is_set, bad = flags(np.array(["Yes", "0", None, "maybe", "1.0"], dtype=object))
    >>> is_set.tolist(), bad.tolist()
    ([True, False, False, False, True], [False, False, False, True, False])
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "biuf":
        num = np.nan_to_num(arr.astype(float), nan=0.0)
        return num == 1, (num != 0) & (num != 1)
    if len(arr) and all(isinstance(v, (bool, np.bool_)) or v is None for v in arr):
        return np.array([bool(v) for v in arr], dtype=bool), np.zeros(len(arr), dtype=bool)
    text = text_values(arr)
    lower = np.char.lower(np.where(missing_mask(text), "", text).astype(str))
    is_set = np.isin(lower, FLAG_SET)
    other = ~is_set & ~np.isin(lower, FLAG_UNSET)
    if other.any():
        num, _ = parse_numbers(lower[other].astype(object))
        is_set[np.flatnonzero(other)[num == 1]] = True
        other[np.flatnonzero(other)[(num == 0) | (num == 1)]] = False
    return is_set, other


def check_columns(columns, spec: MicrodataSpec, source: str) -> None:
    missing = [c for c in spec.columns if c not in columns]
    if missing:
        raise InputError(f"{source}: column(s) {missing} not found "
                         f"({column_names(columns)})")

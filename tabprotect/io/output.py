"""Published numbers: every table tabprotect writes follows the rules below -- CSV files by
:func:`write_csv` (from :class:`~tabprotect.model.columns.Columns`, without pandas),
Parquet files by :func:`format_frame` (the same rules on a DataFrame).

Tables are computed in floating point, so sums, LP bounds and differences carry noise in
their last bits: ``437272.80000000005`` for a total of values with one decimal,
``1.5e-12`` for a difference that is zero, ``-0.0``, and counts read back as ``2000.0``.
A published file shows the numbers as the input gave them:

* each numeric column is brought back to the precision its values carry: the fewest
  decimals ``d`` (up to 15) such that every value lies within float noise of a multiple
  of ``10**-d``; float noise is anything below ``NOISE`` times the column's largest
  absolute value (at most 11 significant digits of the largest value are kept when the
  column has no shorter precision);
* negative zero is written as 0; integral values as integers (counts: ``2000``, never
  ``2000.0``); missing values as empty fields, infinite bounds as ``inf`` / ``-inf``.

The precision is found per column from the values themselves: a column of counts is
written as integers, a column of magnitudes with the input's one decimal keeps one decimal,
and a column of derived figures (shares, requirements) keeps its digits up to the noise
level.  Columns in the table's units (``UNIT_COLUMNS``: interval bounds, published and
range values) take the precision of the frame's ``value`` column, the input's precision:
interval bounds are sums and differences of cell values, and the LP that computes them
leaves noise of the solver's tolerance (about 1e-9 of the largest value), far above
``NOISE``.  The audit's verdicts are computed on the unrounded bounds; the file shows
them at the precision of the data.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tabprotect.model.columns import Columns, as_columns, missing_mask

if TYPE_CHECKING:
    import pandas as pd

#: relative size (to the column's largest absolute value) below which digits are float
#: noise: sums of up to ~10^5 doubles stay well inside it
NOISE = 1e-11
#: the most decimals a column is given
MAX_DECIMALS = 15
#: columns in the table's units, written at the precision of the frame's ``value`` column
UNIT_COLUMNS = ("value", "published", "lower", "upper", "range_lower", "range_upper")


def column_decimals(values: np.ndarray) -> int:
    """The fewest decimals that represent every finite value up to float noise.

    Examples
    --------
    >>> column_decimals(np.array([437272.80000000005, 12.5, 3.0]))
    1
    >>> column_decimals(np.array([2000.0, 1.5e-12, -0.0]))
    0
    >>> column_decimals(np.array([1 / 3, 2.0]))
    11
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return 0
    scale = float(np.abs(x).max())
    if scale == 0.0:
        return 0
    tol = NOISE * scale
    # beyond 11 significant digits of the largest value every digit is noise
    cap = int(min(MAX_DECIMALS, max(0, -np.floor(np.log10(tol)))))
    for d in range(cap + 1):
        if np.all(np.abs(x - np.round(x, d)) <= tol):
            return d
    return cap


def clean_column(values: np.ndarray, decimals: int | None = None) -> np.ndarray:
    """The values rounded to ``decimals`` (default: their column's precision), without
    negative zeros.

    Examples
    --------
    >>> clean_column(np.array([437272.80000000005, 1.5e-12, -0.0, np.nan])).tolist()[:3]
    [437272.8, 0.0, 0.0]
    """
    x = np.asarray(values, dtype=float)
    d = column_decimals(x) if decimals is None else int(decimals)
    with np.errstate(invalid="ignore"):
        out = np.where(np.isfinite(x), np.round(x, d), x)
    return out + 0.0  # -0.0 + 0.0 is 0.0


def _text(values: np.ndarray) -> np.ndarray:
    """CSV text of cleaned values: integers without a decimal point, others by their
    shortest round-trip form, missing as empty, infinities as inf / -inf."""
    out = np.empty(len(values), dtype=object)
    finite = np.isfinite(values)
    integral = finite & (np.abs(values) < 2.0 ** 53) & (values == np.round(values))
    out[integral] = values[integral].astype(np.int64).astype(str)
    rest = finite & ~integral
    out[rest] = [repr(float(v)) for v in values[rest]]
    out[np.isnan(values)] = ""
    out[np.isposinf(values)] = "inf"
    out[np.isneginf(values)] = "-inf"
    return out


def format_number(x: float, decimals: int | None = None) -> str:
    """One published number as text (terminal lines, HTML): rounded to ``decimals`` (the
    column's or table's precision, e.g. :func:`column_decimals` of the values) or to its
    own precision up to float noise (``NOISE`` of its size), integers without ``.0``, no
    negative zero, no exponent for ordinary magnitudes.

    Examples
    --------
    >>> format_number(-0.0), format_number(2000.0), format_number(437272.80000000005, 1)
    ('0', '2000', '437272.8')
    >>> format_number(1489807.29999, 1), format_number(float("inf")), format_number(1 / 3)
    ('1489807.3', 'inf', '0.333333333333')
    """
    x = float(x)
    if not np.isfinite(x):
        return "" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    d = column_decimals(np.array([x])) if decimals is None else int(decimals)
    return str(_text(clean_column(np.array([x]), d))[0])


def format_frame(frame: "pd.DataFrame", *, text: bool = True) -> "pd.DataFrame":
    """A copy of ``frame`` with every numeric column as it is published.

    ``text=True`` (CSV) gives the columns as strings (integers without ``.0``);
    ``text=False`` (Parquet) keeps numeric types: integral float columns become nullable
    integers, the others are rounded floats.  Columns of ``UNIT_COLUMNS`` take the
    precision of the ``value`` column when the frame has one.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"code": ["a", "b"], "value": [2000.0, 437272.80000000005],
    ...                   "lower": [-0.0, np.inf], "upper": [2000.0000001, 1489807.29999],
    ...                   "freq": [3, 4]})
    >>> format_frame(f).to_dict("list")["value"], format_frame(f).to_dict("list")["upper"]
    (['2000', '437272.8'], ['2000', '1489807.3'])
    >>> format_frame(f).to_dict("list")["lower"], format_frame(f).to_dict("list")["freq"]
    (['0', 'inf'], [3, 4])
    """
    import pandas as pd
    out = frame.copy()
    unit_decimals = None
    if "value" in out.columns and pd.api.types.is_numeric_dtype(out["value"].dtype):
        unit_decimals = column_decimals(out["value"].to_numpy(dtype=float))
    for col in out.columns:
        s = out[col]
        if not pd.api.types.is_float_dtype(s.dtype):
            continue
        clean = clean_column(s.to_numpy(dtype=float),
                             unit_decimals if col in UNIT_COLUMNS else None)
        if text:
            out[col] = _text(clean)
        elif np.all(np.isnan(clean) | (np.isfinite(clean) & (clean == np.round(clean)))) \
                and np.all(np.abs(clean[np.isfinite(clean)]) < 2.0 ** 53):
            missing = np.isnan(clean)
            out[col] = pd.arrays.IntegerArray(np.where(missing, 0, clean).astype(np.int64),
                                              missing)
        else:
            out[col] = clean
    return out


def write_frame(frame: "pd.DataFrame | Columns", path: Path) -> Path:
    """Write a frame (DataFrame or :class:`Columns`) as CSV, or Parquet by suffix, with its
    numbers as published."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in (".parquet", ".pq"):
        if isinstance(frame, Columns):
            frame = frame.to_pandas()
        try:
            format_frame(frame, text=False).to_parquet(path, index=False)
        except ImportError:
            from tabprotect.errors import InputError
            raise InputError(f"{path.name}: writing Parquet needs pyarrow: pip install "
                             f"'tabprotect[files]'") from None
    else:
        write_csv(as_columns(frame), path)
    return path


def write_csv(columns: Columns, path: Path) -> Path:
    """Columns as a CSV file, byte for byte what pandas writes of :func:`format_frame`'s
    frame (``index=False``): float columns as published text, other numbers and booleans
    by ``str``, missing fields empty, fields quoted where needed."""
    unit_decimals = None
    if "value" in columns and columns["value"].dtype.kind in "fiub":
        unit_decimals = column_decimals(columns["value"].astype(float))
    texts = []
    for name, arr in columns.items():
        if arr.dtype.kind == "f":
            texts.append(_text(clean_column(arr, unit_decimals if name in UNIT_COLUMNS
                                            else None)))
        elif arr.dtype.kind == "O":
            texts.append(_object_text(arr))
        else:
            texts.append(arr.astype(str))
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns.columns)
        writer.writerows(zip(*texts))
    return path


def _object_text(values: np.ndarray) -> list[str]:
    """A text column's fields: missing values empty, the others by ``str`` (a column of
    text without a missing value as it is)."""
    miss = missing_mask(values)
    if not miss.any():
        fields = values.tolist()
        if set(map(type, fields)) <= {str}:
            return fields
    return ["" if m else str(v) for v, m in zip(values, miss)]

"""Named columns: the in-memory form of every CSV file a job reads and writes.

A :class:`Columns` is an ordered mapping of column names to numpy arrays of one length.
A CSV file is read into text columns (object arrays of ``str``, ``None`` where a field is
missing) by :func:`read_columns`; a pandas DataFrame given to the Python API becomes the
same form with :meth:`Columns.from_frame` (numeric columns stay numeric).  Consumers ask
for what they need -- :func:`text_values` (codes) or :func:`parse_numbers` (values) -- so
a file and a frame of the same data give the same table, and a protect job on CSV files
never imports pandas (pandas stays at the edges: DataFrame input and output, Parquet).

Missing fields are those pandas' reader treats as missing by default (:data:`NA_TEXT`):
an empty field, ``NA``, ``NaN``, ``NULL``, ``N/A`` and their variants.
"""
from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import re
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from tabprotect.errors import InputError, column_names

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Columns", "as_columns", "read_columns", "text_values", "parse_numbers", "row_place",
           "file_places",
           "missing_mask", "factorize",
           "NA_TEXT", "read_table_columns"]

#: fields read as missing (pandas' default ``na_values``, so files read as before)
NA_TEXT = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                     "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                     "nan", "null"})
#: compressed CSV files read by suffix (the standard library's readers)
_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: a CSV file of more bytes is split by pandas' C reader (the same columns; its import,
#: about 0.3 s, costs less than splitting such a file in Python, about 55 ns a byte)
PANDAS_READ_BYTES = 4 * 2**20
#: text values factorized by pandas' hash table from this many on (``np.unique`` sorts
#: Python strings: about 0.35 s a million, against 0.03 s)
PANDAS_FACTORIZE_MIN = 200_000


class Columns:
    """Columns of equal length by name; ``index`` labels the rows of a DataFrame (None:
    file rows, named by the line an editor shows); ``file``: the file they were read from
    (:func:`read_columns`); ``records``: the file's record (0-based) of each row of a
    subset of its rows (:meth:`rows`).

    Examples
    --------
    >>> c = Columns({"g": np.array(["a", "b"], dtype=object), "x": np.array([1.0, 2.0])})
    >>> c.columns, len(c), c["x"].tolist()
    (['g', 'x'], 2, [1.0, 2.0])
    """

    __slots__ = ("_data", "index", "file", "records")

    def __init__(self, data: Mapping[str, Any], index: np.ndarray | None = None,
                 file: Path | None = None, records: np.ndarray | None = None):
        self._data: dict[str, np.ndarray] = {}
        self.index = index
        self.file = file
        self.records = records
        for name, values in data.items():
            self[name] = values

    @classmethod
    def from_frame(cls, frame: "pd.DataFrame") -> "Columns":
        """A DataFrame's columns: numeric ones as numpy numbers, the others as objects
        with ``None`` where missing; the frame's index labels the rows."""
        import pandas as pd
        data = {}
        for name in frame.columns:
            s = frame[name]
            if isinstance(s.dtype, np.dtype) and s.dtype.kind in "fiub":
                data[str(name)] = s.to_numpy()
            elif pd.api.types.is_float_dtype(s.dtype):     # nullable floats: NaN missing
                data[str(name)] = s.to_numpy(dtype=float, na_value=np.nan)
            else:
                arr = s.to_numpy(dtype=object).copy()
                arr[s.isna().to_numpy()] = None
                data[str(name)] = arr
        return cls(data, index=np.asarray(frame.index, dtype=object))

    def to_pandas(self) -> "pd.DataFrame":
        """The columns as a DataFrame (missing text as NaN, as pandas' reader gives)."""
        import pandas as pd
        frame = pd.DataFrame({k: v for k, v in self._data.items()})
        if self.index is not None:
            frame.index = pd.Index(list(self.index))
        return frame

    @property
    def columns(self) -> list[str]:
        return list(self._data)

    def __len__(self) -> int:
        return len(next(iter(self._data.values()))) if self._data else 0

    def __contains__(self, name) -> bool:
        return name in self._data

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._data[name]
        except KeyError:
            raise InputError(f"column '{name}' not found "
                             f"({column_names(self._data)})") from None

    def __setitem__(self, name: str, values) -> None:
        arr = np.asarray(values)
        if arr.ndim == 0:
            arr = np.full(len(self), arr[()])
        if self._data and len(arr) != len(self):
            raise ValueError(f"column '{name}': {len(arr)} values for {len(self)} rows")
        self._data[str(name)] = arr

    def items(self) -> Iterable[tuple[str, np.ndarray]]:
        return self._data.items()

    def select(self, names: Iterable[str]) -> "Columns":
        """These columns only, in this order."""
        return Columns({n: self[n] for n in names}, self.index, self.file, self.records)

    def drop(self, names: Iterable[str]) -> "Columns":
        gone = set(names)
        return Columns({k: v for k, v in self._data.items() if k not in gone}, self.index,
                       self.file, self.records)

    def rows(self, which: np.ndarray) -> "Columns":
        """The rows of a boolean mask or of positions; the index (row positions when
        there was none) follows them, and so do a file's lines."""
        index = np.arange(len(self)) if self.index is None else self.index
        records = self.records
        if records is None and self.index is None:
            records = np.arange(len(self))
        return Columns({k: v[which] for k, v in self._data.items()}, index[which], self.file,
                       None if records is None else records[which])

    def copy(self) -> "Columns":
        return Columns({k: v.copy() for k, v in self._data.items()}, self.index, self.file,
                       self.records)

    def __repr__(self) -> str:
        return f"Columns({len(self)} rows: {', '.join(self._data)})"


def row_place(source: str, rows, r: int) -> str:
    """Where row ``r`` (0-based) of an input is, for a message: ``SOURCE line N`` for a
    file's rows, the line an editor shows (``rows`` None: the header is line 1 and no line
    is blank; :class:`Columns` read from a file, or a subset of them: counted in the file),
    ``SOURCE row r (0-based position; index label X)`` for a DataFrame's (``rows`` the
    frame or its Columns).

    >>> row_place("cells.csv", None, 3)
    'cells.csv line 5'
    >>> import pandas as pd
    >>> row_place("cells", pd.DataFrame({"x": [1, 2]}, index=["a", "b"]), 1)
    "cells row 1 (0-based position; index label 'b')"
    """
    if rows is None:
        return f"{source} line {r + 2}"
    records = getattr(rows, "records", None)
    if isinstance(rows, Columns) and (rows.index is None or records is not None):
        pos = int(records[r]) if records is not None else r
        return f"{source} {file_places(rows.file, [pos])[0]}"
    index = rows.index
    label = index[r]
    label = label.item() if hasattr(label, "item") and np.ndim(label) == 0 else label
    return f"{source} row {r} (0-based position; index label {label!r})"


def file_places(path: Path | None, records) -> list[str]:
    """``line N`` for each data record (0-based, the header and blank lines not counted,
    as the readers count them) of the CSV file ``path``: the line an editor shows where
    the record begins, the file read again with the csv module (an error's path only);
    ``record N`` (from 1) of a Parquet file; ``line r + 2`` without a file."""
    records = [int(r) for r in records]
    if path is None:
        return [f"line {r + 2}" for r in records]
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        return [f"record {r + 1}" for r in records]
    wanted, found = set(records), {}
    try:
        with _open_text(path) as fh:
            reader = csv.reader(fh)
            start, k = 1, -1                # record -1: the header
            for row in reader:
                if row:
                    if k in wanted:
                        found[k] = start
                    k += 1
                    if k > max(wanted):
                        break
                start = reader.line_num + 1
    except InputError:
        found = {}
    return [f"line {found.get(r, r + 2)}" for r in records]


# ---------------------------------------------------------------- values
def missing_mask(values: np.ndarray) -> np.ndarray:
    """True where a value is missing (``None`` in text, NaN in numbers)."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "O":
        try:        # elementwise in C: None, and NaN (the one value unequal to itself)
            return np.equal(arr, None) | np.not_equal(arr, arr)
        except TypeError:           # a value whose comparison is undefined (pandas' NA)
            return np.fromiter(map(_is_missing, arr), bool, len(arr))
    return np.zeros(len(arr), dtype=bool)


def _is_missing(value) -> bool:
    """None, NaN, or a value whose comparison is undefined (pandas' NA)."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except TypeError:
        return True


def text_values(values: np.ndarray) -> np.ndarray:
    """The values as stripped text (an object array), ``None`` where missing.

    Examples
    --------
    >>> text_values(np.array([" a", None, 3], dtype=object)).tolist()
    ['a', None, '3']
    """
    arr = np.asarray(values)
    miss = missing_mask(arr)
    out = np.empty(len(arr), dtype=object)
    keep = ~miss
    if keep.any():
        present = arr[keep].tolist()
        # text stripped one by one (numpy's text arrays would also drop trailing NULs)
        if set(map(type, present)) == {str} and "\x00" not in "".join(present):
            out[keep] = np.fromiter(map(str.strip, present), dtype=object,
                                    count=len(present))
        else:
            out[keep] = np.char.strip(arr[keep].astype(str)).astype(object)
    return out


def parse_numbers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values as floats (NaN where missing) and the mask of present values that are
    not numbers (pandas' ``to_numeric`` rules: no digit separators).

    Examples
    --------
    >>> x, bad = parse_numbers(np.array(["1.5", None, "x", " 2 "], dtype=object))
    >>> x.tolist()[:2], bad.tolist()
    ([1.5, nan], [False, False, True, False])
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "fiub":
        return arr.astype(float), np.zeros(len(arr), dtype=bool)
    miss = missing_mask(arr)
    out = np.full(len(arr), np.nan)
    bad = np.zeros(len(arr), dtype=bool)
    present = np.flatnonzero(~miss)
    vals = arr[present]
    try:
        out[present] = vals.astype(float)
    except (ValueError, TypeError):
        for i, v in zip(present, vals):
            try:
                out[i] = float(v)
            except (ValueError, TypeError):
                bad[i] = True
    if len(vals) and vals.dtype.kind == "O" and _has_underscore(vals):
        under = np.fromiter((isinstance(v, str) and "_" in v for v in vals), bool,
                            len(vals))
        bad[present[under]] = True
        out[present[under]] = np.nan
    return out, bad


def _has_underscore(values: np.ndarray) -> bool:
    """Whether a text value holds ``_`` (a digit separator ``float`` takes, pandas not)."""
    try:
        return "_" in "".join(values)
    except TypeError:           # not all text
        return any(isinstance(v, str) and "_" in v for v in values)


def factorize(values: np.ndarray, pandas_min: int = PANDAS_FACTORIZE_MIN
              ) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the values (-1 where missing) and the distinct values as stripped
    text, in order of first appearance. From ``pandas_min`` values of text on, pandas'
    hash table numbers them, with the same result.

    Examples
    --------
    >>> codes, uniques = factorize(np.array(["b", "a", None, "b"], dtype=object))
    >>> codes.tolist(), uniques.tolist()
    ([0, 1, -1, 0], ['b', 'a'])
    """
    arr = np.asarray(values)
    miss = missing_mask(arr)
    codes = np.full(len(arr), -1, dtype=np.int64)
    present = np.flatnonzero(~miss)
    if len(present) == 0:
        return codes, np.empty(0, dtype=object)
    vals = arr[present]
    if vals.dtype.kind == "O" and len(vals) >= pandas_min:
        import pandas as pd
        found, uniq = pd.factorize(vals)
        uniq = np.asarray(uniq, dtype=object)
        if all(type(v) is str for v in uniq):      # else numpy's path: text of each value
            codes[present] = found
            return codes, text_values(uniq)
    if vals.dtype.kind == "O":
        found = _factorize_text(vals)
        if found is not None:
            codes[present] = found[0]
            return codes, found[1]
        vals = vals.astype(str)
    uniq, first, inverse = np.unique(vals, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes[present] = rank[inverse.ravel()]
    return codes, text_values(uniq[order])


def _factorize_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`factorize` of present values numbered by a dict in order of first
    appearance (no sort of Python strings); None unless every value is text (numpy's
    path gives other values the text of each)."""
    first: dict = {}
    number = first.setdefault
    codes = np.fromiter((number(v, len(first)) for v in values), np.int64, len(values))
    if not all(type(v) is str for v in first):
        return None
    return codes, text_values(np.fromiter(first, dtype=object, count=len(first)))


# ---------------------------------------------------------------- reading
def read_columns(path: str | Path, usecols: Iterable[str] | None = None,
                 pandas_above: int = PANDAS_READ_BYTES) -> Columns:
    """A CSV file (optionally .gz, .bz2, .xz) as text columns; header names stripped.

    Bad input is one line naming the file (and the line): not found, empty, not UTF-8,
    a duplicated column name, a row with more fields than the header.  A row with fewer
    fields has its last columns missing; blank lines are skipped.  A file of more than
    ``pandas_above`` bytes is split by pandas' reader, to the same columns and errors.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if path.stat().st_size > pandas_above:
        columns = _read_by_pandas(path, usecols)
        if columns is not None:
            return columns
    try:
        with _open_text(path) as fh:       # (it also words the csv module's errors)
            text = fh.read()
            header, fields = _split_plain(text) or _split_csv(text)
    except _RowWidth as exc:
        row, fields, width = exc.args
        raise InputError(f"{path.name} {file_places(path, [row])[0]}: {fields} fields, the "
                         f"header has {width}") from None
    names = _names(path, header)
    if len(fields) == 0:
        raise InputError(f"{path.name}: no data rows")
    wanted = set(usecols) if usecols is not None else None
    return Columns({name: _with_missing(fields[:, j]) for j, name in enumerate(names)
                    if wanted is None or name in wanted}, file=path)


def _with_missing(fields: np.ndarray) -> np.ndarray:
    """A column's fields with ``None`` where a field reads as missing (:data:`NA_TEXT`);
    a column without such a field is copied as it is (one pass over its distinct
    hashes instead of a look-up per field)."""
    if NA_TEXT.isdisjoint(fields):
        return fields.copy()
    missing = np.fromiter(map(NA_TEXT.__contains__, fields), bool, len(fields))
    return np.where(missing, None, fields)


@contextmanager
def _open_text(path: Path):
    """The file as UTF-8 text (a BOM dropped); a failure to read it is one line naming
    the file."""
    opener = _OPENERS.get(path.suffix.lower(), open)
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
            yield fh
    except UnicodeDecodeError:
        raise InputError(f"{path.name}: not UTF-8 text") from None
    except (csv.Error, OSError, EOFError) as exc:
        raise InputError(f"{path.name}: cannot read ({exc})") from None


def _header(path: Path) -> list[str]:
    """The header's names, stripped and checked (one line naming the file)."""
    with _open_text(path) as fh:
        header = next(csv.reader(fh), None)
    return _names(path, header)


def _names(path: Path, header: list[str] | None) -> list[str]:
    """The header's names, stripped; none, or a name twice, is one line naming the file."""
    if header is None:
        raise InputError(f"{path.name}: empty file")
    names = [h.strip() for h in header]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{path.name}: column '{name}' appears twice in the header")
        seen.add(name)
    return names


def _read_by_pandas(path: Path, usecols: Iterable[str] | None) -> Columns | None:
    """:func:`read_columns` of a large file by pandas' C reader; None for a file whose
    first data row is wider than its header (pandas would drop fields: the csv module
    reads it and names the row)."""
    import warnings

    import pandas as pd
    names = _header(path)
    wanted = None if usecols is None else [n for n in names if n in set(usecols)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(path, dtype=object, keep_default_na=True,
                                encoding="utf-8-sig", header=0, names=names,
                                index_col=False, usecols=wanted)
    except pd.errors.ParserWarning:
        return None
    except UnicodeDecodeError:
        raise InputError(f"{path.name}: not UTF-8 text") from None
    except pd.errors.ParserError as exc:
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if found:
            width, line, fields = found.groups()
            raise InputError(f"{path.name} line {line}: {fields} fields, the header has "
                             f"{width}") from None
        raise InputError(f"{path.name}: cannot read ({exc})") from None
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"{path.name}: cannot read ({exc})") from None
    if len(frame) == 0:
        raise InputError(f"{path.name}: no data rows")
    data = {}
    for name in frame.columns:
        values = frame[name].to_numpy(dtype=object, copy=True)
        values[frame[name].isna().to_numpy()] = None
        data[name] = values
    return Columns(data, file=path)


class _RowWidth(Exception):
    """A row with more fields than the header: (row number, its fields, the header's)."""


def _split_plain(text: str) -> tuple[list[str] | None, np.ndarray] | None:
    """Header and (rows x columns) fields of a file without quotes (line ends ``\\n`` or
    ``\\r\\n``), split by ``str.split`` (what the csv module gives such a file, faster);
    None for any other file or when the rows are not all as wide as the header."""
    if '"' in text:
        return None
    ends = "\n"
    if "\r" in text:
        crlf = text.count("\r\n")
        if text.count("\r") != crlf:
            return None
        if crlf == text.count("\n"):    # every line ends CR LF: split there
            ends = "\r\n"
        else:
            text = text.replace("\r\n", "\n")
    lines = text.split(ends)
    if "" in lines:
        lines = [line for line in lines if line]
    if not lines:
        return None, np.empty((0, 0), dtype=object)
    commas = lines[0].count(",")
    if set(map(str.count, lines, repeat(","))) != {commas}:
        return None
    flat = ",".join(lines[1:]).split(",") if len(lines) > 1 else []
    fields = np.fromiter(flat, dtype=object, count=len(flat))
    return lines[0].split(","), fields.reshape(len(lines) - 1, commas + 1)


def _split_csv(text: str) -> tuple[list[str] | None, np.ndarray]:
    """Header and fields by the csv module: quoted fields, short rows (padded with empty
    fields), carriage returns."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        return None, np.empty((0, 0), dtype=object)
    width = len(header)
    rows = [r for r in reader if r]
    for r, row in enumerate(rows):
        if len(row) != width:
            if len(row) > width:
                raise _RowWidth(r, len(row), width)
            rows[r] = row + [""] * (width - len(row))
    fields = np.empty((len(rows), width), dtype=object)
    for j in range(width):
        fields[:, j] = [row[j] for row in rows]
    return header, fields


def read_table_columns(path: str | Path, usecols: Iterable[str] | None = None) -> Columns:
    """A CSV file by :func:`read_columns` (the columns of ``usecols`` alone, when given);
    a Parquet file (or a CSV compressed otherwise than .gz, .bz2, .xz) by pandas, as the
    same columns (all of them)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".pq", ".zip", ".zst"):
        return read_columns(path, usecols)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    import pandas as pd
    try:
        if suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=True)
    except ImportError:
        raise InputError(f"{path.name}: reading Parquet needs pyarrow: pip install "
                         f"'tabprotect[files]'") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"{path.name}: cannot read ({exc})") from None
    if len(frame) == 0:
        raise InputError(f"{path.name}: no data rows")
    frame.columns = [str(c).strip() for c in frame.columns]
    columns = Columns.from_frame(frame)
    columns.index, columns.file = None, path
    return columns


def as_columns(frame) -> Columns:
    """``frame`` as :class:`Columns` (a DataFrame converted, Columns as they are)."""
    return frame if isinstance(frame, Columns) else Columns.from_frame(frame)

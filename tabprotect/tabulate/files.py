"""Reading microdata and side tables into :class:`~tabprotect.model.columns.Columns` (the
in-memory engine's input)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from tabprotect.model.columns import Columns, read_table_columns
from tabprotect.tabulate.spec import MicrodataSpec

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_table_file", "read_microdata", "is_parquet"]


def is_parquet(path) -> bool:
    return Path(path).suffix.lower() in (".parquet", ".pq")


def read_table_file(path: Path, str_columns: Sequence[str] = ()) -> "pd.DataFrame":
    """A CSV/Parquet side table as a DataFrame, ``str_columns`` as text (for the callers
    that work on DataFrames; a job's tables are read by :func:`read_table_columns`)."""
    from tabprotect.model import read_frame
    return read_frame(path, dtype_str=list(str_columns))


def read_microdata(path: Path, spec: MicrodataSpec) -> Columns:
    """The microdata file's columns that the tabulation reads (codes and values as read;
    the checks convert them); all of them when one is absent, for the check's message
    that lists them."""
    columns = read_table_columns(path, usecols=spec.columns)
    if any(name not in columns for name in spec.columns):
        columns = read_table_columns(path)
    return columns

"""Reading microdata and side tables into :class:`~tabprotect.model.columns.Columns` (the
in-memory engine's input)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from tabprotect.model.columns import Columns, read_table_columns
from tabprotect.tabulate.spec import MicrodataSpec

__all__ = ["read_table_file", "read_microdata", "is_parquet"]


def is_parquet(path) -> bool:
    return Path(path).suffix.lower() in (".parquet", ".pq")


def read_table_file(path: Path, str_columns: Sequence[str] = ()) -> Columns:
    """A CSV/Parquet side table (e.g. a correspondence table); codes are read as text
    (``str_columns`` names them for the reader's callers; every CSV column is text)."""
    return read_table_columns(path)


def read_microdata(path: Path, spec: MicrodataSpec) -> Columns:
    """The microdata file's columns (codes and values as read; the checks convert them)."""
    return read_table_columns(path)

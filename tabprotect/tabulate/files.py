"""Reading microdata and side tables into pandas (the pandas engine's input)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from tabprotect.errors import InputError
from tabprotect.tabulate.spec import MicrodataSpec

__all__ = ["read_table_file", "read_microdata", "is_parquet"]


def is_parquet(path) -> bool:
    return Path(path).suffix.lower() in (".parquet", ".pq")


def read_table_file(path: Path, str_columns: Sequence[str]) -> pd.DataFrame:
    """A CSV/Parquet side table (e.g. a correspondence table), ``str_columns`` as text."""
    from tabprotect.model import read_frame
    return read_frame(path, dtype_str=list(str_columns))


def read_microdata(path: Path, spec: MicrodataSpec) -> pd.DataFrame:
    """The columns ``spec`` needs, codes and holdings as text."""
    cols = spec.columns
    try:
        if is_parquet(path):
            frame = pd.read_parquet(path)
        else:
            str_cols = [d.name for d in spec.dims] + ([spec.holding] if spec.holding else [])
            frame = pd.read_csv(path, dtype={c: str for c in str_cols},
                                usecols=lambda c: c.strip() in cols)
    except ImportError:
        raise InputError(f"{path.name}: reading Parquet needs pyarrow: pip install "
                         f"'tabprotect[files]'") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"{path.name}: cannot read ({exc})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame

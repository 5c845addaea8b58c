"""The DuckDB engine's checks: counts of bad records come from the ``GROUP BY`` pass; only
when one is found is the source read again (in chunks) to name the first rows."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import file_places
from tabprotect.model.table import Dimension
from tabprotect.tabulate.checks import code_positions, flags
from tabprotect.tabulate.files import is_parquet
from tabprotect.tabulate.spec import MicrodataSpec
from tabprotect.tabulate.frames import is_pandas_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["group_positions", "check_groups"]


def group_positions(col: pd.Series, dim: Dimension, spec: MicrodataSpec, src,
                    label: str) -> np.ndarray:
    """Positions of the grouped codes; on an unknown code, find its first rows in the file."""
    try:
        return code_positions(col.to_numpy(dtype=object), dim, spec, label,
                              file_rows=False, index=np.arange(len(col)))
    except InputError:
        import pandas as pd
        values = col.astype(object)
        h = dim.hierarchy
        pos = h.lookup(values.fillna(""))
        bad = (pos < 0) if dim.name not in spec.unknown else np.zeros(len(pos), bool)
        bad |= (pos >= 0) & ~h.is_leaf[np.maximum(pos, 0)]
        code = values[bad].iloc[0] if bad.any() else None
        rows = _first_rows(src, dim.name, lambda s: (s.astype(str).str.strip() == str(code))
                           if code is not None and not pd.isna(code) else s.isna())
        where = _rows_text(src, rows)
        if code is None or pd.isna(code):
            raise InputError(f"{label} {where}: code of '{dim.name}' is empty; fix the data "
                             f"or set unknown_code") from None
        if code in h and not h.is_leaf[h.index(code)]:
            raise InputError(f"{label} {where}: code '{code}' of '{dim.name}' is a "
                             f"total/subtotal of its hierarchy; microdata must carry "
                             f"lowest-level codes") from None
        raise InputError(f"{label} {where}: the code in column '{dim.name}' is not in its "
                         f"hierarchy; fix the data, add the code to the hierarchy or set "
                         f"unknown_code") from None


def _rows_text(src, rows: list[int]) -> str:
    if is_pandas_frame(src):
        return ", ".join(f"row with index label {src.index[r]!r}" for r in rows)
    return ", ".join(file_places(Path(src), rows))


def _first_rows(src, column: str, predicate, limit: int = 3) -> list[int]:
    """Record numbers (0-based) of the first records of ``column`` matching ``predicate``;
    reads the file in chunks (only on the error path)."""
    if is_pandas_frame(src):
        hits = np.flatnonzero(predicate(src[column]).to_numpy())
        return [int(i) for i in hits[:limit]]
    path = Path(src)
    if is_parquet(path):
        import pyarrow.parquet as pq
        chunks = (batch.to_pandas()[column] for batch in
                  pq.ParquetFile(path).iter_batches(columns=[column], batch_size=1 << 20))
    else:
        import pandas as pd
        chunks = (chunk[column] for chunk in
                  pd.read_csv(path, usecols=[column], dtype=str, chunksize=1 << 20))
    found: list[int] = []
    offset = 0
    for s in chunks:
        hits = np.flatnonzero(predicate(s).to_numpy())
        found += [offset + int(i) for i in hits[:limit - len(found)]]
        offset += len(s)
        if len(found) >= limit:
            break
    return found


def _number(s: "pd.Series") -> "pd.Series":
    import pandas as pd
    return pd.to_numeric(s, errors="coerce")


def check_groups(res: pd.DataFrame, spec: MicrodataSpec, ncol: dict, src, label: str) -> None:
    """Raise on the first kind of bad record the grouped counts show."""
    import pandas as pd
    if len(res) == 0:
        raise InputError(f"{label}: no records")
    for c, v in ncol.items():
        if res[f"bad_{v}"].sum():
            rows = _first_rows(src, c, lambda s: _number(s).isna() & s.notna())
            raise InputError(f"{label} {_rows_text(src, rows[:1])}: value of '{c}' is not a "
                             f"number ({int(res[f'bad_{v}'].sum())} record(s): "
                             f"{_rows_text(src, rows)})")
        if res[f"neg_{v}"].sum():
            rows = _first_rows(src, c, lambda s: _number(s) < 0)
            raise InputError(f"{label} {_rows_text(src, rows[:1])}: value of '{c}' is "
                             f"negative ({int(res[f'neg_{v}'].sum())} record(s)); the "
                             f"sensitivity rules need non-negative contributions")
    if spec.missing == "error" and res["n_missing"].sum():
        for c in ncol:
            rows = _first_rows(src, c, lambda s: s.isna())
            if rows:
                raise InputError(f"{label} {_rows_text(src, rows[:1])}: value of '{c}' is "
                                 f"missing ({int(res['n_missing'].sum())} record(s) with a "
                                 f"missing value: {_rows_text(src, rows)}); fill it or set "
                                 f"missing='zero' or 'drop'")
    if "req_bad" in res and res["req_bad"].sum():
        rows = _first_rows(src, spec.request, lambda s: pd.Series(
            flags(s.to_numpy(dtype=object))[1], index=s.index))
        raise InputError(f"{label} {_rows_text(src, rows[:1])}: request '{spec.request}' is "
                         f"not a flag ({int(res['req_bad'].sum())} record(s): "
                         f"{_rows_text(src, rows)}); give 1/true/yes or 0/false/no (or "
                         f"leave it empty)")
    if spec.weight:
        if res["wnull"].sum():
            rows = _first_rows(src, spec.weight, lambda s: _number(s).isna())
            raise InputError(f"{label} {_rows_text(src, rows[:1])}: weight '{spec.weight}' is "
                             f"missing or not a number")
        if res["wbad"].sum():
            rows = _first_rows(src, spec.weight, lambda s: _number(s) <= 0)
            raise InputError(f"{label} {_rows_text(src, rows[:1])}: weight '{spec.weight}' "
                             f"must be positive")

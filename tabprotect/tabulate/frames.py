"""Whether an object is a pandas or a Dask DataFrame, without importing pandas or Dask (a
program that has not imported them holds no such frame)."""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["is_pandas_frame", "is_dask_frame"]


def is_pandas_frame(obj: Any) -> bool:
    """True for a pandas DataFrame; pandas is not imported to answer."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def is_dask_frame(obj: Any) -> bool:
    """True for a Dask DataFrame; Dask is not imported to answer."""
    return (type(obj).__module__.split(".")[0] == "dask"
            and hasattr(obj, "to_delayed") and hasattr(obj, "npartitions"))

"""Whether an object is a pandas DataFrame, without importing pandas (a program that has
not imported pandas holds no DataFrame)."""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["is_pandas_frame"]


def is_pandas_frame(obj: Any) -> bool:
    """True for a pandas DataFrame; pandas is not imported to answer."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)

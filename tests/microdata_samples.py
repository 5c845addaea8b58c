"""Small synthetic person files for the microdata tests: key variables age, sex and
region, a weight ``w`` and a household id ``hid`` (three persons per household)."""
from __future__ import annotations

import numpy as np
import pandas as pd


def persons(seed: int, n: int, max_age: int) -> pd.DataFrame:
    """``n`` persons drawn with ``seed``: ages 0..max_age-1, sex 1 or 2, four regions."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(0, max_age, n), "sex": rng.integers(1, 3, n),
                         "region": rng.choice(["N", "S", "E", "W"], n),
                         "w": rng.uniform(20, 80, n), "hid": np.arange(n) // 3})

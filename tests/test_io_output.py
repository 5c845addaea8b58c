"""Published numbers (tabprotect.io.output): counts as integers, magnitudes at the input's
precision, no float noise, no negative zero -- in every file a command writes."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabprotect.cli import main
from tabprotect.io.output import column_decimals, format_frame, write_frame

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
#: float noise as it appears in a file: 16-17 significant digits, exponents, -0
NOISY = re.compile(r"\d\.\d*0000000\d|\d\.\d*9999999\d|e-\d\d|(^|,)-0(\.0*)?(,|$)")


def test_the_noise_of_sums_and_lp_bounds_is_gone(tmp_path):
    frame = pd.DataFrame({
        "code": ["Total", "A", "B", "C"],
        "value": [3196601.0, 437272.80000000005, 0.1 + 0.2, 1.5e-12],
        "freq": [2000.0, 448.0, 3.0, 0.0],
        "lower": [-0.0, 241718.49999999997, 0.0, np.nan],
        "upper": [3196601.0000001, np.inf, 0.30000000004, 0.0],
        "share": [1.0, 1 / 3, 0.25, 0.0],
    })
    path = write_frame(frame, tmp_path / "out.csv")
    lines = path.read_text().splitlines()
    assert lines[1] == "Total,3196601,2000,0,3196601,1"
    assert lines[2] == "A,437272.8,448,241718.5,inf,0.33333333333"
    assert lines[3] == "B,0.3,3,0,0.3,0.25"
    assert lines[4] == "C,0,0,,0,0"
    back = pd.read_csv(path)
    np.testing.assert_allclose(back["value"], frame["value"], rtol=1e-12, atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 4), st.lists(st.integers(-10**9, 10**9), min_size=1, max_size=30),
       st.integers(0, 2**32 - 1))
def test_sums_of_values_with_d_decimals_are_written_with_d_decimals(d, units, seed):
    # the cells are values with d decimals; their totals, computed in floating point, carry
    # noise; the file shows each at d decimals (exactly the decimal the input had)
    rng = np.random.default_rng(seed)
    cells = np.array(units, dtype=float) / 10 ** d
    parts = rng.integers(0, len(cells), size=len(cells))
    totals = np.array([cells[parts == k].sum() for k in range(len(cells))])
    frame = pd.DataFrame({"value": np.concatenate([cells, totals])})
    out = format_frame(frame)["value"].tolist()
    exact = np.concatenate([np.array(units), [sum(u for u, p in zip(units, parts) if p == k)
                                              for k in range(len(cells))]])
    for text, n in zip(out, exact):
        assert text == _decimal_text(int(n), d)
    assert column_decimals(frame["value"].to_numpy()) <= d


def _decimal_text(n: int, d: int) -> str:
    """The shortest decimal text of n / 10**d."""
    if d == 0:
        return str(n)
    sign = "-" if n < 0 else ""
    whole, frac = divmod(abs(n), 10 ** d)
    frac_text = f"{frac:0{d}d}".rstrip("0")
    return f"{sign}{whole}" + (f".{frac_text}" if frac_text else "")


def test_parquet_keeps_types_counts_are_integers(tmp_path):
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"value": [2000.0, 3.0, np.nan], "x": [0.1 + 0.2, -0.0, 1.0]})
    back = pd.read_parquet(write_frame(frame, tmp_path / "out.parquet"))
    assert str(back["value"].dtype) == "Int64" and back["value"].isna().tolist() == [
        False, False, True]
    assert back["x"].tolist() == [0.3, 0.0, 1.0]
    assert not np.signbit(back["x"].to_numpy()).any()


def test_command_outputs_have_no_float_noise(tmp_path):
    # a magnitude table (one decimal, tabulated from microdata: sums carry noise) and a
    # count table, through `primary`; every file the command writes is checked
    for name in ("business_survey.csv", "census_persons.csv", "region.hrc", "nace.hrc",
                 "business.toml", "census_counts.toml"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    assert main(["primary", str(tmp_path / "business.toml"), "-o",
                 str(tmp_path / "business"), "--quiet"]) == 0
    assert main(["primary", str(tmp_path / "census_counts.toml"), "-o",
                 str(tmp_path / "census"), "--quiet"]) == 0
    written = sorted((tmp_path / "business").rglob("*.csv")) + sorted(
        (tmp_path / "census").rglob("*.csv"))
    assert len(written) >= 2
    for path in written:
        for k, line in enumerate(path.read_text().splitlines()):
            assert not NOISY.search(line), f"{path.name} line {k + 1}: {line}"
    cells = [p for p in written if "value" in p.read_text().splitlines()[0].split(",")]
    business = pd.read_csv(next(p for p in cells if p.is_relative_to(tmp_path / "business")))
    assert (business["value"] * 10 - np.round(business["value"] * 10)).abs().max() < 1e-6
    census = next(p for p in cells if p.is_relative_to(tmp_path / "census"))
    lines = census.read_text().splitlines()
    value_col = lines[0].split(",").index("value")
    assert all(re.fullmatch(r"\d+", ln.split(",")[value_col]) for ln in lines[1:])

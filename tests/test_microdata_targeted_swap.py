"""Targeted record swapping: invariants checked on the data before and after."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabprotect.microdata import TargetedSwapSettings, geography_levels, swap_targeted
from tabprotect.model import Hierarchy

DEMO = Path(__file__).resolve().parents[1] / "tabprotect" / "data" / "demo"
LEVELS = ("geo1", "geo2", "geo3")


def _synthetic(n_hh=1500, seed=0):
    """Households in 2 big regions, 6 districts, 30 municipalities."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 5, n_hh)
    mun = rng.integers(0, 30, n_hh)
    hh = np.repeat(np.arange(n_hh), size)
    df = pd.DataFrame({"hh": hh, "geo3": np.repeat([f"m{m:02d}" for m in mun], size),
                       "geo2": np.repeat([f"d{m // 5}" for m in mun], size),
                       "geo1": np.repeat([f"r{m // 15}" for m in mun], size),
                       "tenure": np.repeat(rng.choice(["own", "rent"], n_hh), size),
                       "sex": rng.choice(["m", "f"], hh.size),
                       "age": rng.choice(["0-17", "18-39", "40-64", "65+"], hh.size,
                                         p=[.2, .35, .35, .1])})
    df["urban"] = np.where(df.geo3.str[1:].astype(int) % 3 == 0, "urban", "rural")
    return df


def _settings(**kw):
    base = dict(levels=LEVELS, risk_variables=("sex", "age"), k=3, swap_rate=0.05,
                similar=("household_size",), carry=("urban",), household="hh", seed=7)
    base.update(kw)
    return TargetedSwapSettings(**base)


def _hh_frame(df):
    return df.groupby("hh", sort=True)[list(LEVELS) + ["urban"]].first()


def test_pairs_share_the_parent_area_and_exchange_geography_and_carried():
    df = _synthetic()
    res = swap_targeted(df, _settings())
    before, after = _hh_frame(df), _hh_frame(res.data)
    size = df.groupby("hh").size()
    changed = (before[list(LEVELS)] != after[list(LEVELS)]).any(axis=1)
    assert changed.sum() == res.households_moved
    # every moved household took the geography (and the carried urban flag, a property of
    # the place) of another household of the same size
    key_before = before.apply(tuple, axis=1)
    for h in np.flatnonzero(changed.to_numpy()):
        donor = np.flatnonzero((key_before == tuple(after.iloc[h])).to_numpy()
                               & (size.to_numpy() == size.iloc[h]))
        assert donor.size >= 1
    # the carried variable travels with the place; persons, sex, age, tenure never change
    ok = np.where(res.data.geo3.str[1:].astype(int) % 3 == 0, "urban", "rural")
    assert (res.data.urban == ok).all()
    cols = ["hh", "sex", "age", "tenure"]
    assert (res.data[cols] == df[cols]).all().all()


def test_margins_at_the_higher_level_are_kept():
    df = _synthetic()
    res = swap_targeted(df, _settings())
    assert res.summary()["pairs_per_level"]["geo1"] == 0   # regions are large: no risk there
    assert res.households_moved > 0
    for by in (["geo1", "sex", "age", "tenure"], ["geo1", "sex", "age"]):
        a = df.groupby(by).size().sort_index()
        b = res.data.groupby(by).size().sort_index()
        pd.testing.assert_series_equal(a, b)
    # matching on household size keeps the number of persons of every municipality
    pd.testing.assert_series_equal(df.geo3.value_counts().sort_index(),
                                   res.data.geo3.value_counts().sort_index())


def test_swap_rate_and_seed():
    df = _synthetic(seed=3)
    s = _settings(swap_rate=0.3, risk_variables=("sex",), k=2)   # few risky households
    res = swap_targeted(df, s)
    H = df.hh.nunique()
    moved = int(((_hh_frame(df)[list(LEVELS)] != _hh_frame(res.data)[list(LEVELS)])
                 .any(axis=1)).sum())
    assert 0.3 * H <= moved <= 0.3 * H + 2
    again = swap_targeted(df, s)
    pd.testing.assert_frame_equal(again.data, res.data)
    other = swap_targeted(df, _settings(swap_rate=0.3, risk_variables=("sex",), k=2, seed=8))
    assert not other.data.equals(res.data)


def test_risk_lower_after_on_the_demo_data():
    d = pd.read_csv(DEMO / "census_persons.csv")
    reg = Hierarchy.from_hrc(DEMO / "region.hrc", total="Total")
    d = geography_levels(d, "region", reg, list(LEVELS))
    s = TargetedSwapSettings(levels=LEVELS, risk_variables=("sex", "age_group"), k=3,
                             swap_rate=0.05, similar=("household_size",), carry=("region",),
                             household="household_id", seed=1)
    res = swap_targeted(d, s)
    true_place = (res.data[list(LEVELS)] == d[list(LEVELS)]).all(axis=1).to_numpy()
    for lev, level in enumerate(LEVELS):
        cols = list(LEVELS[: lev + 1]) + ["sex", "age_group"]
        rare_b = d.groupby(cols)["sex"].transform("size").to_numpy() < 3
        rare_a = res.data.groupby(cols)["sex"].transform("size").to_numpy() < 3
        # an intruder matching a rare released record finds the right person only if it
        # was not moved
        before, after = int(rare_b.sum()), int((rare_a & true_place).sum())
        row = res.risk.set_index("level").loc[level]
        assert (row.at_risk_before, row.at_risk_after) == (before, after)
        assert after < before or before == 0
    assert res.risk.at_risk_before.sum() > 0
    # the region code travels with the geography levels
    assert (res.data.region.str[:2] == res.data.geo1).all()


def test_bad_input():
    df = _synthetic()
    with pytest.raises(ValueError, match="unknown risk column 'nope'"):
        swap_targeted(df, _settings(risk_variables=("nope",)))
    with pytest.raises(ValueError, match="'sex' differs within a household"):
        swap_targeted(df, _settings(carry=("sex",)))
    with pytest.raises(ValueError, match="'tenure' differs within a household"):
        swap_targeted(df.assign(tenure=np.where(np.arange(len(df)) % 2, "a", "b")),
                      _settings(carry=("tenure",)))
    with pytest.raises(ValueError, match="swap_rate"):
        _settings(swap_rate=2.0)

"""One table model for microdata and tables: risk per cell through tabulate, and perturbed
microdata flowing into tables, rules, suppression and rounding."""
from pathlib import Path

import numpy as np
import pandas as pd

from tabprotect import apply_rules, protect, round_table, tabulate
from tabprotect.microdata import (TargetedSwapSettings, geography_levels, individual_risk,
                                  key_frequencies, key_table, pram, risk_table, swap_targeted)
from tabprotect.model import Hierarchy

DEMO = Path(__file__).resolve().parents[1] / "tabprotect" / "data" / "demo"


def _demo():
    d = pd.read_csv(DEMO / "census_persons.csv", dtype={"sex": str, "occupation": str})
    dims = {"region": Hierarchy.from_hrc(DEMO / "region.hrc", total="Total"),
            "sex": Hierarchy.flat(["1", "2"], total="T"),
            "age_group": Hierarchy.flat(sorted(d.age_group.unique()), total="T")}
    return d, dims


def test_risk_per_cell_agrees_with_key_frequencies():
    d, dims = _demo()
    t = risk_table(d, dims, weight="weight", k=3)
    kf = key_frequencies(d, list(dims), weights="weight")
    ir = individual_risk(kf)
    cells = np.array([t.cell(r, s, a) for r, s, a in
                      d[list(dims)].itertuples(index=False)])
    assert (t.freq[cells] == kf.fk).all()
    assert np.allclose(t.value[cells], kf.Fk)
    assert np.allclose(t.extra["individual_risk"][cells], ir.risk)
    inner = t.is_inner & (t.freq > 0)
    assert t.extra["sample_unique"][inner].sum() == len(kf.combinations.query("f == 1"))
    assert (t.extra["below_k"] == ((t.freq > 0) & (t.freq < 3))).all()


def test_swapped_microdata_lower_risk_on_the_table_cells():
    d, dims = _demo()
    reg = dims["region"]
    d = geography_levels(d, "region", reg, ["g1", "g2", "g3"])
    s = TargetedSwapSettings(levels=("g1", "g2", "g3"), risk_variables=("sex", "age_group"),
                             k=3, swap_rate=0.05, similar=("household_size",),
                             carry=("region",), household="household_id", seed=4)
    res = swap_targeted(d, s)
    before = risk_table(d, dims)
    after = risk_table(res.data, dims)
    # the same cells; the released table's small cells hold records moved there or moved
    # out: a record found in a small cell of the release is where it was only if unmoved
    moved = (res.data.g3 != d.g3).to_numpy()
    small_after = after.extra["below_k"] > 0
    cells = np.array([after.cell(r, x, a) for r, x, a in
                      res.data[list(dims)].itertuples(index=False)])
    unmoved_small = int((small_after[cells] & ~moved).sum())
    small_before = int((before.extra["below_k"] > 0)[
        np.array([before.cell(r, x, a) for r, x, a in d[list(dims)].itertuples(index=False)])
    ].sum())
    assert unmoved_small < small_before


def test_pram_microdata_flow_into_rules_protect_and_round():
    d, dims = _demo()
    d = d[d.region == "R122"]                     # one small area: small counts
    released = pram(d, "age_group", d=0.9, seed=3).data
    t = tabulate(released, {"sex": dims["sex"], "age_group": dims["age_group"]})
    rules = apply_rules(t, {"frequency": {"n": 3}})
    assert (rules.table.status == "U").any()
    res = protect(rules.table, method="modular", cost="unity", singleton=False)
    assert res.passed
    rounded = round_table(t, 3, "controlled")
    assert rounded.audit.passed
    assert (np.asarray(rounded.rounded) % 3 == 0).all()


def test_key_frequencies_as_a_table():
    d, dims = _demo()
    keys = ["sex", "age_group", "marital_status"]
    kf = key_frequencies(d, keys, weights="weight")
    t = key_table(kf, d, weights="weight")
    inner = t.is_inner & (t.freq > 0)
    labels = t.labels[inner]
    got = pd.DataFrame({"f": t.freq[inner], "F": t.value[inner]},
                       index=pd.MultiIndex.from_frame(labels.astype(str)))
    want = kf.combinations.astype({c: str for c in keys}).set_index(keys)
    got, want = got.sort_index(), want.sort_index()
    assert list(got.index) == list(want.index)
    assert (got.f.to_numpy() == want.f.to_numpy()).all()
    assert np.allclose(got.F.to_numpy(), want.F.to_numpy())
    assert t.extra["sample_unique"][inner].sum() == kf.n_sample_uniques

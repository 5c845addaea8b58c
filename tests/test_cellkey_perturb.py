"""Cell key method: consistency across tables, lookup checked by brute force, magnitude
noise bounds, the intruder's posterior, non-additivity and its least-cost repair."""
import itertools
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

from tabprotect.cellkey import (KEY_SCALE, CellKeySettings, MagnitudeNoise, add_record_keys,
                                count_ptable, non_additivity, perturb, posterior,
                                restore_additivity, tabulate_keys)
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy

GEO = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "a1"), ("A", "a2"), ("B", "b1"),
                            ("B", "b2"), ("B", "b3")])
SEX = Hierarchy.flat(["m", "f"], total="T")
AGE = Hierarchy.flat(["y", "o"], total="T")


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"geo": rng.choice(["a1", "a2", "b1", "b2", "b3"], n,
                                         p=[.5, .3, .1, .07, .03]),
                       "sex": rng.choice(["m", "f"], n), "age": rng.choice(["y", "o"], n),
                       "inc": rng.lognormal(3, 1, n).round(1)})
    return add_record_keys(df, seed=seed + 1)


SET = CellKeySettings(D=3, V=2.0, js=2)


def test_same_cell_same_value_in_every_table_and_rerun():
    df = _data()
    r1 = perturb(df, {"geo": GEO, "sex": SEX}, settings=SET)
    r2 = perturb(df, {"geo": GEO, "sex": SEX, "age": AGE}, settings=SET)
    r3 = perturb(df.sample(frac=1.0, random_state=5), {"sex": SEX, "geo": GEO}, settings=SET)
    n_checked = 0
    for g, s in itertools.product(GEO.codes, SEX.codes):
        a = r1.published[r1.table.cell(g, s)]
        assert a == r2.published[r2.table.cell(g, s, "T")]
        assert a == r3.published[r3.table.cell(s, g)]      # other order of records and dims
        n_checked += 1
    assert n_checked == len(GEO.codes) * len(SEX.codes)
    again = perturb(df, {"geo": GEO, "sex": SEX}, settings=SET)
    assert (again.published == r1.published).all()
    other = perturb(add_record_keys(df, seed=99, overwrite=True), {"geo": GEO, "sex": SEX},
                    settings=SET)
    assert (other.published != r1.published).any()


def test_noise_is_the_ptable_entry_of_the_cell_key_brute_force():
    df = _data()
    res = perturb(df, {"geo": GEO, "sex": SEX}, settings=SET)
    pt = count_ptable(3, 2.0, 2)
    leaves = {"A": ["a1", "a2"], "B": ["b1", "b2", "b3"], "T": ["a1", "a2", "b1", "b2", "b3"]}
    for g, s in itertools.product(GEO.codes, SEX.codes):
        sel = df.geo.isin(leaves.get(g, [g]))
        if s != "T":
            sel &= df.sex == s
        n = int(sel.sum())
        key = F(int(df.loc[sel, "rkey"].sum()) % KEY_SCALE, KEY_SCALE)
        f = pt.fractions(n)
        cum, noise = F(0), None
        for v in sorted(f):
            cum += f[v]
            if key < cum:
                noise = v
                break
        c = res.table.cell(g, s)
        assert res.table.freq[c] == n
        assert res.published[c] == n + noise
        pub = res.published[c]
        assert pub == 0 if n == 0 else (pub == 0 or pub > 2)  # no 1s and 2s


def test_magnitude_noise_scaled_by_the_largest_contribution():
    rng = np.random.default_rng(3)
    n = 20000
    df = add_record_keys(pd.DataFrame({"g": rng.integers(0, 2000, n).astype(str),
                                       "x": rng.lognormal(3, 1, n)}), seed=4)
    h = Hierarchy.flat(sorted(df.g.unique()), total="T")
    mag = MagnitudeNoise(m=0.2, D=5, V=3.0)
    res = perturb(df, {"g": h}, "x", settings=CellKeySettings(magnitude=mag))
    top1 = df.groupby("g").x.max().reindex(h.codes).to_numpy().copy()
    top1[0] = df.x.max()
    rel = np.abs(res.noise) / (mag.m * top1)
    assert (rel >= 1 / mag.D - 1e-12).all() and (rel <= 1 + 1e-12).all()   # stated bounds
    eps = res.noise / (mag.m * top1) * mag.D
    assert np.allclose(eps, np.rint(eps))
    assert abs(np.mean(eps ** 2) - mag.V) < 0.25           # stated variance (2001 cells)
    assert abs(np.mean(eps)) < 0.15
    assert (res.published > 0).all()
    stated = res.summary()["noise"]               # what the summary tells users
    err = np.abs(res.noise) / top1
    assert stated["top1_relative_error_min"] - 1e-9 <= err.min()
    assert err.max() <= stated["top1_relative_error_max"] + 1e-9
    assert abs(np.sqrt(np.mean((res.noise / top1) ** 2)) / stated["sd_per_top1"] - 1) < 0.05


def test_posterior_exact_small_case():
    # D = 1, V = 1/2: P(i -> j) = 1/4, 1/2, 1/4; uniform prior over 0..3
    post = posterior(count_ptable(1, 0.5), n_original=4)
    # published 1 comes from 1 (prob 1/2) or 2 (1/4); 0 never moves
    assert post.loc[1, 1] == pytest.approx(2 / 3) and post.loc[1, 2] == pytest.approx(1 / 3)
    assert post.loc[1, 0] == 0
    # published 0 comes from 0 (1) or 1 (1/4)
    assert post.loc[0, 0] == pytest.approx(0.8) and post.loc[0, 1] == pytest.approx(0.2)
    assert np.allclose(post.sum(axis=1), 1.0)


def test_non_additivity_counted_on_the_labels():
    df = _data()
    res = perturb(df, {"geo": GEO, "sex": SEX}, settings=SET)
    t, pub = res.table, res.published
    off, worst, total = 0, 0.0, 0
    kids = {"T": ["A", "B"], "A": ["a1", "a2"], "B": ["b1", "b2", "b3"]}
    for g in GEO.codes:                        # geo relations, for each sex code
        for s in SEX.codes:
            if g in kids:
                d = abs(pub[t.cell(g, s)] - sum(pub[t.cell(k, s)] for k in kids[g]))
                total += 1
                off += d > 0
                worst = max(worst, d)
        d = abs(pub[t.cell(g, "T")] - pub[t.cell(g, "m")] - pub[t.cell(g, "f")])
        total += 1
        off += d > 0
        worst = max(worst, d)
    got = non_additivity(t, pub)
    assert (got["relations"], got["off"], got["largest_deviation"]) == (total, off, worst)


def test_restore_additivity_is_optimal_on_a_tiny_table():
    h = Hierarchy.flat(["a", "b"], total="T")
    rng = np.random.default_rng(1)
    pt = count_ptable(2, 1.0, js=1)
    for trial in range(8):
        df = add_record_keys(pd.DataFrame({"g": rng.choice(["a", "b"], rng.integers(1, 9))}),
                             seed=trial)
        res = perturb(df, {"g": h}, ptable=pt)
        rest = restore_additivity(res.table, res.published, pt)
        orig = res.table.freq.astype(int)
        # brute force: every count each cell's ptable row can publish
        options = [sorted({o + v for v in pt.fractions(o)}) for o in orig]
        best = min((sum(abs(y - p) for y, p in zip(ys, res.published)), ys)
                   for ys in itertools.product(*options) if ys[0] == ys[1] + ys[2])
        assert rest.status == "optimal"
        assert rest.total_change == best[0]
        y = rest.values
        assert y[0] == y[1] + y[2]
        assert all(int(y[c]) in options[c] for c in range(3))


def test_bad_input_is_one_clear_error():
    df = _data().drop(columns="rkey")
    with pytest.raises(InputError, match="no record key column 'rkey'"):
        perturb(df, {"geo": GEO}, settings=SET)
    bad = _data().assign(rkey=0.5)
    with pytest.raises(InputError, match="must hold integers"):
        perturb(bad, {"geo": GEO}, settings=SET)
    t = tabulate_keys(_data(), {"geo": GEO})
    with pytest.raises(InputError, match="not a Table"):
        perturb(t, {"geo": GEO})

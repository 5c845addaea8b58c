"""The coalition attacker: hand-checked cases and the audit against the independent
oracle (tests/lp_oracle.py) on random small tables, in every audit mode."""
from __future__ import annotations

import numpy as np
import pytest

from lp_oracle import protected as oracle_protected
from tabprotect.audit import AuditSettings, audit
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table
from tabprotect.requirements import protection_requirements


def one_way(values, freq, status, upl, top=None, kind="magnitude") -> Table:
    """``T = a + b + c`` with T published."""
    h = Hierarchy.flat(["a", "b", "c"], total="T")
    v = [sum(values), *values]
    f = [sum(freq), *freq]
    t = Table.from_arrays({"x": h}, v, freq=f, top=top, kind=kind)
    st = np.array(["S", *status])
    lvl = np.array([0.0, *upl])
    return t.replace(status=st, upl=lvl, lpl=lvl)


#: largest contributions of T, a (three contributors), b and c (one each)
TOP_ABC = np.array([[30, 30, 20], [20, 15, 5], [30, 0, 0], [30, 0, 0]], dtype=float)


def test_two_single_contributors_together_disclose_what_neither_does_alone():
    # a primary beside two single-contributor cells: each contributor alone knows its
    # own cell and leaves a + (the other) free; together they know a exactly
    t = one_way([40, 30, 30], [3, 1, 1], ["U", "M", "M"], [4, 0, 0], top=TOP_ABC)
    assert audit(t, singleton=True).passed
    for mode in ("intervals", "verdict", "screen"):
        res = audit(t, coalition=2, mode=mode)
        assert not res.passed and res.attacked[1] and res.coalition == 2
        assert res.params["coalition"] == 2


def test_count_coalition_knows_its_own_records_only():
    # counts whose cells may be empty when suppressed (bound 0): a coalition of two
    # records, one in b and one in c, knows b >= 1 and c >= 1, so a <= 3, short of the
    # 1 + 3 its level asks for; no record knows that it is alone in its cell unless the
    # cell holds no other (freq == its members)
    t = one_way([1, 2, 2], [1, 2, 2], ["U", "M", "M"], [3, 0, 0], kind="frequency"
                ).replace(empty="suppress")
    assert audit(t, singleton=True).passed
    res = audit(t, coalition=2)
    assert not res.passed
    assert oracle_protected(t, coalition=2, integer=True).tolist() == res.protected.tolist()


def test_count_coalition_beyond_the_published_bound_one():
    # empty cells published: everyone knows b >= 1 and c >= 1 (a <= 5, as the level 4
    # asks); one record in each of b and c knows no more, two records of b know b >= 2
    # (a <= 4)
    t = one_way([1, 3, 3], [1, 3, 3], ["U", "M", "M"], [4, 0, 0], kind="frequency")
    assert t.lb[1:].tolist() == [1.0, 1.0, 1.0]
    assert audit(t, singleton=True).passed
    res = audit(t, coalition=2)
    assert not res.passed and res.attacked[1]
    assert oracle_protected(t, coalition=2, integer=True).tolist() == res.protected.tolist()


def test_magnitude_coalition_holds_the_largest_contributions():
    # b = 30 from contributions 20 + 10, c = 30 from 15 + 10 + 5. Two members in b
    # know b = 30 (a <= 70); one in each of b and c know b >= 20, c >= 15 (a <= 65):
    # the level asks for a up to 70, so the second coalition breaks it
    top = np.array([[0, 0, 0], [20, 15, 5], [20, 10, 0], [15, 10, 5]], dtype=float)
    t = one_way([40, 30, 30], [3, 2, 3], ["U", "M", "M"], [30, 0, 0], top=top)
    assert audit(t).passed
    res = audit(t, coalition=2)
    assert not res.passed and res.attacked[1]
    # with the level at 25 (a up to 65) every coalition of two leaves a wide enough
    looser = t.replace(upl=np.array([0, 25, 0, 0.0]))
    assert audit(looser, coalition=2).passed
    assert oracle_protected(looser, coalition=2).all()


def _random_table(rng, kind, largest=4):
    shape = (int(rng.integers(3, largest + 1)), int(rng.integers(3, largest + 1)))
    rows = Hierarchy.flat([str(i) for i in range(shape[0])], total="T")
    cols = Hierarchy.flat([str(j) for j in range(shape[1])], total="T")
    freq_in = rng.integers(1, 5, shape).astype(float)
    if kind == "frequency":
        inner = freq_in.copy()
    else:
        inner = freq_in * rng.integers(5, 40, shape)
    full = np.zeros((shape[0] + 1, shape[1] + 1))
    fq = np.zeros_like(full)
    for arr, src in ((full, inner), (fq, freq_in)):
        arr[1:, 1:] = src
        arr[0, 1:], arr[1:, 0], arr[0, 0] = src.sum(0), src.sum(1), src.sum()
    v = full.ravel()
    f = fq.ravel()
    # contributions of each cell: a random split of its value into freq parts
    top = np.zeros((len(v), 3))
    for i in range(len(v)):
        k = int(f[i])
        if k and kind == "magnitude":
            parts = np.sort(rng.dirichlet(np.ones(k)) * v[i])[::-1]
            top[i, :min(3, k)] = parts[:3]
    t = Table.from_arrays({"r": rows, "c": cols}, v, freq=f,
                          top=None if kind == "frequency" else top, kind=kind)
    inner_cells = np.flatnonzero(t.is_inner)
    st = t.status.copy()
    chosen = rng.permutation(inner_cells)
    n_sup = int(rng.integers(len(inner_cells) // 2, len(inner_cells) + 1))
    st[chosen[:n_sup]] = "M"
    st[chosen[:int(rng.integers(1, 3))]] = "U"
    if rng.random() < 0.4:
        st[rng.choice(np.flatnonzero(~t.is_inner))] = "M"
    prim = st == "U"
    lvl = np.where(prim, np.round(rng.uniform(0.02, 0.3) * v), 0.0)
    return t.replace(status=st, upl=lvl, lpl=lvl)


def _agrees_with_the_oracle(seed, size, largest):
    rng = np.random.default_rng(seed)
    kind = "frequency" if seed % 3 == 0 else "magnitude"
    t = _random_table(rng, kind, largest)
    integer = kind == "frequency"
    expected = oracle_protected(t, coalition=size, integer=integer)
    full = audit(t, coalition=size)
    np.testing.assert_array_equal(full.protected, expected)
    verdict = audit(t, coalition=size, mode="verdict")
    np.testing.assert_array_equal(verdict.protected, expected)
    # the screen certifies only what is protected
    screen = audit(t, coalition=size, mode="screen")
    assert not (screen.protected & ~expected).any()
    # a coalition knows at least what each of its members knows alone
    single = audit(t, singleton=True)
    assert not (full.protected & ~single.protected).any()
    return full.passed


def test_coalitions_of_two_agree_with_the_oracle():
    # 3x3 tables: some patterns pass against every coalition, some do not
    passed = [_agrees_with_the_oracle(seed, 2, 3) for seed in range(8)]
    assert any(passed) and not all(passed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(24))
def test_larger_coalitions_agree_with_the_oracle(seed):
    _agrees_with_the_oracle(seed, 2 + seed % 2, 4)


def test_coalition_is_checked_and_bounded():
    t = one_way([40, 30, 30], [3, 1, 1], ["U", "M", "M"], [4, 0, 0], top=TOP_ABC)
    for bad in (1, True, 2.5, "2"):
        with pytest.raises(InputError, match="coalition"):
            audit(t, coalition=bad)
    with pytest.raises(InputError, match="max_coalitions"):
        audit(t, coalition=2, settings=AuditSettings(max_coalitions=1))
    # a magnitude table without enough largest contributions cannot be audited
    no_top = one_way([40, 30, 30], [3, 3, 3], ["U", "M", "M"], [4, 0, 0])
    with pytest.raises(InputError, match="largest contributions of cell"):
        audit(no_top, coalition=2)
    with pytest.raises(InputError, match="coalition"):
        audit(t, coalition=2, mode="verdict", previous=audit(t, mode="verdict"))


def test_requirements_name_the_coalition():
    t = one_way([40, 30, 30], [3, 1, 1], ["U", "M", "M"], [4, 0, 0])
    req = protection_requirements(t, "coalition", coalition_size=3)
    assert req.attacker == "coalition" and req.coalition_size == 3 and not req.singleton
    same = protection_requirements(t, "intruder")
    np.testing.assert_array_equal(req.required_upper, same.required_upper)
    with pytest.raises(InputError, match="coalition_size"):
        protection_requirements(t, "coalition")
    with pytest.raises(InputError, match="coalition_size"):
        protection_requirements(t, "intruder", coalition_size=2)


def test_a_job_chooses_the_coalition_attacker(tmp_path):
    from tabprotect.io.job import load_job
    from tabprotect.pipeline import run
    import pandas as pd
    pd.DataFrame({"x": ["T", "a", "b", "c"], "value": [100, 40, 30, 30],
                  "freq": [5, 3, 1, 1], "top1": TOP_ABC[:, 0], "top2": TOP_ABC[:, 1],
                  "top3": TOP_ABC[:, 2], "status": ["S", "U", "M", "M"],
                  "upl": [0, 4, 0, 0], "lpl": [0, 4, 0, 0]}).to_csv(tmp_path / "c.csv",
                                                                    index=False)
    spec = {"input": {"cells": "c.csv", "dimensions": ["x"], "top": "top", "status": "status",
                      "upl": "upl", "lpl": "lpl"},
            "hierarchies": {"x": {"flat": True, "total": "T"}},
            "audit": {"singleton": True}}
    assert run(load_job(spec=spec, base=tmp_path)).passed
    spec["audit"]["coalition"] = 2
    res = run(load_job(spec=spec, base=tmp_path))
    assert not res.passed and res.audit.coalition == 2 and "coalition" in res.attacker
    spec["audit"]["coalition"] = 1
    with pytest.raises(InputError, match="coalition"):
        load_job(spec=spec, base=tmp_path)

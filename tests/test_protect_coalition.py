"""protect(coalition=n): patterns judged safe against coalitions of contributors, checked
by the independent oracle (tests/lp_oracle.py), which enumerates the groups itself."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lp_oracle import protected as oracle_protected
from test_audit_coalition import _random_table
from tabprotect.cli import main
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary import protect


def random_table(seed: int, shape=(3, 3)) -> Table:
    """A small magnitude table with totals, one to two inner primaries (levels 20 %) and
    the three largest contributions of every cell."""
    rng = np.random.default_rng(seed)
    nr, nc = shape
    rows = Hierarchy.flat([str(i) for i in range(nr)], total="T")
    cols = Hierarchy.flat([str(j) for j in range(nc)], total="T")
    f_in = rng.integers(1, 4, shape).astype(float)
    v_in = f_in * rng.integers(5, 40, shape)
    full, fq = np.zeros((nr + 1, nc + 1)), np.zeros((nr + 1, nc + 1))
    for arr, src in ((full, v_in), (fq, f_in)):
        arr[1:, 1:] = src
        arr[0, 1:], arr[1:, 0], arr[0, 0] = src.sum(0), src.sum(1), src.sum()
    v, f = full.ravel(), fq.ravel()
    top = np.zeros((len(v), 3))
    for i in range(len(v)):
        parts = np.sort(rng.dirichlet(np.ones(int(f[i]))) * v[i])[::-1]
        top[i, :min(3, len(parts))] = parts[:3]
    t = Table.from_arrays({"r": rows, "c": cols}, v, freq=f, top=top)
    st = t.status.copy()
    st[rng.choice(np.flatnonzero(t.is_inner), int(rng.integers(1, 3)), replace=False)] = "U"
    lvl = np.where(st == "U", np.round(0.2 * v), 0.0)
    return t.replace(status=st, upl=lvl, lpl=lvl)


def one_way(status, top=True) -> Table:
    """``T = a + b + c``: a (three contributors, level 4) beside two single-contributor
    cells, whose contributors together know b + c and so a."""
    t = Table.from_arrays({"x": Hierarchy.flat(["a", "b", "c"], total="T")},
                          [100, 40, 30, 30], freq=[5, 3, 1, 1],
                          top=np.array([[30, 30, 20], [20, 15, 5], [30, 0, 0], [30, 0, 0.]])
                          if top else None)
    lvl = np.array([0, 4, 0, 0.0])
    return t.replace(status=np.array(status), upl=lvl, lpl=lvl)


@pytest.mark.parametrize("method", ["optimal", "gauss", "hypercube"])
@pytest.mark.parametrize("seed", [2, 4])
def test_coalition_patterns_pass_the_oracle(method, seed):
    t = random_table(seed)
    plain = protect(t, method, cost="unity")
    # the singleton-safe pattern is not safe against pairs of contributors
    assert plain.passed and oracle_protected(plain.confidential_table, singleton=True).all()
    assert not oracle_protected(plain.confidential_table, coalition=2).all()
    res = protect(t, method, cost="unity", coalition=2)
    assert res.passed and res.audit.coalition == 2 and res.params["coalition"] == 2
    assert oracle_protected(res.confidential_table, coalition=2).all()
    assert oracle_protected(res.confidential_table, singleton=True).all()
    assert len(res.repaired) > 0 and plain.params["coalition"] is None


def test_a_count_table_is_repaired_in_integers():
    # the audit's integer intervals: the oracle checks them with integer programs
    t = _random_table(np.random.default_rng(6), "frequency", 4)
    t = t.replace(status=np.where(t.status == "M", "S", t.status))
    assert not oracle_protected(protect(t, "greedy", cost="unity").confidential_table,
                                coalition=2, integer=True).all()
    res = protect(t, "greedy", cost="unity", coalition=2)
    assert res.passed and oracle_protected(res.confidential_table, coalition=2,
                                           integer=True).all()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_larger_tables_and_coalitions_pass_the_oracle(seed):
    size = 2 + seed % 2
    kind = "frequency" if seed % 3 == 0 else "magnitude"
    t = random_table(seed, (3, 4)) if kind == "magnitude" else _random_table(
        np.random.default_rng(seed), kind, 4)
    t = t.replace(status=np.where(t.status == "M", "S", t.status))
    for method in ("optimal", "modular", "greedy"):
        res = protect(t, method, cost="unity", coalition=size)
        assert res.passed == oracle_protected(res.confidential_table, coalition=size,
                                              integer=kind == "frequency").all()
        assert res.passed, (method, res.notes)


def test_verdict_audit_mode_repairs_the_same_way():
    t = random_table(4)
    res = protect(t, "gauss", cost="unity", coalition=2, audit_mode="verdict")
    assert res.passed and res.audit.mode == "verdict"
    assert oracle_protected(res.confidential_table, coalition=2).all()


def test_an_unprotectable_coalition_fails_honestly():
    # T must be published: b and c's contributors together derive a whatever is hidden
    t = one_way(["P", "U", "S", "S"])
    assert protect(t, "optimal").passed
    res = protect(t, "optimal", coalition=2)
    assert not res.passed and not res.audit.protected[1]
    assert any("did NOT pass" in n for n in res.notes)
    assert not oracle_protected(res.confidential_table, coalition=2).all()


def test_coalition_is_refused_where_it_cannot_apply():
    t = one_way(["S", "U", "S", "S"])
    for bad in (1, True, 2.5, "2"):
        with pytest.raises(InputError, match="coalition must be an integer >= 2"):
            protect(t, "optimal", coalition=bad)
    with pytest.raises(InputError, match="needs singleton=True"):
        protect(t, "optimal", coalition=2, singleton=False)
    with pytest.raises(InputError, match="largest contributions"):
        protect(one_way(["S", "U", "S", "S"], top=False), "gauss", coalition=2)
    with pytest.raises(InputError, match="coalition"):
        protect(t, "cta", coalition=2)


def _job(tmp_path, coalition: str) -> str:
    t = one_way(["S", "U", "S", "S"])
    pd.DataFrame({"x": ["T", "a", "b", "c"], "value": t.value, "freq": t.freq,
                  "top1": t.top[:, 0], "top2": t.top[:, 1], "top3": t.top[:, 2],
                  "status": t.status, "upl": t.upl, "lpl": t.lpl}
                 ).to_csv(tmp_path / "c.csv", index=False)
    job = tmp_path / "job.toml"
    job.write_text(f"""
[input]
cells = "c.csv"
dimensions = ["x"]
top = "top"
status = "status"
upl = "upl"
lpl = "lpl"
[hierarchies.x]
flat = true
total = "T"
[protect]
method = "greedy"
{coalition}
[output]
dir = "out"
""")
    return str(job)


def test_a_job_protects_against_coalitions(tmp_path, capsys):
    assert main(["protect", _job(tmp_path, "coalition = 2")]) == 0
    assert "PASSED" in capsys.readouterr().out
    out = pd.read_csv(tmp_path / "out" / "cells.csv")
    status = dict(zip(out["x"], out["status"]))
    assert status["b"] == status["c"] == "M" and status["T"] == "M"
    assert '"coalition": 2' in (tmp_path / "out" / "trail.json").read_text()
    assert main(["protect", _job(tmp_path, "coalition = 1")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "coalition" in err and "Traceback" not in err

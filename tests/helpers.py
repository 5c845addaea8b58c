"""Small tables and patterns shared by several test modules."""
from __future__ import annotations

import numpy as np

from tabprotect.model import Hierarchy, Table, aggregate_leaves, synthetic
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.gauss import gauss


def two_by_two(primary_level: float = 1.0) -> Table:
    """The 3 x 3 table of a 2 x 2 product with totals, cell 4 (1, a) primary."""
    r = Hierarchy.flat(["1", "2"], total="T")
    c = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    st = t.status.copy()
    st[4] = "U"
    lvl = np.where(st == "U", primary_level, 0.0)
    return t.replace(status=st, upl=lvl, lpl=lvl)


def unprotectable_two_by_two(published_above: bool = True) -> Table:
    """The same 3 x 3 table, cell 4 (1, a) primary with upper level 1 and everything
    published (P) but the cells of row 2 / column b that could hide it: with
    ``published_above`` those are P too and no pattern protects (1, a); without, the
    cells 5, 7 and 8 are free and a pattern exists."""
    r = Hierarchy.flat(["1", "2"], total="T")
    c = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    st = np.array(["P", "P", "P", "P", "U", "P", "P", "S", "S"])
    if not published_above:
        st[[5, 7, 8]] = "S"
    return t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))


def gauss_pattern(name: str, seed: int):
    """A generated table, its value costs, its gauss pattern (interval shortfalls left
    for the repair) and its primary cells."""
    t = synthetic.preset(name, seed=seed)
    cost = cost_vector(t, "value")
    base = t.replace(status=gauss(t, cost, singleton=False).status)
    return t, cost, base, np.flatnonzero(t.status == "U")


def flat_count_table(leaves: tuple[int, ...], seed: int, mean: float = 2.0) -> Table:
    """A random flat count table (Poisson leaves): primaries the counts 1-2, upper
    level 1, sliding width 2, zeros published (the table of bench_audit_modes, smaller)."""
    rng = np.random.default_rng(seed)
    hs = [Hierarchy.flat([f"{d}{i}" for i in range(k)], total="T")
          for d, k in zip("abcd", leaves)]
    inner = np.ones(1, bool)
    for h in hs:
        inner = np.logical_and.outer(inner, h.is_leaf).ravel()
    v = np.zeros(len(inner))
    v[inner] = rng.poisson(mean, int(inner.sum()))
    v = aggregate_leaves(v, hs)
    prim = (v >= 1) & (v <= 2)
    status = np.where(v == 0, "Z", "S").astype("<U1")
    status[prim] = "U"
    return Table.from_arrays(dict(zip("abcd", hs)), v, v.copy(), status=status,
                             upl=np.where(prim, 1.0, 0.0), spl=np.where(prim, 2.0, 0.0),
                             kind="frequency")


def random_moves(rng: np.random.Generator, k: int, m: int, *, top: int, room: int,
                 step: int, density: float):
    """A random box over ``k`` cells (values below ``top``; bounds up to ``room`` away,
    some infinite) and ``m`` random integer moves with steps up to ``step`` (a tenth of
    the entries halved: fractional): ``(value, lb, ub, moves)``, moves a CSR matrix."""
    import scipy.sparse as sp
    value = rng.integers(0, top, k).astype(float)
    lb = np.where(rng.random(k) < 0.2, -np.inf, value - rng.integers(0, room, k))
    ub = np.where(rng.random(k) < 0.3, np.inf, value + rng.integers(0, room, k))
    dense = np.where(rng.random((m, k)) < density, rng.integers(-step, step + 1, (m, k)),
                     0).astype(float)
    dense[rng.random((m, k)) < 0.1] *= 0.5
    return value, lb, ub, sp.csr_matrix(dense)


AUDIT_JOB = """
[input]
cells = "cells.csv"
dimensions = ["region", "size"]
value = "value"
status = "status"
compute_totals = {compute}

[hierarchies.region]
pairs = "region.csv"

[output]
dir = "out"
"""

AUDIT_CELLS = """region,size,value,status
N1,s1,5,U
N1,s2,7,M
N2,s1,1,M
N2,s2,9,M
S,s1,4,
S,s2,6,
"""

AUDIT_REGION = "parent,child\nTotal,N\nTotal,S\nN,N1\nN,N2\n"


def write_audit_job(tmp_path, cells=AUDIT_CELLS, region=AUDIT_REGION, compute="true"):
    """A small audit job (a suppressed 2-D table, a region hierarchy) in ``tmp_path``;
    its job file's path."""
    (tmp_path / "job.toml").write_text(AUDIT_JOB.format(compute=compute))
    (tmp_path / "cells.csv").write_text(cells)
    (tmp_path / "region.csv").write_text(region)
    return tmp_path / "job.toml"

"""The Python examples of the docs that take a user's ``table`` run as written on one
(the README's own example: test_readme), and their results pass the independent audit."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from lp_oracle import protected
from tabprotect.model import Hierarchy, Table, aggregate_leaves

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _block(name: str, index: int) -> str:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(encoding="utf-8"),
                      re.S)[index]


def _table() -> Table:
    """A 3 x 4 magnitude table with totals and two primaries."""
    rows = Hierarchy.flat(["1", "2", "3"], total="T")
    cols = Hierarchy.flat(["a", "b", "c", "d"], total="T")
    rng = np.random.default_rng(4)
    v = aggregate_leaves(rng.integers(5, 60, 20).astype(float), [rows, cols])
    f = aggregate_leaves(rng.integers(3, 9, 20).astype(float), [rows, cols])
    t = Table.from_arrays({"r": rows, "c": cols}, v, freq=f)
    st = t.status.copy()
    st[[6, 13]] = "U"
    lvl = np.where(st == "U", np.round(0.3 * v), 0.0)
    return t.replace(status=st, upl=lvl, lpl=lvl)


@pytest.mark.parametrize("name, index, result", [("secondary.md", 0, "res"),
                                                 ("audit.md", 1, "out")])
def test_doc_example_runs_as_written(name, index, result):
    ns = {"table": _table()}
    if name == "audit.md":
        from tabprotect.secondary import protect
        ns["result"] = protect(ns["table"], method="gauss")
    exec(compile(_block(name, index), f"{name} example {index}", "exec"), ns)
    if result == "res":
        res = ns["res"]
        assert res.passed and res.params["mip_gap"] == 0.0
        assert protected(res.confidential_table, singleton=True).all()
    else:
        out = ns["out"]
        assert out["primary"] == 2 and out["secondary"] == ns["result"].n_secondary

"""The method registry: typed, frozen options with reasons, capabilities, and protect()'s
checking of what it is given (nothing unknown is run or recorded)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tabprotect.audit import audit
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary import (METHODS, HypercubeOptions, OptimalOptions, describe_methods,
                                  method_options, protect)
from tabprotect.secondary.base import option_help
from tabprotect.secondary.hypercube import hypercube


def small() -> Table:
    r = Hierarchy.flat(["1", "2", "3"], total="T")
    c = Hierarchy.flat(["a", "b", "c"], total="T")
    inner = np.array([[7, 3, 9], [4, 8, 2], [6, 5, 11]], dtype=float)
    v = np.zeros((4, 4))
    v[1:, 1:] = inner
    v[0, 1:] = inner.sum(0)
    v[1:, 0] = inner.sum(1)
    v[0, 0] = inner.sum()
    t = Table.from_arrays({"r": r, "c": c}, v.ravel(), freq=np.full(16, 3.0))
    st = t.status.copy()
    st[t.cell("2", "b")] = "U"
    lvl = np.where(st == "U", 2.0, 0.0)
    return t.replace(status=st, upl=lvl, lpl=lvl)


def test_every_method_has_frozen_options_with_reasons_and_capabilities():
    assert set(METHODS) >= {"optimal", "modular", "hypercube", "gauss", "greedy"}
    for name, spec in METHODS.items():
        opts = spec.options()
        with pytest.raises(dataclasses.FrozenInstanceError):
            for f in dataclasses.fields(opts):
                setattr(opts, f.name, None)
            raise dataclasses.FrozenInstanceError  # a method without options
        for key, why in option_help(spec.options).items():
            assert why, f"{name}.{key} has no reason"
    caps = {n: METHODS[n].capabilities for n in METHODS}
    assert caps["hypercube"].needs_product_structure and caps["modular"].needs_product_structure
    assert not caps["gauss"].needs_product_structure
    assert caps["optimal"].proves_optimality and not caps["gauss"].proves_optimality
    assert all(caps[n].handles_singletons for n in ("optimal", "gauss", "hypercube"))
    assert describe_methods()["optimal"]["options"]["engine"]["why"]


@pytest.mark.parametrize("bad", [{"singelton": False}, {"backend": "no-such-solver"},
                                 {"foo": 1}])
@pytest.mark.parametrize("method", ["optimal", "hypercube", "gauss", "greedy", "modular"])
def test_unknown_options_are_input_errors_listing_the_valid_ones(method, bad):
    t = small()
    with pytest.raises(InputError, match="unknown option") as err:
        protect(t, method=method, **bad)
    assert list(bad)[0] in str(err.value) and "valid:" in str(err.value)
    assert "singleton" in str(err.value)  # protect()'s own settings are listed too
    with pytest.raises(InputError, match="unknown option"):
        protect(t, method=method, options=bad)


def test_backend_is_no_option_of_any_method():
    for name in METHODS:
        with pytest.raises(InputError, match="backend"):
            method_options(name, {"backend": "highs"})


def test_options_as_instance_or_dict_and_only_applied_settings_recorded():
    t = small()
    a = protect(t, method="optimal", cost="unity", options=OptimalOptions(engine="benders"),
                mip_gap=0.0)
    b = protect(t, method="optimal", cost="unity", options={"engine": "benders",
                                                              "mip_gap": 0.0})
    c = protect(t, method="optimal", cost="unity", engine="benders", mip_gap=0.0)
    for res in (a, b, c):
        assert res.passed and audit(res.confidential_table, singleton=True).passed
        assert res.params["mip_gap"] == 0.0 and res.params["engine"] == "benders"
        assert res.solver["options"]["engine"] == "benders"   # applied, not only recorded
        assert "backend" not in res.params and "start" not in res.params
    np.testing.assert_array_equal(a.status, b.status)
    h = protect(t, method="hypercube", cost="unity", options=HypercubeOptions(carry=0))
    assert h.params["carry"] == 0 and "mip_gap" not in h.params and "engine" not in h.params


def test_option_values_are_type_checked():
    t = small()
    with pytest.raises(InputError, match="max_candidates"):
        protect(t, method="hypercube", options={"max_candidates": "many"})
    with pytest.raises(InputError, match="engine"):
        protect(t, method="optimal", options={"engine": "fastest"})
    with pytest.raises(InputError, match="mip_gap"):
        protect(t, method="optimal", mip_gap="small")
    with pytest.raises(InputError, match="OptimalOptions"):
        protect(t, method="optimal", options=HypercubeOptions())


def test_a_method_called_directly_takes_no_unknown_keyword():
    t = small()
    with pytest.raises(TypeError):
        hypercube(t, np.ones(t.n_cells), bogus=1)


CELLS = "region,size,value,freq,status\nN1,a,5,4,U\nN1,b,7,3,\nN2,a,1,3,\nN2,b,9,5,\n" \
        "S,a,4,4,\nS,b,6,6,\n"
JOB = """
[input]
cells = "cells.csv"
dimensions = ["region", "size"]
status = "status"
compute_totals = true

[hierarchies.region]
pairs = "region.csv"

[protect]
method = "hypercube"
singleton = false
"""


@pytest.mark.parametrize("extra,ok", [("", True), ("carry = 0\n", True),
                                      ('backend = "highs"\n', False),
                                      ("singelton = false\n", False),
                                      ("mip_gap = 0.0\n", False)])
def test_a_job_records_only_the_options_its_method_applied(tmp_path, capsys, extra, ok):
    from tabprotect.cli import main
    (tmp_path / "cells.csv").write_text(CELLS)
    (tmp_path / "region.csv").write_text("parent,child\nTotal,N\nTotal,S\nN,N1\nN,N2\n")
    (tmp_path / "job.toml").write_text(JOB + extra)
    code = main(["protect", str(tmp_path / "job.toml"), "--quiet", "-o",
                 str(tmp_path / "out")])
    err = capsys.readouterr().err
    if not ok:
        # refused before any work, naming the key; nothing written, so nothing recorded
        assert code == 2 and extra.split(" ")[0] in err
        assert not list(tmp_path.glob("out/*"))
        return
    assert code == 0, err
    trail = (tmp_path / "out" / "trail.json").read_text()
    assert "backend" not in trail and "threads" not in trail


def test_a_declared_method_is_loaded_on_first_lookup():
    from tabprotect.secondary.base import MethodTable, MethodSpec
    calls = []
    table = MethodTable()

    def load():
        calls.append("load")
        table["late"] = dataclasses.replace(METHODS["greedy"], name="late")
    table.declare("late", load)
    table["early"] = METHODS["greedy"]
    assert "late" in table and list(table) == ["late", "early"] and len(table) == 2
    assert calls == []                      # listing and membership load nothing
    assert isinstance(table["late"], MethodSpec) and table["late"].name == "late"
    assert calls == ["load"]                # loaded once
    assert table.get("nothing") is None and "nothing" not in table
    del table["late"]
    assert list(table) == ["early"]
    # the options classes are the registered methods' own
    import tabprotect.secondary as secondary
    assert secondary.GaussOptions is METHODS["gauss"].options
    assert secondary.ModularOptions is METHODS["modular"].options


def test_a_method_looked_up_by_threads_at_once_loads_once():
    import threading
    from tabprotect.secondary.base import MethodTable
    table, calls = MethodTable(), []
    go = threading.Barrier(4)

    def load():
        calls.append(1)
        table["late"] = METHODS["greedy"]
    table.declare("late", load)
    found = []

    def look():
        go.wait()
        found.append(table["late"])
    threads = [threading.Thread(target=look) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(found) == 4 and all(f is METHODS["greedy"] for f in found)
    assert 1 <= len(calls) <= 4 and "late" in table

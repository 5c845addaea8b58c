"""CTA through a job file: ``[protect] method = "cta"``, the published adjusted values,
the report's adjustments and ``compare`` beside suppression and rounding."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tabprotect.cli import main
from tabprotect.errors import InputError
from tabprotect.pipeline import run

JOB = """
[input]
cells = "cells.csv"
dimensions = ["row", "col"]
status = "status"
upl = "upl"
lpl = "lpl"
compute_totals = true
kind = "frequency"

[hierarchies.row]
codes = ["M1", "M2", "M3"]

[hierarchies.col]
codes = ["P1", "P2", "P3"]

[protect]
method = "cta"
cost = "unity"
fix_totals = true
margin = 0              # the manual's levels exactly: its known answers
time_limit = 30
{extra}
[output]
dir = "out"
"""

# the tau-Argus manual's CTA example (fixtures/cta/PROVENANCE.md)
CELLS = """row,col,value,freq,status,upl,lpl
M1,P1,20,20,S,0,0
M1,P2,24,24,S,0,0
M1,P3,28,28,S,0,0
M2,P1,38,38,S,0,0
M2,P2,38,38,S,0,0
M2,P3,40,40,U,5,5
M3,P1,40,40,S,0,0
M3,P2,39,39,S,0,0
M3,P3,42,42,S,0,0
"""


def write_job(tmp_path, extra: str = ""):
    (tmp_path / "job.toml").write_text(JOB.format(extra=extra))
    (tmp_path / "cells.csv").write_text(CELLS)
    return tmp_path / "job.toml"


def test_protect_command_publishes_the_adjusted_table(tmp_path, capsys):
    job = write_job(tmp_path, 'directions = "free"\n')
    rc = main(["protect", str(job), "--report"])
    capsys.readouterr()
    assert rc == 0
    out = tmp_path / "out"
    pub = pd.read_csv(out / "published.csv", dtype={"row": str, "col": str})
    assert list(pub.columns) == ["row", "col", "value"]     # no status, no true value
    v = pub.set_index(["row", "col"])["value"]
    assert abs(v[("M2", "P3")] - 40) == pytest.approx(5)
    assert v[("Total", "Total")] == 309 and v[("M1", "Total")] == 72
    inner = v[[(r, c) for r in ("M1", "M2", "M3") for c in ("P1", "P2", "P3")]]
    assert inner.sum() == pytest.approx(309)
    true = pd.read_csv(out / "cells.csv", dtype={"row": str, "col": str})
    assert (np.abs(true["published"] - true["value"]).sum()) == pytest.approx(20)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "adjustment" and summary["verdict"] == "PASSED"
    assert summary["proven_optimal"] is True
    html = (out / "report.html").read_text()
    assert "Adjustments" in html and "required lower" in html


def test_unknown_and_suppression_only_keys_are_errors(tmp_path):
    with pytest.raises(InputError, match="unknown key 'engine'"):
        run(write_job(tmp_path, 'engine = "benders"\n'))
    with pytest.raises(InputError, match="suppression only"):
        run(write_job(tmp_path, "singleton = false\n"))
    with pytest.raises(InputError, match="distance"):
        run(write_job(tmp_path, 'distance = "L3"\n'))
    rc = main(["protect", str(write_job(tmp_path, 'distance = "L3"\n'))])
    assert rc == 2


def test_l2_heuristic_and_options_through_the_job(tmp_path):
    res = run(write_job(tmp_path, 'distance = "L2"\nflip_rounds = 1\n'))
    assert res.kind == "adjustment" and res.passed
    assert res.results["objective"] == pytest.approx(56.25, rel=1e-6)


def test_compare_lays_cta_beside_suppression_and_rounding(tmp_path):
    job = write_job(tmp_path, '\n[compare]\nmethods = ["optimal", '
                              '{method = "cta", margin = 0}, '
                              '{method = "rounding", base = 5}]\n')
    res = run(job, task="compare")
    frame = res.comparison.set_index("method")
    assert set(frame.index) == {"optimal", "cta", "rounding"}
    assert frame.loc["cta", "audit_passed"] and frame.loc["optimal", "audit_passed"]
    assert frame.loc["cta", "l1"] == pytest.approx(20.0)
    assert frame.loc["cta", "primary_unprotected"] == 0
    assert frame["error"].isna().all()


@pytest.mark.parametrize("first, kind", [('"cta"', "adjustment"),
                                         ('{method = "rounding", base = 5}', "rounding")])
def test_compare_command_publishes_a_best_run_that_changes_values(tmp_path, capsys, first,
                                                                  kind):
    # the first passing method decides the kind of the best run: here one that publishes
    # changed values, written as published.csv and checked here from that file alone
    job = write_job(tmp_path, f'\n[compare]\nmethods = [{first}, "optimal"]\n')
    rc = main(["compare", str(job), "--report"])
    assert rc == 0, capsys.readouterr().err
    out = tmp_path / "out"
    pub = pd.read_csv(out / "published.csv", dtype={"row": str, "col": str})
    assert list(pub.columns) == ["row", "col", "value"] and pub["value"].notna().all()
    v = pub.set_index(["row", "col"])["value"]
    rows, cols = ("M1", "M2", "M3"), ("P1", "P2", "P3")
    for r in rows:        # additive in both directions
        assert v[[(r, c) for c in cols]].sum() == pytest.approx(v[(r, "Total")])
    for c in cols + ("Total",):
        assert v[[(r, c) for r in rows]].sum() == pytest.approx(v[("Total", c)])
    if kind == "adjustment":
        assert abs(v[("M2", "P3")] - 40) >= 5 - 1e-6    # moved by its protection level
    else:
        assert (v % 5 == 0).all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == kind and summary["verdict"] == "PASSED"
    assert (out / "report.html").is_file()


def test_the_service_listing_counts_no_suppressed_cell_for_an_adjustment(tmp_path):
    from tabprotect.service.worker import public_result
    res = run(write_job(tmp_path))
    out = public_result(res, {})
    assert out["kind"] == "adjustment" and out["audit_passed"] is True
    assert out["summary"]["suppressed"] == 0 and "primary" not in out["summary"]

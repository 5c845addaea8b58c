"""compare(): several methods on one table, each checked by an independent audit."""
import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from tabprotect.audit import audit
from tabprotect.cli import main
from tabprotect.compare import compare, residual_risk
from tabprotect.io.job import build_table, load_job

DEMO = resources.files("tabprotect") / "data" / "demo_audit"


def demo_primary_table():
    """The bundled demo table with only its primary cells (secondaries reset to S)."""
    with resources.as_file(DEMO / "job.toml") as job:
        table = build_table(load_job(job))
    status = np.where(table.status == "M", "S", table.status)
    return table.replace(status=status)


METHODS = ["optimal", "hypercube", "greedy", {"method": "optimal", "cost": "unity",
                                              "label": "optimal/unity"}]


@pytest.fixture(scope="module")
def comparison():
    return compare(demo_primary_table(), METHODS, cost="value", singleton=False)


def test_compare_lays_methods_side_by_side(comparison):
    table = comparison.table
    frame = comparison.frame.set_index("label")
    assert list(frame.index) == ["optimal", "hypercube", "greedy", "optimal/unity"]
    assert frame["error"].isna().all()
    for run in comparison.runs:
        status = run.published.status
        # the primaries stay suppressed, and an independent audit agrees with the verdict
        assert (status[table.status == "U"] == "U").all()
        independent = audit(table.replace(status=status))
        assert independent.passed and frame.loc[run.label, "audit_passed"]
        row = frame.loc[run.label]
        supp = np.isin(status, ["U", "M"])
        assert row["suppressed"] == supp.sum()
        assert row["secondary"] == (status == "M").sum()
        assert row["value_suppressed"] == pytest.approx(table.value[supp].sum())
        assert row["share_value"] == pytest.approx(100 * table.value[supp].sum()
                                                   / table.value.sum())
        # residual risk from the independent audit
        prim = table.status == "U"
        rel = 100 * (independent.upper - independent.lower)[prim] / table.value[prim]
        assert row["min_width_pct"] == pytest.approx(rel.min())
        assert row["median_width_pct"] == pytest.approx(np.median(rel))
        assert row["exactly_disclosed"] == 0
        assert row["seconds"] >= 0
    # a proven-optimal pattern costs no more than any other passing pattern
    assert frame.loc["optimal", "proven_optimal"]
    for label in ("hypercube", "greedy"):
        assert frame.loc["optimal", "secondary_value"] <= \
            frame.loc[label, "secondary_value"] + 1e-6
    assert frame.loc["optimal/unity", "secondary"] <= frame.loc["optimal", "secondary"]
    best = comparison.best()
    assert best.info.measures["value_suppressed"] == frame["value_suppressed"].min()


def test_residual_risk_at_minimum_protection(comparison):
    table = comparison.table
    for run in comparison.runs:
        risk = residual_risk(table, run.audit)
        prim = np.flatnonzero(table.status == "U")
        a = run.audit
        expected = sum(
            np.isclose(a.upper[i], a.required_upper[i], rtol=0, atol=1e-6 * table.value[i])
            or (np.isclose(a.lower[i], a.required_lower[i], rtol=0,
                           atol=1e-6 * table.value[i]) and a.required_lower[i] > 1e-9)
            for i in prim)
        assert risk["primary_at_minimum"] == expected
        assert risk["primary_unprotected"] == 0


def test_failing_method_is_reported_not_raised():
    table = demo_primary_table()
    cmp = compare(table, ["hypercube", "no-such-method"], singleton=False)
    frame = cmp.frame.set_index("label")
    assert "unknown method" in frame.loc["no-such-method", "error"]
    assert frame.loc["no-such-method", "audit_passed"] is None
    assert frame.loc["hypercube", "audit_passed"]


def test_compare_command_writes_csv_json_report(tmp_path, capsys):
    for name in ("region.csv", "job.toml"):
        (tmp_path / name).write_bytes((DEMO / name).read_bytes())
    cells = pd.read_csv(DEMO / "cells.csv")
    cells["status"] = cells["status"].replace("M", "S")
    cells.to_csv(tmp_path / "cells.csv", index=False)
    job = tmp_path / "job.toml"
    job.write_text(job.read_text() + '\n[compare]\nmethods = ["optimal", "hypercube", '
                   '{method = "greedy", label = "greedy"}]\nsingleton = false\n')
    code = main(["compare", str(job), "--report", "--quiet", "--output", str(tmp_path / "out")])
    assert code == 0
    frame = pd.read_csv(tmp_path / "out" / "compare.csv")
    assert list(frame["label"]) == ["optimal", "hypercube", "greedy"]
    assert frame["audit_passed"].all()
    data = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [r["label"] for r in data["methods"]] == ["optimal", "hypercube", "greedy"]
    assert data["verdict"] == "PASSED"
    html = (tmp_path / "out" / "report.html").read_text()
    assert '<table id="comparison">' in html and "data:image/png;base64," in html
    assert "report:" in capsys.readouterr().out


def test_bad_compare_section(tmp_path, capsys):
    for name in ("region.csv", "cells.csv", "job.toml"):
        (tmp_path / name).write_bytes((DEMO / name).read_bytes())
    job = tmp_path / "job.toml"
    job.write_text(job.read_text() + '\n[compare]\nmethod = ["optimal"]\n')
    assert main(["compare", str(job), "--quiet"]) == 2
    assert "unknown key" in capsys.readouterr().err


@pytest.mark.slow
def test_compare_full_demo_survey():
    from tabprotect.primary import apply_rules, rules_from_job
    with resources.as_file(resources.files("tabprotect") / "data" / "demo" / "job.toml") as j:
        job = load_job(j)
        table = apply_rules(build_table(job), rules_from_job(job)).table
    cmp = compare(table, ["hypercube", "greedy", {"method": "optimal", "time_limit": 20}],
                  singleton=False)
    assert cmp.frame["audit_passed"].all()
    for run in cmp.runs:
        assert audit(table.replace(status=run.published.status)).passed


def test_best_never_ranks_a_hellinger_distance_against_a_value_suppressed():
    from types import SimpleNamespace

    from tabprotect.compare import Comparison, MethodRun

    def run(label, **measures):
        return MethodRun(label=label, method=label, params={}, seconds=0.0,
                         audit=SimpleNamespace(passed=True),
                         info=SimpleNamespace(measures=measures))

    # a rounding's Hellinger distance (0..1) is far below any value suppressed (in the
    # table's units): ranked together, rounding would always win
    runs = [run("hypercube", value_suppressed=900.0), run("rounding", hellinger=0.02),
            run("optimal", value_suppressed=700.0), run("cta", hellinger=0.01)]
    comparison = Comparison(table=None, runs=runs, frame=pd.DataFrame())
    assert comparison.best().label == "optimal"
    comparison = Comparison(table=None, runs=runs[1:2] + runs, frame=pd.DataFrame())
    assert comparison.best().label == "cta"

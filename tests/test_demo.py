"""`tabprotect demo` runs from the package data and writes its report."""
import json
import time

import pandas as pd
import pytest

from tabprotect.audit import audit
from tabprotect.cli import main
from tabprotect.io.job import build_table, load_job


def test_demo_audit_job_writes_report(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)          # nothing may depend on the repository's folders
    assert main(["demo", "--job", "demo_audit", "--quiet"]) == 0
    out_dir = tmp_path / "tabprotect-demo_audit"     # its own folder, not the first demo's
    assert not (tmp_path / "tabprotect-demo").exists()
    printed = capsys.readouterr().out
    assert f"report: {out_dir / 'report.html'}" in printed
    html = (out_dir / "report.html").read_text()
    assert '<table id="published">' in html and '<table id="audit">' in html
    assert "data:image/png;base64," in html
    trail = json.loads((out_dir / "trail.json").read_text())
    assert trail["summary"]["verdict"] == "PASSED"
    # the copied job re-runs, and an independent audit of the published pattern agrees
    job = load_job(out_dir / "job" / "job.toml")
    table = build_table(job)
    cells = pd.read_csv(out_dir / "cells.csv", dtype=str)
    status = cells["status"].to_numpy()
    checked = audit(table.replace(status=status))
    assert checked.passed
    assert int((status == "U").sum()) >= 1
    written = pd.read_csv(out_dir / "audit.csv")
    unpub = checked.unpublished
    assert sorted(written.loc[written["status"].isin(["U", "M"]), "lower"].round(6)) == \
        sorted(checked.lower[unpub].round(6))


def check_full_demo(out_dir, printed):
    """primary rules -> protection -> audit -> report, checked by an independent audit."""
    assert f"report: {out_dir / 'report.html'}" in printed
    html = (out_dir / "report.html").read_text()
    assert '<table id="published">' in html and "data:image/png;base64," in html
    job = load_job(out_dir / "job" / "job.toml")
    from tabprotect.primary import apply_rules, rules_from_job
    primary = apply_rules(build_table(job), rules_from_job(job)).table
    cells = pd.read_csv(out_dir / "cells.csv", dtype=str)
    status = cells["status"].to_numpy()
    # every primary cell of the rules is suppressed, and the pattern passes the audit, single
    # contributors included (the job's attacker model)
    assert (status[primary.status == "U"] == "U").all()
    assert (status == "M").any()
    assert audit(primary.replace(status=status), singleton=True).passed
    assert json.loads((out_dir / "trail.json").read_text())["summary"]["verdict"] == "PASSED"


def test_full_demo_job_with_fast_method(tmp_path, capsys):
    out_dir = tmp_path / "x"
    assert main(["demo", "--output", str(out_dir), "--method", "hypercube", "--quiet"]) == 0
    check_full_demo(out_dir, capsys.readouterr().out)


@pytest.mark.parametrize("option", [["--method", "gauss"], ["--time-limit", "5"]])
def test_audit_demo_refuses_protect_options(tmp_path, capsys, option):
    # the audit demo has no [protect]: the option would be ignored
    out_dir = tmp_path / "x"
    assert main(["demo", "--job", "demo_audit", "--output", str(out_dir), *option]) == 2
    err = capsys.readouterr().err
    assert option[0] in err and "[protect]" in err and len(err.strip().splitlines()) == 1
    assert not out_dir.exists()


@pytest.mark.slow
def test_default_demo_under_a_minute(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    assert main(["demo", "--quiet"]) == 0
    assert time.perf_counter() - start < 60
    check_full_demo(tmp_path / "tabprotect-demo", capsys.readouterr().out)


def _copy_demo(folder):
    from importlib import resources
    folder.mkdir(parents=True, exist_ok=True)
    for item in (resources.files("tabprotect") / "data" / "demo").iterdir():
        if item.is_file():
            (folder / item.name).write_bytes(item.read_bytes())
    return folder / "job.toml"


def test_demo_job_states_its_attacker_model():
    from importlib import resources
    text = (resources.files("tabprotect") / "data" / "demo" / "job.toml").read_text()
    assert "\nsingleton = true" in text and "\nmethod = " in text


UNPROTECTABLE = """
[input]
cells = "cells.csv"
dimensions = ["x"]
status = "status"

[hierarchies.x]
codes = ["a", "b"]
total = "T"

[rules.frequency]
n = 3
safety_range = 10

[protect]
method = "gauss"
singleton = true
"""


@pytest.mark.parametrize("singleton", [True, False])
def test_unprotectable_single_contributor_error_names_the_option(tmp_path, capsys, singleton):
    # T = a + b is published (P): b's only contributor subtracts b from T and learns a, so
    # no pattern protects against single contributors; outside intruders are held off
    (tmp_path / "cells.csv").write_text("x,value,freq,status\na,6,1,\nb,4,1,\nT,10,2,P\n")
    job = tmp_path / "job.toml"
    job.write_text(UNPROTECTABLE.replace("singleton = true", f"singleton = {str(singleton).lower()}"))
    code = main(["protect", str(job), "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    if not singleton:
        assert code == 0, err
        return
    assert code == 2
    assert "single-contributor attackers included" in err
    assert "set singleton = false in [protect]" in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_every_command_accepts_the_demo_job_unchanged(tmp_path, capsys):
    from tabprotect.service.store import JobStore
    from tabprotect.service.worker import Lease, run_claimed
    job = _copy_demo(tmp_path / "job")
    runs = {"protect": ["protect"], "report": ["report"],
            "compare": ["compare", "--methods", "hypercube,gauss"]}
    for name, args in runs.items():
        assert main(args + [str(job), "-o", str(tmp_path / name), "--quiet"]) == 0, name
        assert json.loads((tmp_path / name / "summary.json").read_text())["verdict"] == \
            "PASSED"
    # the service runs the same spec
    import shutil
    import tomllib
    folder = tmp_path / "service-job"
    shutil.copytree(job.parent, folder / "input")
    spec = tomllib.loads(job.read_text())
    spec.pop("output")
    store = JobStore(tmp_path / "jobs.sqlite")
    job_id = store.create(spec, sorted(p.name for p in (folder / "input").iterdir()), folder,
                          owner="tester")
    assert store.claim("w") == job_id and run_claimed(Lease(store, job_id, "w")) == "finished"
    assert store.get(job_id)["result"]["audit_passed"] is True
    # the same primaries everywhere (the method runs against a wall-clock limit, so its
    # secondaries may differ from run to run; each pattern passed its audit above)
    primaries = [pd.read_csv(f / "cells.csv", dtype=str)["status"].eq("U").tolist()
                 for f in (tmp_path / "protect", tmp_path / "report", folder / "out")]
    assert any(primaries[0]) and primaries[0] == primaries[1] == primaries[2]

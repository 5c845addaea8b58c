"""`tabprotect demo` runs from the package data and writes its report."""
import json
import time

import pandas as pd

from tabprotect.audit import audit
from tabprotect.cli import main
from tabprotect.io.job import build_table, load_job


def test_demo_writes_report(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)          # nothing may depend on the repository's folders
    start = time.perf_counter()
    assert main(["demo", "--quiet"]) == 0
    assert time.perf_counter() - start < 60
    out_dir = tmp_path / "tabprotect-demo"
    printed = capsys.readouterr().out
    assert f"report: {out_dir / 'report.html'}" in printed
    html = (out_dir / "report.html").read_text()
    assert '<table id="published">' in html and '<table id="audit">' in html
    assert "data:image/png;base64," in html
    trail = json.loads((out_dir / "report.json").read_text())
    assert trail["results"]["audit_passed"] is True
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


def test_demo_output_option(tmp_path, capsys):
    assert main(["demo", "--output", str(tmp_path / "x"), "--quiet"]) == 0
    assert (tmp_path / "x" / "report.html").is_file()

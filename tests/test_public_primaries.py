"""What the public outputs tell an intruder about which suppressed cells are primaries: in
a pattern of primaries only, published.csv, summary.json, trail.json and the service's job
record must read as they would for any pattern with the same number of suppressed cells
(a count of secondaries, per-rule counts or the value of the secondaries alone would say
that every X is a primary)."""
from __future__ import annotations

import json

import pandas as pd

from tabprotect.cli import main
from tabprotect.io.job import load_job
from tabprotect.io.results import write_outputs
from tabprotect.pipeline import run as run_pipeline
from tabprotect.service.worker import public_result

JOB = """[input]
cells = "cells.csv"
dimensions = ["r", "c"]
compute_totals = true

[hierarchies.r]
codes = ["r1", "r2", "r3"]

[hierarchies.c]
codes = ["a", "b", "c"]

[rules.frequency]
n = 3

[protect]
method = "optimal"
cost = "unity"

[output]
dir = "out"
"""

# the four cells of r1..r2 x a..b hold 2 contributors each (primaries) and protect one
# another: the pattern has no secondary
CELLS = ("r,c,value,freq\nr1,a,100,2\nr1,b,200,2\nr1,c,2000,20\nr2,a,210,2\nr2,b,90,2\n"
         "r2,c,3000,30\nr3,a,4000,40\nr3,b,5000,50\nr3,c,6000,60\n")

#: keys that split the suppressed cells into primaries and secondaries
SPLIT_KEYS = {"primary", "secondary", "n_secondary", "rules", "value_primary",
              "value_secondary", "U", "M"}


def _keys(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj).union(*(_keys(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_keys(v) for v in obj)) if obj else set()
    return set()


def _write(tmp_path):
    (tmp_path / "job.toml").write_text(JOB)
    (tmp_path / "cells.csv").write_text(CELLS)


def test_public_outputs_do_not_tell_a_pattern_of_primaries_only(tmp_path, capsys):
    _write(tmp_path)
    assert main(["protect", str(tmp_path / "job.toml"), "--report", "--quiet"]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    cells = pd.read_csv(out / "cells.csv", dtype={"r": str, "c": str})
    # the confidential side: four primaries, no secondary (the premise of the test)
    assert (cells["status"] == "U").sum() == 4 and (cells["status"] == "M").sum() == 0
    pub = pd.read_csv(out / "published.csv", dtype={"r": str, "c": str})
    assert set(pub["status"]) <= {"S", "X", "P", "Z"}
    summary = json.loads((out / "summary.json").read_text())
    trail = json.loads((out / "trail.json").read_text())
    for public in (summary, trail["summary"]):
        assert not _keys(public) & SPLIT_KEYS, sorted(_keys(public) & SPLIT_KEYS)
        assert public["status_counts"] == {"S": 12, "X": 4, "P": 0, "Z": 0}
    # the per-rule counts stay in the confidential report
    assert 'id="rules"' in (out / "report.html").read_text()


def test_service_job_record_does_not_tell_primaries_from_secondaries(tmp_path):
    _write(tmp_path)
    job = load_job(tmp_path / "job.toml")
    run = run_pipeline(job)
    written = write_outputs(run, tmp_path / "work", report=False)
    record = public_result(run, json.loads(written["summary"].read_text()))
    assert not _keys(record) & SPLIT_KEYS, sorted(_keys(record) & SPLIT_KEYS)
    assert record["summary"]["suppressed"] == 4 and record["audit_passed"] is True


def test_trail_withholds_the_notes_that_count_primaries(tmp_path):
    from helpers import flat_count_table

    from tabprotect.pipeline import Run
    from tabprotect.secondary import protect
    from tabprotect.secondary.protect_settings import ProtectSettings
    from tabprotect.secondary.repair_options import WitnessSearchSettings

    # every component counts as large: the witness search runs and notes how many open
    # primaries its moves reach
    t = flat_count_table((5, 4, 4), 1, 2.0)
    res = protect(t, method="gauss", cost="value", singleton=True,
                  settings=ProtectSettings(interval_audit_max_work=0,
                                           witness_search=WitnessSearchSettings(
                                               attack_min_cells=0)))
    counting = [n for n in res.notes if "primaries" in n and any(c.isdigit() for c in n)]
    assert res.passed and counting          # the premise: the run counted primaries
    run = Run(t, kind="suppression", method="gauss", published=res.confidential_table,
              audit=res.audit, notes=list(res.notes) + ["a note without a count"])
    write_outputs(run, tmp_path)
    notes = json.loads((tmp_path / "trail.json").read_text())["notes"]
    assert len(notes) == len(run.notes) and "a note without a count" in notes
    assert not set(counting) & set(notes)
    assert not [n for n in notes if "primar" in n and any(c.isdigit() for c in n)]


def test_trail_withholds_the_rules_of_a_pattern_of_primaries_only(tmp_path, capsys):
    # an audit of the rules' statuses (no [protect]): every X is a primary, and the rule's
    # threshold would bound each one's count to 1..n-1, narrower than the audit's interval
    _write(tmp_path)
    job = tmp_path / "job.toml"
    job.write_text(JOB.replace('[protect]\nmethod = "optimal"\ncost = "unity"\n', "")
                   .replace("n = 3", "n = 7"))
    assert main(["audit", str(job), "--quiet"]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    cells = pd.read_csv(out / "cells.csv", dtype={"r": str, "c": str})
    assert set(cells["status"]) == {"S", "U"}      # the premise: primaries only
    trail = json.loads((out / "trail.json").read_text())
    assert trail["parameters"]["rules"].startswith("withheld")
    assert trail["parameters"]["input"]["dimensions"] == ["r", "c"]   # the rest is kept
    for name in ("trail.json", "summary.json"):
        public = json.loads((out / name).read_text())
        assert not _keys(public) & {"frequency", "n"}, name
        assert "frequency" not in json.dumps(public), name


def test_margins_only_audit_counts_every_blank_cell_as_suppressed(tmp_path, capsys):
    # an audit with only the margins published: published.csv blanks every inner cell, and
    # the summary and the job record describe that pattern (the primaries' own value or
    # count would split the blanks into primaries and the rest)
    _write(tmp_path)
    job = tmp_path / "job.toml"
    job.write_text(JOB.replace('[protect]\nmethod = "optimal"\ncost = "unity"\n', ""))
    assert main(["audit", str(job), "--published-only-margins", "--quiet"]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    pub = pd.read_csv(out / "published.csv", dtype={"r": str, "c": str})
    cells = pd.read_csv(out / "cells.csv", dtype={"r": str, "c": str})
    blank = pub["value"].isna().to_numpy()
    assert blank.sum() == 9 and (cells["status"] == "U").sum() == 4     # the premise
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status_counts"]["X"] == 9
    blank_value = cells["value"].to_numpy()[blank].sum()
    released = summary["figures"].get("value_suppressed")
    assert released is None or released == blank_value
    assert released != cells["value"][cells["status"] == "U"].sum()
    run = run_pipeline(load_job(job), overrides={"audit": {"published": "margins"}})
    written = write_outputs(run, tmp_path / "work")
    record = public_result(run, json.loads(written["summary"].read_text()))
    assert record["summary"]["suppressed"] == 9


def test_rounding_audited_on_the_margins_publishes_the_margins_only(tmp_path, capsys):
    _write(tmp_path)
    job = tmp_path / "job.toml"
    job.write_text(JOB.replace('[protect]\nmethod = "optimal"\ncost = "unity"\n',
                               '[round]\nbase = 10\n').replace("[rules.frequency]\nn = 3\n", ""))
    assert main(["round", str(job), "--published", "margins", "--quiet"]) == 0
    capsys.readouterr()
    pub = pd.read_csv(tmp_path / "out" / "published.csv", dtype={"r": str, "c": str})
    inner = (pub["r"] != "Total") & (pub["c"] != "Total")
    assert pub["value"][inner].isna().all() and pub["value"][~inner].notna().all()

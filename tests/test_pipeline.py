"""One pipeline: five different jobs give the same primaries, pattern and verdict through
every entry point (Python ``run()``, the job's own command, ``report``, the service's
worker function), checked cell by cell, and the pattern is checked by an independent
audit."""
from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabprotect.audit import audit
from tabprotect.cli import main
from tabprotect.pipeline import run

REGION = "parent,child\nTotal,N\nTotal,S\nN,N1\nN,N2\nS,S1\nS,S2\n"

# magnitude cells: one given U (N2,c, protection levels 10%) and a frequency rule that
# finds more
CELLS = """region,size,value,freq,status,upl,lpl
N1,a,120,12,,0,0
N1,b,45,2,,0,0
N1,c,300,9,,0,0
N2,a,80,7,,0,0
N2,b,200,10,,0,0
N2,c,60,8,U,6,6
S1,a,75,5,,0,0
S1,b,33,1,,0,0
S1,c,150,6,,0,0
S2,a,90,9,,0,0
S2,b,110,4,,0,0
S2,c,20,2,,0,0
"""

STATUS_AND_RULES = """
[input]
cells = "cells.csv"
dimensions = ["region", "size"]
status = "status"
upl = "upl"
lpl = "lpl"
compute_totals = true

[hierarchies.region]
pairs = "region.csv"

[rules.frequency]
n = 3
safety_range = 10

[protect]
method = "optimal"
singleton = false
"""

AUDIT_ONLY = """
[input]
cells = "audit_cells.csv"
dimensions = ["region", "size"]
status = "status"
compute_totals = true

[hierarchies.region]
pairs = "region.csv"
"""

AUDIT_CELLS = """region,size,value,status
N1,a,5,U
N1,b,7,M
N2,a,1,M
N2,b,9,M
S1,a,4,
S1,b,6,
S2,a,3,
S2,b,8,
"""

ROUNDING = """
[input]
cells = "counts.csv"
dimensions = ["region", "size"]
compute_totals = true

[hierarchies.region]
pairs = "region.csv"

[round]
base = 5
method = "controlled"
"""

COUNTS = "region,size,value\n" + "".join(
    f"{r},{s},{v}\n" for (r, s), v in zip(
        [(r, s) for r in ("N1", "N2", "S1", "S2") for s in ("a", "b")],
        (12, 3, 7, 21, 1, 9, 14, 6)))

MICRODATA = """
[microdata]
file = "units.csv"
dimensions = ["region", "size"]
response = "turnover"

[hierarchies.region]
pairs = "region.csv"

[rules.frequency]
n = 3
safety_range = 10

[protect]
method = "hypercube"
singleton = false
"""

COMPARE = STATUS_AND_RULES.replace('[protect]\nmethod = "optimal"\nsingleton = false\n',
                                   '[compare]\nmethods = ["optimal", "hypercube", '
                                   '"greedy"]\nsingleton = false\n')

# job name -> (job text, the command that runs it)
JOBS = {"status+rules": (STATUS_AND_RULES, "protect"), "microdata": (MICRODATA, "protect"),
        "rounding": (ROUNDING, "round"), "audit-only": (AUDIT_ONLY, "audit"),
        "compare": (COMPARE, "compare")}


def microdata_units() -> str:
    rng = np.random.default_rng(7)
    rows = ["region,size,turnover"]
    counts = {("N1", "a"): 6, ("N1", "b"): 2, ("N2", "a"): 5, ("N2", "b"): 7,
              ("S1", "a"): 1, ("S1", "b"): 4, ("S2", "a"): 8, ("S2", "b"): 5}
    for (r, s), k in counts.items():
        for _ in range(k):
            rows.append(f"{r},{s},{int(rng.integers(10, 500))}")
    return "\n".join(rows) + "\n"


def write_job(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "region.csv").write_text(REGION)
    (folder / "cells.csv").write_text(CELLS)
    (folder / "audit_cells.csv").write_text(AUDIT_CELLS)
    (folder / "counts.csv").write_text(COUNTS)
    (folder / "units.csv").write_text(microdata_units())
    (folder / "job.toml").write_text(JOBS[name][0])
    return folder / "job.toml"


def from_files(folder: Path) -> dict:
    """Primaries, pattern (statuses or rounded values) and verdict from written files."""
    summary = json.loads((folder / "summary.json").read_text())
    trail = json.loads((folder / "trail.json").read_text())
    assert set(trail["outputs"]) >= {"summary"}
    cells = pd.read_csv(folder / "cells.csv", dtype=str, keep_default_na=False)
    if "published" in cells:            # rounding: the published value of every cell
        pattern = cells["published"].astype(float).to_numpy()
        primaries = np.zeros(len(cells), bool)
    else:
        pattern = cells["status"].to_numpy()
        primaries = pattern == "U"
    return {"primaries": primaries, "pattern": pattern, "verdict": summary["verdict"]}


def from_run(result) -> dict:
    pattern = result.rounded if result.kind == "rounding" else result.status
    primaries = (np.zeros(result.table.n_cells, bool) if result.kind == "rounding"
                 else result.status == "U")
    verdict = {True: "PASSED", False: "FAILED", None: "no audit"}[result.passed]
    return {"primaries": primaries, "pattern": np.asarray(pattern), "verdict": verdict}


def via_worker(job_path: Path, tmp: Path, dask: str | None = None) -> Path:
    from tabprotect.service.store import JobStore
    from tabprotect.service.worker import Lease, run_claimed
    folder = tmp / "service-job"
    shutil.copytree(job_path.parent, folder / "input")
    spec = tomllib.loads(job_path.read_text())
    store = JobStore(tmp / "jobs.sqlite")
    job_id = store.create(spec, sorted(p.name for p in (folder / "input").iterdir()), folder,
                          owner="tester")
    assert store.claim("worker-1") == job_id
    assert run_claimed(Lease(store, job_id, "worker-1"), dask) == "finished", \
        store.get(job_id)
    return folder / "out"


@pytest.mark.parametrize("name", list(JOBS))
def test_every_entry_point_gives_the_same_answer(tmp_path, name):
    job_path = write_job(tmp_path / "job", name)
    command = JOBS[name][1]
    result = run(job_path)
    expected = from_run(result)
    answers = {}
    for entry in (command, "report"):
        code = main([entry, str(job_path), "-o", str(tmp_path / entry), "--quiet"])
        assert code == (0 if expected["verdict"] == "PASSED" else 1), entry
        answers[entry] = from_files(tmp_path / entry)
    answers["worker"] = from_files(via_worker(job_path, tmp_path))
    for entry, got in answers.items():
        assert got["verdict"] == expected["verdict"], entry
        assert np.array_equal(got["primaries"], expected["primaries"]), entry
        assert np.array_equal(got["pattern"], expected["pattern"]), entry
    assert expected["verdict"] == "PASSED"
    if name == "rounding":
        assert np.all(expected["pattern"] % 5 == 0)
        return
    # the pattern is safe by an independent audit of the table with its primaries
    assert expected["primaries"].sum() >= 1
    assert audit(result.table.replace(status=expected["pattern"])).passed


def test_status_column_and_rules_are_combined(tmp_path):
    """The given U stays primary and the rules add their own; the pattern passes an
    independent audit with the primaries' protection levels."""
    job_path = write_job(tmp_path / "job", "status+rules")
    result = run(job_path)
    t = result.table
    given = t.cell("N2", "c")
    assert result.status[given] == "U"
    assert (result.status == "U").sum() > 1          # the frequency rule found more
    check = audit(t.replace(status=result.status))
    assert check.passed and not check.exact[t.status == "U"].any()


def test_protect_says_it_does_not_read_an_audit_section(tmp_path):
    job_path = write_job(tmp_path / "job", "status+rules")
    assert not any("[audit]" in n for n in run(job_path).notes)
    job_path.write_text(job_path.read_text() + '\n[audit]\nsingleton = true\n')
    assert any(n.startswith("[audit] is read by `tabprotect audit`")
               for n in run(job_path, task="protect").notes)


def test_failed_audit_writes_only_the_unsafe_file(tmp_path, capsys):
    folder = tmp_path / "job"
    job_path = write_job(folder, "audit-only")
    out = tmp_path / "out"
    assert main(["audit", str(job_path), "-o", str(out), "--quiet"]) == 0
    assert (out / "published.csv").is_file()
    # publish a secondary: the primary N1,a follows from the margins
    (folder / "audit_cells.csv").write_text(AUDIT_CELLS.replace("N1,b,7,M", "N1,b,7,"))
    assert main(["audit", str(job_path), "-o", str(out), "--quiet"]) == 1
    assert not (out / "published.csv").exists()           # the old one is gone too
    assert (out / "UNSAFE-not-for-publication.csv").is_file()
    trail = json.loads((out / "trail.json").read_text())
    assert set(trail["outputs"]) == {"unsafe", "cells", "audit", "summary"}
    assert "do not publish" in capsys.readouterr().out
    assert not [p for p in out.iterdir() if p.name.startswith(".")]   # no temporary left


def test_trail_lists_every_output_and_checksums_of_the_public_ones(tmp_path):
    from tabprotect.io.results import PUBLIC_OUTPUTS, sha256_file
    job_path = write_job(tmp_path / "job", "status+rules")
    out = tmp_path / "out"
    assert main(["report", str(job_path), "-o", str(out), "--quiet"]) == 0
    trail = json.loads((out / "trail.json").read_text())
    written = {p.name for p in out.iterdir()} - {"trail.json"}
    assert {o["file"] for o in trail["outputs"].values()} == written
    assert {"published", "summary"} <= set(trail["outputs"])
    for key, entry in trail["outputs"].items():
        if key in PUBLIC_OUTPUTS:
            assert sha256_file(out / entry["file"]) == entry["sha256"]
        else:   # a confidential file's checksum would tell which guess of it is right
            assert entry == {"file": entry["file"], "confidential": True}
    digests = {sha256_file(p) for p in [*out.iterdir(), *job_path.parent.iterdir()]
               if p.is_file() and p.name not in ("published.csv", "summary.json")}
    assert not [d for d in digests if d in json.dumps(trail)]
    from importlib import metadata
    assert trail["versions"]["highspy"] == metadata.version("highspy")


def test_summary_has_no_cell_value(tmp_path):
    """Distinctive values (x.371) in every cell: no suppressed one appears in the summary
    or the trail; value figures appear only as released by the LP check."""
    job_path = write_job(tmp_path / "job", "status+rules")
    cells = pd.read_csv(tmp_path / "job" / "cells.csv", dtype={"status": str})
    cells["value"] = cells["value"] + 0.371
    cells.to_csv(tmp_path / "job" / "cells.csv", index=False)
    out = tmp_path / "out"
    assert main(["protect", str(job_path), "-o", str(out), "--quiet"]) == 0
    text = (out / "summary.json").read_text() + (out / "trail.json").read_text()
    final = pd.read_csv(out / "cells.csv")
    for v in final["value"][final["status"].isin(["U", "M"])]:
        assert f"{v:.3f}" not in text
    summary = json.loads((out / "summary.json").read_text())
    assert not {"value_suppressed", "value_secondary", "cost"} & set(summary)
    figures = summary["figures"]
    for name in ("value_suppressed", "share_value_suppressed"):
        assert (name in figures) != (name in figures["withheld"])
    # the primary/secondary split is not shared, released or withheld
    for name in ("value_secondary", "value_primary"):
        assert name not in figures and name not in figures["withheld"]


def test_audit_with_rules_judges_the_given_pattern(tmp_path):
    """An audit job with [rules]: the rules add primaries, the given secondaries stay, and
    the verdict is an independent audit's."""
    folder = tmp_path / "job"
    job_path = write_job(folder, "audit-only")
    freqs = {"N1,a": 1, "N1,b": 4, "N2,a": 5, "N2,b": 6, "S1,a": 1, "S1,b": 7, "S2,a": 3,
             "S2,b": 9}
    lines = AUDIT_CELLS.strip().splitlines()
    cells = ["region,size,value,freq,status"] + [
        ",".join(line.split(",")[:3] + [str(freqs[",".join(line.split(",")[:2])])]
                 + line.split(",")[3:]) for line in lines[1:]]
    (folder / "audit_cells.csv").write_text("\n".join(cells) + "\n")
    job_path.write_text(AUDIT_ONLY + "\n[rules.frequency]\nn = 2\nsafety_range = 10\n")
    result = run(job_path)
    table = result.published
    assert table.status[table.cell("N1", "a")] == "U"            # given, and by the rule
    assert table.status[table.cell("S1", "a")] == "U"            # by the rule only
    for region, size in (("N1", "b"), ("N2", "a"), ("N2", "b")):
        assert table.status[table.cell(region, size)] == "M"     # given secondaries kept
    assert result.kind == "audit"
    assert result.passed == audit(table).passed
    assert result.passed is False      # S1,a alone in its row: its value follows


def test_summary_figures_not_checked_within_the_budget_are_withheld(tmp_path):
    """The public summary's checks get a time budget tied to the run: a figure whose
    check has no time is withheld (with its reason), never released unchecked."""
    from tabprotect import pipeline
    from tabprotect.io.results import SummaryBudget, run_summary
    from tabprotect.public_summary import REASONS
    result = pipeline.run(write_job(tmp_path / "job", "status+rules"))
    checked = run_summary(result)["figures"]
    hurried = run_summary(result, SummaryBudget(share=0.0, least=0.0, most=0.0))["figures"]
    assert set(checked["withheld"].values()) <= {REASONS["narrows"]}
    assert "value_suppressed" in checked or "value_suppressed" in checked["withheld"]
    assert hurried["withheld"].get("value_suppressed") == REASONS["time"]
    for name in hurried:
        if name != "withheld":
            assert hurried[name] == checked[name]
    budget = SummaryBudget(share=0.5, least=2.0, most=60.0)
    assert [budget.seconds(s) for s in (1.0, 30.0, 500.0)] == [2.0, 15.0, 60.0]


@pytest.mark.parametrize("section, extra, message", [
    ("rules", "[rules.group]\ndimensions = [\"region\"]\n", "group-disclosure"),
    ("protect", "", "coalition=2 needs"),
])
def test_a_refusal_within_a_step_names_the_job_and_its_section(tmp_path, capsys, section,
                                                               extra, message):
    job_path = write_job(tmp_path / "job", "status+rules")
    text = job_path.read_text() + extra
    if section == "protect":
        text = text.replace("singleton = false", "coalition = 2")
    job_path.write_text(text)
    assert main(["protect", str(job_path), "-o", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"job.toml [{section}]: " in err[0] and message in err[0]


def test_step_packages_are_the_packages_the_steps_import():
    # a command loads its task's step packages with the pipeline: each is a package the
    # pipeline's steps import, and every task the pipeline runs that imports a package
    # at its step is listed (a primary job loads none: it never needs scipy)
    import ast
    import importlib.util

    from tabprotect import pipeline
    tree = ast.parse(Path(pipeline.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    listed = {p for packages in pipeline.STEP_PACKAGES.values() for p in packages}
    assert set(pipeline.STEP_PACKAGES) <= set(pipeline.TASKS)
    assert "primary" not in pipeline.STEP_PACKAGES
    for package in listed:
        assert importlib.util.find_spec(package) is not None, package
        assert package in imported, package
    steps = {f"tabprotect.{name}" for name in ("secondary", "audit", "rounding",
                                                "audit_rounded", "compare", "census")}
    assert imported & steps == listed

"""``tabprotect cellkey`` and ``tabprotect swap``: one job, linked tables, consistent cells,
bad input as one line with exit code 2."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tabprotect.cli import main

DEMO = Path(__file__).resolve().parents[1] / "tabprotect" / "data" / "demo"

JOB = """
[microdata]
file = "census_persons.csv"
dimensions = ["region", "sex"]
household = "household_id"

[hierarchies.region]
hrc = "region.hrc"
total = "Total"

{swap}
[cellkey]
D = 3
V = 2.0
js = 2
seed = 11
tables = [["region", "age_group"], ["region", "sex", "marital_status"]]
"""
SWAP = """[swap]
geography = "region"
risk_variables = ["sex", "age_group"]
k = 3
rate = 0.05
similar = ["household_size"]
seed = 1
"""


def _job(tmp_path, swap=True, text=None):
    for name in ("census_persons.csv", "region.hrc"):
        shutil.copy(DEMO / name, tmp_path / name)
    path = tmp_path / "job.toml"
    path.write_text(text if text is not None else JOB.format(swap=SWAP if swap else ""))
    return path


def _published(folder):
    return pd.read_csv(folder / "published.csv", dtype=str, keep_default_na=False)


def test_cellkey_job_publishes_each_cell_once(tmp_path, capsys):
    job = _job(tmp_path)
    assert main(["cellkey", str(job), "--quiet"]) == 0
    out = tmp_path / "out"
    pub = _published(out)
    assert set(pub.table) == {"census_persons", "region_x_age_group",
                              "region_x_sex_x_marital_status"}
    # the cell (region, sex) appears in the first and third tables: one value
    t1 = pub[pub.table == "census_persons"].set_index(["region", "sex"]).value
    t3 = pub[(pub.table == "region_x_sex_x_marital_status") & (pub.marital_status == "Total")]
    t3 = t3.set_index(["region", "sex"]).value
    assert len(t1) == 66 and (t1.sort_index() == t3.sort_index()).all()
    # the region totals of all three tables agree
    t2 = pub[(pub.table == "region_x_age_group") & (pub.age_group == "Total")]
    assert (t1.xs("Total", level="sex").sort_index()
            == t2.set_index("region").value.sort_index()).all()
    values = pub.value.astype(int)
    assert not values.isin([1, 2]).any()                         # js = 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cellkey"]["swap"]["households_moved"].startswith("withheld")
    assert all(t["every_cell_perturbed"] and t["max_deviation"] == 3
               for t in summary["cellkey"]["tables"])
    assert (out / "ptable.txt").read_text().startswith("i;j;p;v;p_int_ub")
    # the released microdata carries the keys: a job on it gives the same tables
    rel = tmp_path / "released"
    rel.mkdir()
    shutil.copy(out / "perturbed.csv", rel / "census_persons.csv")
    shutil.copy(DEMO / "region.hrc", rel / "region.hrc")
    (rel / "job.toml").write_text(JOB.format(swap=""))
    assert main(["cellkey", str(rel / "job.toml"), "--quiet"]) == 0
    again = _published(rel / "out")
    assert (again.value == pub.value).all()
    # the records carry keys: the job's seed is unused, and the result says so (by its
    # key, not its value)
    first = json.loads((out / "trail.json").read_text())["notes"]
    notes = json.loads((rel / "out" / "trail.json").read_text())["notes"]
    unused = [n for n in notes if "[cellkey] seed" in n]
    assert not [n for n in first if "[cellkey] seed" in n]
    assert len(unused) == 1 and "'rkey'" in unused[0] and "11" not in unused[0]
    capsys.readouterr()


def test_rerun_is_identical_and_another_seed_differs(tmp_path, capsys):
    job = _job(tmp_path, swap=False)
    assert main(["cellkey", str(job), "--quiet", "-o", str(tmp_path / "a")]) == 0
    assert main(["cellkey", str(job), "--quiet", "-o", str(tmp_path / "b")]) == 0
    assert main(["cellkey", str(job), "--quiet", "-o", str(tmp_path / "c"),
                 "--seed", "12"]) == 0
    a, b, c = (_published(tmp_path / x) for x in "abc")
    assert a.equals(b) and not a.value.equals(c.value)
    capsys.readouterr()


def test_restore_additivity_option(tmp_path, capsys):
    text = JOB.format(swap="").replace(
        'tables = [["region", "age_group"], ["region", "sex", "marital_status"]]', "")
    job = _job(tmp_path, text=text)
    assert main(["cellkey", str(job), "--quiet", "--restore-additivity"]) == 0
    pub = _published(tmp_path / "out").set_index(["region", "sex"]).value.astype(int)
    for region in pub.index.get_level_values(0).unique():
        assert pub[(region, "Total")] == pub[(region, "1")] + pub[(region, "2")]
    assert "additivity restored: optimal" in capsys.readouterr().out
    # the public summary describes the published (restored) counts: every relation holds
    # in published.csv; the per-cell counts' figures, never published, stay out of it
    summary = (tmp_path / "out" / "summary.json").read_text()
    table = json.loads(summary)["cellkey"]["tables"][0]
    assert table["additivity"]["off"] == 0 and table["additivity"]["largest_deviation"] == 0
    assert "additivity_before" not in summary
    assert "additivity_before" not in (tmp_path / "out" / "trail.json").read_text()


def test_swap_command(tmp_path, capsys):
    job = _job(tmp_path)
    assert main(["swap", str(job), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "households moved" in out
    data = pd.read_csv(tmp_path / "out" / "perturbed.csv")
    orig = pd.read_csv(DEMO / "census_persons.csv")
    assert len(data) == len(orig)
    assert (data.region.str[:2].value_counts().sort_index()
            .equals(orig.region.str[:2].value_counts().sort_index()))


@pytest.mark.parametrize("change,needle", [
    (("D = 3", "D = 0"), "[cellkey] D: must be >= 1"),
    (("js = 2", "jsx = 2"), "[cellkey]: unknown key 'jsx'"),
    (('tables = [["region", "age_group"]', 'tables = [[1, "age_group"]'), "tables[0]"),
    (('risk_variables = ["sex", "age_group"]', 'risk_variables = ["nope"]'),
     "column 'nope' not found"),
    (('geography = "region"', 'geography = "sex"'), "[swap]"),
    (('household = "household_id"\n\n[hier', 'weight = "weight"\n\n[hier'),
     "[microdata] weight: not used by the cell key method"),
])
def test_bad_job_is_one_line_exit_2(tmp_path, capsys, change, needle):
    text = JOB.format(swap=SWAP).replace(*change)
    job = _job(tmp_path, text=text)
    assert main(["cellkey", str(job), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err
    assert "Traceback" not in err


def test_bundled_census_job_prints_what_the_docs_show(tmp_path, capsys):
    for name in ("census_persons.csv", "region.hrc", "census.toml"):
        shutil.copy(DEMO / name, tmp_path / name)
    assert main(["cellkey", str(tmp_path / "census.toml"), "--quiet"]) == 0
    out = capsys.readouterr().out
    doc = (Path(__file__).resolve().parents[1] / "docs" / "census.md").read_text()
    block = doc.split("$ tabprotect cellkey census.toml\n", 1)[1].split("```", 1)[0]
    for line in block.strip().splitlines():
        assert line in out, line


@pytest.mark.slow
def test_report_of_a_cell_key_run(tmp_path, capsys):
    for name in ("census_persons.csv", "region.hrc", "census.toml"):
        shutil.copy(DEMO / name, tmp_path / name)
    assert main(["report", str(tmp_path / "census.toml"), "--quiet"]) == 0
    page = (tmp_path / "out" / "report.html").read_text()
    for needle in ("Cell key method", "cellkey-posterior", "swap-risk",
                   "there is no suppression pattern to audit"):
        assert needle in page, needle
    capsys.readouterr()


def test_codes_with_leading_zeros_keep_them(tmp_path, capsys):
    """Codes such as "01" are read as text: every record is tabulated under its own code
    (a count read as a number would lose the zero and miss its hierarchy)."""
    (tmp_path / "m.csv").write_text("area,kind\n" + "".join(
        f"{a},{k}\n" for a in ("01", "02", "10") for k in ("05", "06") for _ in range(4)))
    (tmp_path / "area.hrc").write_text("A\n@01\n@02\nB\n@10\n")
    job = tmp_path / "job.toml"
    job.write_text('[microdata]\nfile = "m.csv"\ndimensions = ["area", "kind"]\n\n'
                   '[hierarchies.area]\nhrc = "area.hrc"\ntotal = "Total"\n\n'
                   '[cellkey]\nD = 3\nV = 2.0\nseed = 5\n')
    assert main(["cellkey", str(job), "--quiet"]) == 0
    cells = pd.read_csv(tmp_path / "out" / "cells.csv", dtype=str, keep_default_na=False)
    assert {"01", "02", "10"} <= set(cells.area) and {"05", "06"} <= set(cells.kind)
    capsys.readouterr()

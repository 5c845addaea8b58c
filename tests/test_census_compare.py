"""``compare`` lays the cell key method (and swapping + cell key) beside suppression and
rounding; its losses are checked against the published values by hand."""
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabprotect.cellkey import CellKeySettings, add_record_keys, perturb, tabulate_keys
from tabprotect.cli import main
from tabprotect.compare import compare
from tabprotect.model import Hierarchy

DEMO = Path(__file__).resolve().parents[1] / "tabprotect" / "data" / "demo"


def test_cellkey_run_in_compare_matches_perturb():
    d = add_record_keys(pd.read_csv(DEMO / "census_persons.csv", dtype={"sex": str}), seed=2)
    dims = {"region": Hierarchy.from_hrc(DEMO / "region.hrc", total="Total"),
            "sex": Hierarchy.flat(["1", "2"], total="T")}
    t = tabulate_keys(d, dims)
    cmp = compare(t, [{"method": "cellkey", "D": 2, "V": 1.0}])
    run = cmp.runs[0]
    pub = perturb(t, settings=CellKeySettings(D=2, V=1.0)).published
    assert (run.rounded == pub).all() and run.passed is None
    inner = t.is_inner
    aad = np.abs(pub[inner] - t.value[inner]).mean()
    assert cmp.frame.loc[0, "aad"] == pytest.approx(aad)
    assert cmp.frame.loc[0, "changed_cells"] == (pub != t.value).sum()


JOB = """
[microdata]
file = "census_persons.csv"
dimensions = ["region", "age_group"]

[hierarchies.region]
hrc = "region.hrc"

[swap]
household = "household_id"
geography = "region"
risk_variables = ["sex", "age_group"]
similar = ["household_size"]
seed = 1

[cellkey]
D = 3
V = 2.0
js = 2
seed = 5

[rules.frequency]
n = 3

[compare]
methods = [{method = "rounding", base = 3}, {method = "cellkey"}, {method = "swap+cellkey"},
           {method = "cellkey", D = 5, V = 4.0, label = "cellkey wide"}]
"""


def test_compare_job_with_cellkey_and_swap(tmp_path, capsys):
    for name in ("census_persons.csv", "region.hrc"):
        shutil.copy(DEMO / name, tmp_path / name)
    (tmp_path / "job.toml").write_text(JOB)
    assert main(["compare", str(tmp_path / "job.toml"), "--quiet"]) == 0
    frame = pd.read_csv(tmp_path / "out" / "compare.csv").set_index("label")
    assert list(frame.index) == ["controlled rounding b=3", "cellkey", "swap+cellkey",
                                 "cellkey wide"]
    for label in frame.index:
        assert np.isfinite(frame.loc[label, ["hellinger", "rad", "aad", "rcv"]]
                           .astype(float)).all()
        assert pd.isna(frame.loc[label, "error"])
    # more noise, more loss; swapping adds its own
    assert frame.loc["cellkey wide", "aad"] > frame.loc["cellkey", "aad"]
    assert frame.loc["swap+cellkey", "aad"] > frame.loc["cellkey", "aad"]
    capsys.readouterr()
    (tmp_path / "job.toml").write_text(JOB.replace("D = 5, V = 4.0", "D = 5, W = 4.0"))
    assert main(["compare", str(tmp_path / "job.toml"), "--quiet"]) == 2
    assert "methods[3]: unknown key 'W'" in capsys.readouterr().err

"""What a microdata job's summary.json and trail withhold: the risk command's counts of
records at risk (unless ``[risk] publish_counts``), and the seeds of an R-U map's draws
(recorded in its result, which repeats the map)."""
import argparse
import json

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from microdata_samples import persons
from tabprotect.commands.risk import COMMANDS
from tabprotect.microdata import ru_map

KEYS = ["age", "sex", "region"]


@pytest.fixture
def sample():
    return persons(3, 400, 40).drop(columns="hid")


def _counts(sample: pd.DataFrame, k: int) -> dict[str, int]:
    """The counts computed from the microdata directly: records alone in their key
    combination, and records in a combination of fewer than k."""
    fk = sample.groupby(KEYS)["age"].transform("size")
    return {"n_sample_uniques": int((fk == 1).sum()),
            "k_anonymity_violations": int((fk < k).sum())}


def _run_risk(sample, tmp_path, publish: str) -> tuple[dict, dict, str]:
    sample.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "job.toml").write_text(
        '[microdata]\nfile = "s.csv"\nkeys = ["age", "sex", "region"]\nweight = "w"\n'
        'sampling_fraction = 0.02\n[risk]\nk = 3\nloglinear = true\nthreshold = 0.05\n'
        + publish + '[output]\ndir = "out"\n')
    args = argparse.Namespace(job=str(tmp_path / "job.toml"), output=None)
    assert COMMANDS["risk"][1](args) == 0
    out = tmp_path / "out"
    return (json.loads((out / "summary.json").read_text()),
            json.loads((out / "trail.json").read_text()), (out / "summary.json").read_text())


def _withheld(d: dict) -> set[str]:
    found = {k for k, v in d.items() if isinstance(v, str) and v.startswith("withheld")}
    for v in d.values():
        if isinstance(v, dict):
            found |= _withheld(v)
    return found


def test_risk_summary_and_trail_withhold_the_counts(sample, tmp_path, capsys):
    counts = _counts(sample, 3)
    assert counts["n_sample_uniques"] > 0 and counts["k_anonymity_violations"] > 0
    summary, trail, _ = _run_risk(sample, tmp_path, "")
    for part in (summary, trail["summary"]):
        assert part["n_records"] == len(sample)
        assert part["n_sample_uniques"].startswith("withheld")
        assert part["k_anonymity_violations"].startswith("withheld")
        assert part["loglinear"]["n_sample_uniques"].startswith("withheld")
        assert part["individual"]["n_above_threshold"].startswith("withheld")
        assert _withheld(part) == {"n_sample_uniques", "k_anonymity_violations",
                                   "n_above_threshold"}
    # the terminal shows them
    printed = capsys.readouterr().out
    assert f"sample uniques: {counts['n_sample_uniques']} " in printed
    assert f"violations: {counts['k_anonymity_violations']}" in printed


def test_publish_counts_releases_the_risk_counts(sample, tmp_path):
    counts = _counts(sample, 3)
    summary, trail, _ = _run_risk(sample, tmp_path, "publish_counts = true\n")
    risk = pd.read_csv(tmp_path / "out" / "risk.csv")
    for part in (summary, trail["summary"]):
        assert _withheld(part) == set()
        assert {k: part[k] for k in counts} == counts
        assert part["loglinear"]["n_sample_uniques"] == counts["n_sample_uniques"]
        assert part["individual"]["n_above_threshold"] == int((risk["risk"] > 0.05).sum())


METHODS = [{"method": "pram", "variables": ["age"], "d": 0.7},
           {"method": "invariant_pram", "variables": ["age"], "d": 0.6, "a": 1.0},
           {"method": "swap", "variable": "region", "control": ["sex"], "rate": 0.2}]


def test_ru_map_records_its_drawn_seed_and_repeats_from_it(sample):
    first = ru_map(sample, KEYS, [["age", "sex"], ["region"]], METHODS, 0.02)
    seed = first.params["seed"]
    assert isinstance(seed, int)
    assert list(first.frame["seed"]) == [None, seed, seed + 1, seed + 2]
    again = ru_map(sample, KEYS, [["age", "sex"], ["region"]], METHODS, 0.02, seed=seed)
    pdt.assert_frame_equal(again.frame, first.frame)
    assert again.params == first.params
    # a point with a seed of its own draws with it
    own = ru_map(sample, KEYS, [["age"]], [dict(METHODS[0], seed=11)], 0.02, seed=seed)
    assert own.frame["seed"].iloc[1] == 11


def test_ru_map_seeds_are_in_the_report_and_not_in_summary_or_trail(sample, tmp_path):
    from tabprotect.io.results import write_outputs
    from tabprotect.model import Hierarchy, Table
    from tabprotect.pipeline import Run
    m = ru_map(sample, KEYS, [["age"]], METHODS[:1], 0.02)
    seed = str(m.params["seed"])
    rows = Hierarchy.flat(["A", "B"], total="T")
    cols = Hierarchy.flat(["M", "F"], total="T")
    t = Table.from_arrays({"r": rows, "s": cols}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
                          kind="frequency")
    run = Run(t, kind="rounding", rounded=np.array([10, 5, 5, 5, 5, 0, 5, 0, 5.0]),
              ru_map=m.frame)
    files = write_outputs(run, tmp_path, report=True)
    # as written, so that ru_map(..., seed=...) repeats the map
    assert f">{seed}<" in files["report"].read_text(encoding="utf-8")
    for name in ("summary", "trail"):
        assert seed not in files[name].read_text(encoding="utf-8")

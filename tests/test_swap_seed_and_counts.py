"""A random perturbation without a seed draws one and records it in its result, so the run
repeats; the seed never reaches a published output. A swap's counts and rate stay out of
summary.json and the trail unless the job's publish_counts releases them."""
import argparse
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabprotect.cli import main
from tabprotect.commands.risk import COMMANDS
from tabprotect.microdata import (TargetedSwapSettings, invariant_pram, pram, swap,
                                  swap_targeted)

DEMO = Path(__file__).resolve().parents[1] / "tabprotect" / "data" / "demo"


@pytest.fixture
def people():
    rng = np.random.default_rng(3)
    n = 400
    return pd.DataFrame({"x": rng.choice(list("abcd"), n), "sex": rng.integers(1, 3, n),
                         "reg": rng.choice(["N", "S"], n), "mun": rng.choice(list("pqrs"), n),
                         "job": rng.choice(list("uvwxyz"), n)})


def test_pram_without_a_seed_records_the_one_it_drew(people):
    for run in (lambda s: pram(people, "x", d=0.6, strata="sex", seed=s),
                lambda s: invariant_pram(people, "x", d=0.6, a=0.8, seed=s)):
        first = run(None)
        assert isinstance(first.seed, int)
        again = run(first.seed)
        assert again.data.equals(first.data) and (first.data.x != people.x).any()
        for key, m in first.matrices.items():
            pd.testing.assert_frame_equal(again.matrices[key], m)


def test_swaps_without_a_seed_record_the_one_they_drew(people):
    first = swap(people, "reg", control="sex", rate=0.3)
    assert isinstance(first.seed, int) and first.n_swaps > 0
    assert swap(people, "reg", control="sex", rate=0.3, seed=first.seed).data.equals(first.data)
    settings = TargetedSwapSettings(levels=("reg", "mun"), risk_variables=("job", "x"), k=3,
                                    swap_rate=0.1)
    res = swap_targeted(people, settings)
    assert settings.seed is None and isinstance(res.settings.seed, int)
    again = swap_targeted(people, TargetedSwapSettings(**{**settings.__dict__,
                                                          "seed": res.settings.seed}))
    assert again.data.equals(res.data) and np.array_equal(again.pairs, res.pairs)


def _census_job(tmp_path, extra=""):
    for name in ("census_persons.csv", "region.hrc"):
        shutil.copy(DEMO / name, tmp_path / name)
    job = tmp_path / "job.toml"
    job.write_text('[microdata]\nfile = "census_persons.csv"\ndimensions = ["region", "sex"]\n'
                   'household = "household_id"\n[hierarchies.region]\nhrc = "region.hrc"\n'
                   'total = "Total"\n[swap]\ngeography = "region"\n'
                   'risk_variables = ["sex", "age_group"]\nrate = 0.05\n' + extra)
    return job


def test_swap_command_prints_the_drawn_seed_and_withholds_it_and_the_counts(tmp_path, capsys):
    job = _census_job(tmp_path)
    assert main(["swap", str(job), "--quiet", "-o", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    seed, moved, total = re.search(r"seed (\d+); (\d+) of (\d+) households moved", out).groups()
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    trail = json.loads((tmp_path / "a" / "trail.json").read_text())
    for text in ((tmp_path / "a" / "summary.json").read_text(),
                 (tmp_path / "a" / "trail.json").read_text(),
                 (tmp_path / "a" / "perturbed.csv").read_text()):
        assert seed not in text
    for key in ("households_moved", "rate", "pairs_per_level", "risk", "unmatched_at_risk"):
        assert summary[key].startswith("withheld") and trail["summary"][key] == summary[key]
    assert summary["households"] == int(total)
    assert trail["parameters"]["swap"]["rate"].startswith("withheld")
    # the printed seed repeats the swap
    assert main(["swap", str(job), "--quiet", "-o", str(tmp_path / "b"), "--seed", seed]) == 0
    capsys.readouterr()
    assert ((tmp_path / "a" / "perturbed.csv").read_bytes()
            == (tmp_path / "b" / "perturbed.csv").read_bytes())


def test_publish_counts_releases_the_swap_counts(tmp_path, capsys):
    job = _census_job(tmp_path, "seed = 4\npublish_counts = true\n")
    assert main(["swap", str(job), "--quiet"]) == 0
    moved = int(re.search(r"(\d+) of \d+ households moved", capsys.readouterr().out).group(1))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    trail = json.loads((tmp_path / "out" / "trail.json").read_text())
    assert summary["households_moved"] == moved > 0 and trail["parameters"]["swap"]["rate"] == 0.05
    assert summary["risk"][0]["level"] == "region__level1"


def test_cellkey_summary_withholds_the_swap_counts_the_report_shows_them(tmp_path, capsys):
    job = _census_job(tmp_path, '[cellkey]\nD = 3\nV = 2.0\nseed = 2\n')   # swap seed drawn
    assert main(["report", str(job), "--quiet"]) == 0
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    sw = summary["cellkey"]["swap"]
    assert sw["households_moved"].startswith("withheld") and sw["risk"].startswith("withheld")
    seed = re.search(r"Targeted swapping \(seed (\d+), which repeats it\)",
                     (out / "report.html").read_text()).group(1)
    assert "households moved" in (out / "report.html").read_text()
    assert sw["seed"].startswith("withheld") and seed not in (out / "summary.json").read_text()
    assert seed not in (out / "trail.json").read_text()
    trail = json.loads((out / "trail.json").read_text())
    assert trail["summary"]["cellkey"]["swap"] == sw
    assert trail["parameters"]["swap"]["rate"].startswith("withheld")
    t = summary["cellkey"]["tables"][0]
    assert t["every_cell_perturbed"] and t["max_deviation"] == 3 and "cells_changed" not in t


def _perturb(tmp_path, people, extra):
    people.to_csv(tmp_path / "p.csv", index=False)
    (tmp_path / "job.toml").write_text(
        '[microdata]\nfile = "p.csv"\nkeys = ["x", "sex"]\nsampling_fraction = 0.02\n'
        '[output]\ndir = "out"\n'
        '[perturb]\nmethod = "swap"\nvariable = "reg"\nrate = 0.2\nseed = 3\n' + extra)
    run = COMMANDS["perturb"][1]
    assert run(argparse.Namespace(job=str(tmp_path / "job.toml"), output=None, seed=None)) == 0
    return (json.loads((tmp_path / "out" / "summary.json").read_text()),
            json.loads((tmp_path / "out" / "trail.json").read_text()))


def test_perturb_swap_counts_are_withheld_unless_published(tmp_path, people, capsys):
    summary, trail = _perturb(tmp_path, people, "")
    assert summary["n_swaps"].startswith("withheld")
    assert summary["n_records_changed"].startswith("withheld")
    assert summary["risk"].startswith("withheld")       # the risk after gives the rate
    assert trail["parameters"]["perturb"]["rate"].startswith("withheld")
    summary, trail = _perturb(tmp_path, people, "publish_counts = true\n")
    assert summary["n_swaps"] == round(0.2 * len(people) / 2)
    assert summary["risk"]["tau2_misclassified"] >= 0
    assert trail["parameters"]["perturb"]["rate"] == 0.2


def test_a_ptable_file_is_named_without_its_folder_in_the_public_outputs(tmp_path, capsys):
    from tabprotect.cellkey import count_ptable, ptable_text
    job = _census_job(tmp_path, 'seed = 4\n[cellkey]\nptable = "pt.txt"\nseed = 2\n')
    (tmp_path / "pt.txt").write_text(ptable_text(count_ptable(D=2, V=1.0)))
    assert main(["cellkey", str(job), "--quiet"]) == 0
    capsys.readouterr()
    folder = str(tmp_path)
    for name in ("summary.json", "trail.json"):
        text = (tmp_path / "out" / name).read_text()
        assert folder not in text and "pt.txt" in text, name
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["cellkey"]["tables"][0]["settings"]["ptable_file"] == "pt.txt"
    assert summary["method"].startswith("cell key (ptable pt.txt)")

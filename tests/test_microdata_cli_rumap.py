"""R-U map and the `risk` / `perturb` commands (called through their run functions)."""
import argparse
import json

import numpy as np
import pandas as pd
import pytest

from microdata_samples import persons
from tabprotect.commands.risk import COMMANDS
from tabprotect.microdata import info_loss_tables, plot_ru_map, ru_map


@pytest.fixture
def sample():
    return persons(0, 600, 60)


def test_info_loss_measures():
    a = pd.DataFrame({"x": [1, 1, 1, 1, 2, 2, 3, 3, 3]})
    b = pd.DataFrame({"x": [1, 2, 2, 2, 2, 2, 3, 3, 3]})
    il = info_loss_tables(a, b, [["x"]])
    # counts (4, 2, 3) -> (1, 5, 3)
    hd = np.sqrt((1 - 2) ** 2 + (np.sqrt(5) - np.sqrt(2)) ** 2) / np.sqrt(2)
    assert il["hellinger"] == pytest.approx(hd)
    assert il["aad"] == pytest.approx(6 / 3)
    assert info_loss_tables(a, a, [["x"]]) == {"hellinger": 0.0, "aad": 0.0}


def test_ru_map_orders_methods(sample, tmp_path):
    methods = [{"method": "pram", "variables": ["age"], "d": d} for d in (0.9, 0.6)]
    methods += [{"method": "invariant_pram", "variables": ["age"], "d": 0.6, "a": 1.0},
                {"method": "swap", "variable": "region", "control": ["sex"], "rate": 0.2}]
    m = ru_map(sample, ["age", "sex", "region"], [["age", "sex"], ["region"]], methods, 0.01, seed=1)
    f = m.frame.set_index("label")
    assert f.loc["original", "hellinger"] == 0
    # more perturbation: less risk and more loss
    assert f.loc["pram d=0.6", "tau2_misclassified"] < f.loc["pram d=0.9", "tau2_misclassified"]
    assert f.loc["pram d=0.6", "hellinger"] > f.loc["pram d=0.9", "hellinger"]
    assert (f["tau2_misclassified"].iloc[1:] < f.loc["original", "tau2_misclassified"]).all()
    fig = plot_ru_map(m.frame, tmp_path / "ru.png")
    assert (tmp_path / "ru.png").stat().st_size > 1000
    assert fig is not None


def _args(**kw):
    return argparse.Namespace(**kw)


def test_risk_command(sample, tmp_path):
    sample.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "job.toml").write_text(
        '[microdata]\nfile = "s.csv"\nkeys = ["age", "sex", "region"]\nweight = "w"\nhousehold = "hid"\n'
        'sampling_fraction = 0.02\n[risk]\nk = 3\nloglinear = true\nmethod = "exact"\n'
        '[output]\ndir = "out"\n')
    add, run, help_text = COMMANDS["risk"][:3]
    p = argparse.ArgumentParser()
    add(p)
    args = p.parse_args([str(tmp_path / "job.toml")])
    assert run(args) == 0
    rec = pd.read_csv(tmp_path / "out" / "risk.csv")
    summ = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(rec) == len(sample) and {"fk", "Fk", "risk", "household_risk", "expected_inverse"} <= set(rec)
    assert summ["n_records"] == len(sample)   # the counts at risk: test_microdata_withheld
    assert summ["individual"]["method"] == "exact"
    assert summ["loglinear"]["tau2"] == pytest.approx(rec.expected_inverse.sum())
    # -o chooses the folder; the trail lists the outputs
    assert run(_args(job=str(tmp_path / "job.toml"), output=str(tmp_path / "r"))) == 0
    assert len(pd.read_csv(tmp_path / "r" / "risk.csv")) == len(sample)
    trail = json.loads((tmp_path / "r" / "trail.json").read_text())
    assert {o["file"] for o in trail["outputs"].values()} == {"risk.csv", "summary.json"}


def test_perturb_command(sample, tmp_path):
    sample.to_csv(tmp_path / "s.csv", index=False)
    base = ('[microdata]\nfile = "s.csv"\nkeys = ["age", "sex", "region"]\nsampling_fraction = 0.02\n'
            '[output]\ndir = "out"\n')
    run = COMMANDS["perturb"][1]
    (tmp_path / "pram.toml").write_text(base + '[perturb]\nmethod = "invariant_pram"\nvariables = ["age"]\n'
                                        'd = 0.7\na = 0.9\nseed = 5\n')
    assert run(_args(job=str(tmp_path / "pram.toml"), output=None, seed=None)) == 0
    out = pd.read_csv(tmp_path / "out" / "perturbed.csv")
    assert (out["sex"] == sample["sex"]).all() and (out["age"] != sample["age"]).any()
    mats = pd.read_csv(tmp_path / "out" / "matrices.csv")
    assert np.allclose(mats.groupby("true")["probability"].sum(), 1.0)
    summ = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summ["risk"]["tau2_misclassified"] < summ["risk"]["tau2_original"]
    (tmp_path / "swap.toml").write_text(base + '[perturb]\nmethod = "swap"\nvariable = "region"\n'
                                        'control = ["sex"]\nrate = 0.1\ntargeted = true\nseed = 1\n')
    assert run(_args(job=str(tmp_path / "swap.toml"), output=str(tmp_path / "sw"), seed=None)) == 0
    sw = pd.read_csv(tmp_path / "sw" / "perturbed.csv")
    assert (sw["region"] != sample["region"]).sum() == 2 * round(0.1 * len(sample) / 2)


def test_commands_raise_input_errors(sample, tmp_path):
    from tabprotect.errors import InputError
    sample.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "bad.toml").write_text('[microdata]\nfile = "s.csv"\nkeys = ["age", "nope"]\n[risk]\n')
    with pytest.raises(InputError, match="'nope'"):
        COMMANDS["risk"][1](_args(job=str(tmp_path / "bad.toml"), output=None))
    (tmp_path / "bad2.toml").write_text('[microdata]\nfile = "s.csv"\nkeys = ["age"]\n'
                                        '[perturb]\nmethod = "pram"\nvariables = ["age"]\n'
                                        'matrix = {age = {"0" = {"0" = 0.5}}}\n')
    with pytest.raises(InputError):
        COMMANDS["perturb"][1](_args(job=str(tmp_path / "bad2.toml"), output=None, seed=None))
    with pytest.raises(InputError, match="not found"):
        COMMANDS["risk"][1](_args(job=str(tmp_path / "missing.toml"), output=None))
    # a file separated by semicolons is said to be
    sample.to_csv(tmp_path / "semi.csv", index=False, sep=";")
    (tmp_path / "semi.toml").write_text('[microdata]\nfile = "semi.csv"\nkeys = ["age"]\n'
                                        '[risk]\n')
    with pytest.raises(InputError, match="column 'age' not in semi.csv .*separated by ';'"):
        COMMANDS["risk"][1](_args(job=str(tmp_path / "semi.toml"), output=None))


def test_perturb_without_a_seed_draws_one_that_repeats_the_run(sample, tmp_path, capsys):
    sample.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "job.toml").write_text(
        '[microdata]\nfile = "s.csv"\nkeys = ["age", "sex", "region"]\n'
        'sampling_fraction = 0.02\n[output]\ndir = "out"\n'
        '[perturb]\nmethod = "pram"\nvariables = ["region"]\nd = 0.6\n')
    run = COMMANDS["perturb"][1]
    assert run(_args(job=str(tmp_path / "job.toml"), output=str(tmp_path / "a"), seed=None)) == 0
    out = capsys.readouterr().out
    seed = out.split("seed ", 1)[1].split(";", 1)[0]
    assert seed != "None"
    assert run(_args(job=str(tmp_path / "job.toml"), output=str(tmp_path / "b"),
                     seed=int(seed))) == 0
    a = pd.read_csv(tmp_path / "a" / "perturbed.csv")
    b = pd.read_csv(tmp_path / "b" / "perturbed.csv")
    assert a.equals(b) and (a["region"] != sample["region"]).any()
    summary = (tmp_path / "a" / "summary.json").read_text()
    assert seed not in summary


@pytest.mark.parametrize("matrix, words", [
    ('{region = {N = {X = 1.0}}}', r"matrix.region.N: released category 'X' is not a true"),
    ('{region = {N = {N = 0.5, S = 0.5}, S = {S = 1.0}}}',
     r"matrix.region.S: no probability for 'N'"),
    ('{region = {N = {N = "x", S = 0.0}, S = {N = 0.0, S = 1.0}}}',
     r"matrix.region.N.N: not a number"),
    ('{region = 5}', r"matrix.region: give \{true = \{released = probability\}\}"),
    ('{sex = {"1" = {"1" = 1.0}}}', r"matrix.sex: 'sex' is not one of \[perturb\] variables"),
])
def test_perturb_matrix_errors_name_the_entry(sample, tmp_path, matrix, words):
    from tabprotect.errors import InputError
    sample.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "m.toml").write_text(
        '[microdata]\nfile = "s.csv"\nkeys = ["age", "sex", "region"]\n[perturb]\n'
        f'method = "pram"\nvariables = ["region"]\nseed = 1\nmatrix = {matrix}\n')
    with pytest.raises(InputError, match=r"m.toml \[perturb\] " + words):
        COMMANDS["perturb"][1](_args(job=str(tmp_path / "m.toml"), output=None, seed=None))


def test_perturb_matrix_given_in_full_is_the_one_applied(sample, tmp_path):
    # N kept, S always released as N: every S record reads N afterwards
    sample.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "m.toml").write_text(
        '[microdata]\nfile = "s.csv"\nkeys = ["age", "sex", "region"]\n[perturb]\n'
        'method = "pram"\nvariables = ["region"]\nseed = 1\nmatrix = {region = {'
        'N = {N = 1.0, S = 0.0, E = 0.0, W = 0.0}, S = {N = 1.0, S = 0.0, E = 0.0, W = 0.0}, '
        'E = {N = 0.0, S = 0.0, E = 1.0, W = 0.0}, W = {N = 0.0, S = 0.0, E = 0.0, W = 1.0}}}\n'
        '[output]\ndir = "out"\n')
    assert COMMANDS["perturb"][1](_args(job=str(tmp_path / "m.toml"), output=None,
                                        seed=None)) == 0
    out = pd.read_csv(tmp_path / "out" / "perturbed.csv")
    expected = sample["region"].replace({"S": "N"})
    assert (out["region"] == expected).all()

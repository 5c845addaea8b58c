"""What the public outputs (summary.json, trail.json, published.csv) of a method that
changes values keep to themselves: a random method's seed (with it an intruder repeats the
draws; for random rounding that bounds each cell's remainder, shown here from the published
file and the draws alone) and how many cells changed (none changed is every cell exact)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tabprotect.cli import main

SEED = 918273645

ROUND_JOB = """[input]
cells = "cells.csv"
dimensions = ["r", "c"]
compute_totals = true
kind = "frequency"

[hierarchies.r]
codes = ["r1", "r2", "r3"]

[hierarchies.c]
codes = ["a", "b", "c"]

[round]
base = 10
method = "random"
seed = {seed}
"""

PERTURB_JOB = """[microdata]
file = "micro.csv"
keys = ["region", "sex"]

[perturb]
method = "pram"
variables = ["sex"]
d = 0.8
seed = {seed}
"""

CELLKEY_JOB = """[microdata]
file = "micro.csv"
dimensions = ["region", "sex"]

[cellkey]
D = 2
V = 1.0
seed = {seed}
"""


def test_random_rounding_seed_is_not_published(tmp_path, capsys):
    rows = [f"r{i},{c},{v},{v}" for i, vals in enumerate([[13, 27, 4], [8, 51, 16],
                                                           [33, 2, 19]], start=1)
            for c, v in zip("abc", vals)]
    (tmp_path / "cells.csv").write_text("r,c,value,freq\n" + "\n".join(rows) + "\n")
    (tmp_path / "job.toml").write_text(ROUND_JOB.format(seed=SEED))
    assert main(["round", str(tmp_path / "job.toml"), "-o", str(tmp_path / "out")]) == 0
    assert f"seed: {SEED}" in capsys.readouterr().out      # the operator's terminal
    out = tmp_path / "out"
    for name in ("summary.json", "trail.json", "published.csv"):
        assert str(SEED) not in (out / name).read_text(), name
    trail = json.loads((out / "trail.json").read_text())
    assert trail["parameters"]["round"]["seed"].startswith("withheld")
    # why: with the seed, each cell's uniform draw and its published value bound the true
    # value more tightly than the rounding base (up: remainder > u * base; down: <= u * base)
    pub = pd.read_csv(out / "published.csv", dtype=str)
    cells = pd.read_csv(out / "cells.csv", dtype={"r": str, "c": str})
    u = np.random.default_rng(SEED).random(len(pub))
    true = cells["value"].to_numpy(float)
    rounded = pub["value"].to_numpy(float)
    low = np.floor(true / 10) * 10
    up = rounded > low
    remainder = true - low
    assert np.all(np.where(up, remainder > u * 10, remainder <= u * 10 + 1e-9))


def test_pram_and_cellkey_seeds_are_not_published(tmp_path, capsys):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"region": rng.choice(["N", "S", "E"], 60),
                          "sex": rng.choice(["f", "m"], 60)})
    frame.to_csv(tmp_path / "micro.csv", index=False)
    for command, job in (("perturb", PERTURB_JOB), ("cellkey", CELLKEY_JOB)):
        (tmp_path / f"{command}.toml").write_text(job.format(seed=SEED))
        folder = tmp_path / command
        assert main([command, str(tmp_path / f"{command}.toml"), "-o", str(folder),
                     "--quiet"]) == 0
        for name in ("summary.json", "trail.json"):
            text = (folder / name).read_text()
            assert str(SEED) not in text, (command, name)
            assert "n_changed" not in text and "cells_changed" not in text, (command, name)
    capsys.readouterr()


def test_rounding_summary_does_not_count_unchanged_cells(tmp_path, capsys):
    # every count a multiple of the base: the rounded table is the true one
    (tmp_path / "cells.csv").write_text("r,c,value,freq\nr1,a,10,10\nr1,b,20,20\n"
                                        "r2,a,30,30\nr2,b,40,40\n")
    job = ROUND_JOB.format(seed=0).replace('codes = ["r1", "r2", "r3"]', 'codes = ["r1", "r2"]')
    job = job.replace('codes = ["a", "b", "c"]', 'codes = ["a", "b"]')
    (tmp_path / "job.toml").write_text(job.replace('method = "random"\nseed = 0',
                                                   'method = "controlled"'))
    assert main(["round", str(tmp_path / "job.toml"), "-o", str(tmp_path / "out"),
                 "--quiet"]) == 0
    capsys.readouterr()
    cells = pd.read_csv(tmp_path / "out" / "cells.csv")
    assert (cells["published"] == cells["value"]).all()
    for name in ("summary.json", "trail.json"):
        assert "changed_cells" not in (tmp_path / "out" / name).read_text()


def test_cellkey_summary_does_not_count_changed_cells(tmp_path, capsys):
    frame = pd.DataFrame({"region": ["N"] * 9 + ["S"] * 3, "sex": list("fm") * 6})
    frame.to_csv(tmp_path / "micro.csv", index=False)
    job = CELLKEY_JOB.format(seed=SEED) + "\n[rules.frequency]\nn = 3\n"
    (tmp_path / "job.toml").write_text(job)
    assert main(["cellkey", str(tmp_path / "job.toml"), "-o", str(tmp_path / "out"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert " changed;" in out                              # the operator's terminal
    assert "[rules] are not applied" in out                 # the rules protect nothing here
    for name in ("summary.json", "trail.json"):
        assert "cells_changed" not in (tmp_path / "out" / name).read_text()

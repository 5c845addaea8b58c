"""The peer benchmark's table generator (``benchmarks/peer_variants.py``), run as a script:
one seed gives the same files every time, another seed other files, and the files build
tables of the shapes the script states."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tabprotect.model import Hierarchy, Table

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "peer_variants.py"
FILES = ("enterprise/micro.csv.gz", "enterprise/region.hrc", "enterprise/industry.hrc",
         "counts/cnt-2d.csv", "counts/cnt-3d.csv")


def generate(seed: int, out: Path) -> tuple[dict, dict]:
    """Run the script with tiny shapes; its printed shapes and each file's digest."""
    p = subprocess.run([sys.executable, str(SCRIPT), str(seed), "--out", str(out), "--tiny"],
                       capture_output=True, text=True, check=True)
    digests = {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in FILES}
    return json.loads(p.stdout), digests


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("variants")
    return {name: (base / name, *generate(seed, base / name))
            for name, seed in (("a", 5), ("again", 5), ("other", 6))}


def test_same_seed_same_files_other_seed_other_files(runs):
    _, shapes, digests = runs["a"]
    assert runs["again"][1:] == (shapes, digests)
    other = runs["other"][2]
    assert other["enterprise/micro.csv.gz"] != digests["enterprise/micro.csv.gz"]
    assert other["counts/cnt-2d.csv"] != digests["counts/cnt-2d.csv"]


def test_enterprise_tables_have_the_stated_cells(runs):
    folder, shapes, _ = runs["a"]
    ent = folder / "enterprise"
    micro = pd.read_csv(ent / "micro.csv.gz", dtype={"region": str, "industry": str,
                                                      "size": str})
    assert len(micro) == shapes["enterprise"]["enterprises"]
    assert (micro["turnover"] >= 1).all()
    hs = {d: Hierarchy.from_hrc((ent / f"{d}.hrc").read_text(), total="Total")
          for d in ("region", "industry")}
    hs["size"] = Hierarchy.flat(sorted(micro["size"].unique()), total="Total")
    for dims, key in ((("region", "industry"), "cells_2d"),
                      (("region", "industry", "size"), "cells_3d")):
        frame = micro.groupby(list(dims), as_index=False)["turnover"].sum()
        table = Table.from_frame(frame.rename(columns={"turnover": "value"}),
                                 {d: hs[d] for d in dims}, compute_totals=True)
        assert table.n_cells == shapes["enterprise"][key]


@pytest.mark.parametrize("dims", [2, 3])
def test_count_tables_have_the_stated_cells(runs, dims):
    folder, shapes, _ = runs["a"]
    leaves = pd.read_csv(folder / "counts" / f"cnt-{dims}d.csv", dtype=str)
    names = [f"dim{k + 1}" for k in range(dims)]
    hs = {d: Hierarchy.from_columns(leaves, [f"grp{k + 1}", d], total="Total")
          for k, d in enumerate(names)}
    frame = leaves[names + ["freq"]].astype({"freq": float})
    table = Table.from_frame(frame, hs, value="freq", freq="freq", compute_totals=True,
                             kind="frequency")
    shape = shapes[f"cnt-{dims}d"]
    assert table.n_cells == shape["cells"]
    assert len(leaves) == pd.Series([sum(g) for g in shape["groups"]]).prod()
    assert leaves["freq"].astype(int).between(0, 40).all()

"""Benchmark: tabulating 1M and 10M microdata records, pandas path vs file (duckdb) path.

Table: region (3 levels, 150 leaves) x industry (3 levels, 200 leaves) x size class (4) ->
181 x 261 x 5 = 236,205 cells, every level; response = turnover, top-3 contributions.
Each measurement runs in a fresh subprocess, so its peak memory (max RSS) is its own:

* ``pandas``  : ``tabulate(frame, ...)`` on an in-memory DataFrame (codes as categoricals);
  the peak includes the frame itself;
* ``duckdb``  : ``tabulate("records.parquet", ...)`` (one GROUP BY pass in duckdb);
* ``duckdb-csv`` (1M only): the same from a CSV file.

Usage::

    python benchmarks/bench_tabulate.py                  # 1M and 10M, writes results table
    python benchmarks/bench_tabulate.py --sizes 1000000 --threads 1
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "fixtures"))

REGION_FANOUT = (5, 5, 6)
NACE_FANOUT = (10, 5, 4)


def hierarchies():
    from generate import nace_codes, region_codes

    from tabprotect.model import Hierarchy
    region = Hierarchy.from_levels(region_codes(REGION_FANOUT), [2, 3, 4], name="region")
    nace = Hierarchy.from_levels(nace_codes(NACE_FANOUT), [1, 3, 4], name="nace")
    size = Hierarchy.flat(["S1", "S2", "S3", "S4"], name="size")
    return {"region": region, "nace": nace, "size": size}


def make_records(n: int, seed: int = 1) -> pd.DataFrame:
    """Vectorised synthetic survey (same shape as fixtures/generate.py, fast for 10M)."""
    from generate import nace_codes, region_codes
    rng = np.random.default_rng(seed)
    regions = region_codes(REGION_FANOUT)
    naces = nace_codes(NACE_FANOUT)
    region = pd.Categorical.from_codes(rng.integers(0, len(regions), n), categories=regions)
    nace_p = rng.dirichlet(np.ones(len(naces)))
    nace = pd.Categorical.from_codes(rng.choice(len(naces), n, p=nace_p), categories=naces)
    employment = np.minimum(np.floor(1 + rng.pareto(1.3, n) * 3), 5000)
    size = pd.Categorical.from_codes(np.searchsorted([10, 50, 250], employment, side="right"),
                                     categories=["S1", "S2", "S3", "S4"])
    turnover = np.round(employment * rng.lognormal(4.5, 0.9, n), 1)
    return pd.DataFrame({"region": region, "nace": nace, "size": size, "turnover": turnover})


def worker(mode: str, n: int, path: str | None, threads: int) -> dict:
    from tabprotect.tabulate import tabulate
    dims = hierarchies()
    if mode == "pandas":
        frame = make_records(n)
        rss_input = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.perf_counter()
        table = tabulate(frame, dims, "turnover", top_k=3, engine="memory")
    else:
        rss_input = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.perf_counter()
        table = tabulate(path, dims, "turnover", top_k=3, engine="duckdb", threads=threads)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"mode": mode, "records": n, "cells": table.n_cells, "seconds": round(seconds, 2),
            "peak_mib": round(peak), "input_mib": round(rss_input),
            "total": float(table.value[0]), "top1": float(table.top[0, 0])}


def run_child(mode: str, n: int, path: str | None, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", mode, "--n", str(n), "--threads", str(threads)]
    if path:
        cmd += ["--path", path]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--threads", type=int, default=2, help="duckdb threads")
    ap.add_argument("--workdir", default="/tmp/tabprotect_bench_tabulate")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results" / "tabulate.md"))
    ap.add_argument("--worker")
    ap.add_argument("--n", type=int)
    ap.add_argument("--path")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.path, args.threads)))
        return 0
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        parquet = work / f"records_{n}.parquet"
        if not parquet.exists():
            make_records(n).to_parquet(parquet, index=False)
        runs = [("pandas", None), ("duckdb", str(parquet))]
        if n <= 1_000_000:
            csv = work / f"records_{n}.csv"
            if not csv.exists():
                make_records(n).to_csv(csv, index=False)
            runs.append(("duckdb-csv", str(csv)))
        results = {}
        for mode, path in runs:
            r = run_child("pandas" if mode == "pandas" else "duckdb", n, path, args.threads)
            r["mode"] = mode
            results[mode] = r
            rows.append(r)
            print(f"{n:>10,d} {mode:<11} {r['seconds']:7.2f} s  peak {r['peak_mib']:6d} MiB  "
                  f"(input {r['input_mib']} MiB)  cells {r['cells']:,d}", flush=True)
        ref = results["pandas"]
        for mode, r in results.items():
            assert abs(r["total"] - ref["total"]) <= 1e-9 * abs(ref["total"]), mode
            assert r["top1"] == ref["top1"], mode
    write_results(rows, args)
    return 0


def write_results(rows: list[dict], args) -> None:
    path = Path(args.results)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Tabulation benchmark (tabprotect.tabulate)",
        "",
        f"Command: `python benchmarks/bench_tabulate.py --sizes {args.sizes} "
        f"--threads {args.threads}`  ",
        f"Machine: {platform.machine()}, 2 cores, 24 GiB RAM, Python "
        f"{platform.python_version()}; date {date.today().isoformat()}  ",
        "Table: region (3 levels, 150 leaves) x industry (3 levels, 200 leaves) x size "
        "class (4): 236,205 cells with every total and subtotal; response turnover, top-3 "
        "contributions per cell. Each run is a fresh process; peak = max RSS of that process "
        "(the pandas run includes its in-memory input frame, `input` is the RSS before "
        "tabulating). The totals and largest contributions of both paths are checked equal.",
        "",
        "| records | path | seconds | peak MiB | input MiB |",
        "|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['records']:,d} | {r['mode']} | {r['seconds']:.2f} | "
                     f"{r['peak_mib']:,d} | {r['input_mib']:,d} |")
    lines.append("")
    path.write_text("\n".join(lines) + "\n")
    print(f"results written to {path}")


if __name__ == "__main__":
    raise SystemExit(main())

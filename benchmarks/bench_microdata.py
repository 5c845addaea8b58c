"""Microdata benchmark: 10M records x 8 keys.

Times (wall clock, one run each after generating the data):
  1. key frequencies (f_k, weighted F^_k, sample uniques, k-anonymity),
  2. individual risk (approximate form) from those frequencies,
  3. main-effects log-linear risk (Skinner & Shlomo, closed form),
  4. PRAM of one variable (50 categories) over all records.

Targets: 1-3 together under 60 s; 4 under 10 s (2 cores).

Usage::

    python benchmarks/bench_microdata.py [--n 10000000] [--seed 1]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tabprotect.microdata import individual_risk, key_frequencies, loglinear_risk, pram  # noqa: E402

# (name, number of categories, skew) of the 8 keys
KEYS = [("sex", 2, 0.0), ("age", 100, 0.5), ("region", 50, 1.0), ("marital", 6, 1.0),
        ("education", 10, 0.5), ("occupation", 30, 1.0), ("citizenship", 5, 2.0), ("hhsize", 8, 1.0)]


def make_data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {}
    for name, L, skew in KEYS:
        w = 1.0 / np.arange(1, L + 1) ** skew
        cols[name] = rng.choice(L, size=n, p=w / w.sum()).astype(np.int16)
    cols["w"] = rng.uniform(5.0, 200.0, n)
    return pd.DataFrame(cols)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    t = time.perf_counter()
    df = make_data(a.n, a.seed)
    gen = time.perf_counter() - t
    keys = [k for k, _, _ in KEYS]
    pi = float(len(df) / df["w"].sum())
    times = {}
    t = time.perf_counter()
    fr = key_frequencies(df, keys, weights="w")
    times["key frequencies"] = time.perf_counter() - t
    t = time.perf_counter()
    ir = individual_risk(fr, method="approx")
    times["individual risk"] = time.perf_counter() - t
    t = time.perf_counter()
    ll = loglinear_risk(df, keys, pi, model="main")
    times["log-linear risk (main effects)"] = time.perf_counter() - t
    t = time.perf_counter()
    pr = pram(df, "region", d=0.8, seed=3)
    times["PRAM of one variable (50 categories)"] = time.perf_counter() - t
    risk_total = times["key frequencies"] + times["individual risk"] + times["log-linear risk (main effects)"]
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"numpy {np.__version__}, pandas {pd.__version__}")
    print(f"records {len(df):,}, keys {len(keys)}, data generation {gen:.1f} s")
    print(f"combinations {len(fr.combinations):,}; sample uniques {fr.n_sample_uniques:,}; "
          f"k=3 violations {fr.k_anonymity_violations(3):,}")
    print(f"expected re-identifications {ir.expected_reidentifications:,.1f}; log-linear tau1 "
          f"{ll.tau1:,.1f}, tau2 {ll.tau2:,.1f} (pi = {pi:.4f}); PRAM changed {pr.n_changed['region']:,}")
    print("| step | seconds |\n|---|---|")
    for k, v in times.items():
        print(f"| {k} | {v:.2f} |")
    print(f"| frequencies + individual + log-linear (target < 60) | {risk_total:.2f} |")
    ok = risk_total < 60 and times["PRAM of one variable (50 categories)"] < 10
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

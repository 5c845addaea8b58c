"""Census benchmark: record keys + targeted swapping + three linked tables + cell key.

Synthetic census microdata: ``--n`` persons (default 10 million) in households of 1-6
persons, a three-level geography (regions > districts > municipalities, municipality sizes
skewed), five key variables (sex, age group, marital status, education, occupation; all
categorical).  Steps, each timed (wall clock, one process):

  1. record keys (``add_record_keys``);
  2. targeted swapping of households (``swap_targeted``: risk on sex x age group x marital
     status at every level, k = 3, rate 5%, partners of the same household size);
  3. three linked tables tabulated with their key sums (``tabulate_keys``): geography x sex x
     age group, geography x marital status x education, geography x occupation;
  4. the cell key method on each (D = 3, V = 2, js = 2).

Each step is timed twice: wall clock and the process's CPU time (user + system); on a
machine shared with other work the CPU time is the cost of the step, the wall clock also
counts the waiting.  It checks that a cell shared by the three tables (every geography total) is published with
one value, that the swap kept the persons per municipality, and reports the peak resident
memory.  Targets: under 2 minutes and 4 GiB for 10 million persons.

Usage::

    python benchmarks/bench_census.py [--n 10000000] [--seed 1]
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tabprotect.cellkey import CellKeySettings, add_record_keys, perturb, tabulate_keys  # noqa: E402
from tabprotect.cellkey.ptable import count_ptable  # noqa: E402
from tabprotect.microdata import TargetedSwapSettings, swap_targeted  # noqa: E402
from tabprotect.model import Hierarchy  # noqa: E402

N_REGIONS, N_DISTRICTS, N_MUNIS = 10, 10, 20      # per parent: 10 x 10 x 20 = 2000 areas
KEYS = {"sex": 2, "age_group": 21, "marital": 4, "education": 5, "occupation": 10}


def _cat(codes: np.ndarray, labels: list[str]) -> pd.Categorical:
    return pd.Categorical.from_codes(codes.astype(np.int16), categories=labels)


def make_data(n: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """Persons in households; the geography as three categorical level columns."""
    rng = np.random.default_rng(seed)
    size = rng.choice(np.arange(1, 7), size=int(n / 2.4) + 10,
                      p=[.30, .33, .15, .13, .06, .03])
    size = size[: np.searchsorted(np.cumsum(size), n) + 1]
    hh = np.repeat(np.arange(size.size, dtype=np.int32), size)[:n]
    n_areas = N_REGIONS * N_DISTRICTS * N_MUNIS
    w = 1.0 / np.arange(1, n_areas + 1) ** 0.8
    area_hh = rng.permutation(n_areas)[rng.choice(n_areas, size=size.size, p=w / w.sum())]
    area = area_hh[hh]
    g3_labels = [f"M{r}{d}{m:02d}" for r in range(N_REGIONS) for d in range(N_DISTRICTS)
                 for m in range(N_MUNIS)]
    g2_labels = [f"D{r}{d}" for r in range(N_REGIONS) for d in range(N_DISTRICTS)]
    g1_labels = [f"R{r}" for r in range(N_REGIONS)]
    cols = {"hh": hh,
            "geo1": _cat(area // (N_DISTRICTS * N_MUNIS), g1_labels),
            "geo2": _cat(area // N_MUNIS, g2_labels),
            "geo3": _cat(area, g3_labels)}
    for name, L in KEYS.items():
        p = 1.0 / np.arange(1, L + 1) ** 0.7
        cols[name] = _cat(rng.choice(L, size=n, p=p / p.sum()), [f"{name[0]}{i}" for i in range(L)])
    pairs = [("Total", g) for g in g1_labels]
    pairs += [(f"R{r}", f"D{r}{d}") for r in range(N_REGIONS) for d in range(N_DISTRICTS)]
    pairs += [(f"D{r}{d}", f"M{r}{d}{m:02d}") for r in range(N_REGIONS)
              for d in range(N_DISTRICTS) for m in range(N_MUNIS)]
    hier = {"geo3": Hierarchy.from_pairs(pairs, name="geo3")}
    for name, L in KEYS.items():
        hier[name] = Hierarchy.flat([f"{name[0]}{i}" for i in range(L)], total="T", name=name)
    return pd.DataFrame(cols), hier


class _Clock:
    """``with clock(step):`` records [wall seconds, CPU seconds] of the step."""

    def __init__(self, times: dict):
        self.times = times

    def __call__(self, step: str) -> "_Clock":
        self.step = step
        return self

    def __enter__(self):
        self.t = (time.perf_counter(), time.process_time())

    def __exit__(self, *exc):
        self.times[self.step] = [time.perf_counter() - self.t[0],
                                 time.process_time() - self.t[1]]


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    data, hier = make_data(a.n, a.seed)
    print(f"data: {len(data):,} persons, {data.hh.nunique():,} households, "
          f"{time.perf_counter() - t0:.1f} s to generate; python {platform.python_version()}")
    times: dict[str, list[float]] = {}
    clock = _Clock(times)

    with clock("record keys"):
        data = add_record_keys(data, "rkey", seed=a.seed)

    with clock("targeted swap"):
        settings = TargetedSwapSettings(levels=("geo1", "geo2", "geo3"),
                                        risk_variables=("sex", "age_group", "marital"),
                                        k=3, swap_rate=0.05, similar=("household_size",),
                                        household="hh", seed=a.seed)
        swapped = swap_targeted(data, settings)
    s = swapped.summary()
    print(f"swap: {s['households_moved']:,} of {s['households']:,} households moved "
          f"(rate {s['rate']:.3f}), pairs per level {s['pairs_per_level']}, "
          f"unmatched {s['unmatched_at_risk']}")
    print(swapped.risk.to_string(index=False))
    released = swapped.data
    del data, swapped

    specs = [("geo3", "sex", "age_group"), ("geo3", "marital", "education"),
             ("geo3", "occupation")]
    ck = CellKeySettings(D=3, V=2.0, js=2)
    pt = count_ptable(3, 2.0, 2)
    results, tables = [], []
    with clock("three linked tables (tabulate with key sums)"):
        for dims in specs:
            tables.append(tabulate_keys(released, {d: hier[d] for d in dims}, engine="memory"))
    with clock("cell key on the three tables"):
        for table in tables:
            results.append(perturb(table, settings=ck, ptable=pt))

    # a geography total is a cell of all three tables: one published value
    geo = hier["geo3"].codes
    firsts = []
    for res, dims in zip(results, specs):
        tb = res.table
        totals = ["T"] * (len(dims) - 1)
        firsts.append(np.array([res.published[tb.cell(g, *totals)] for g in geo]))
    consistent = all((f == firsts[0]).all() for f in firsts)
    cells = sum(r.table.n_cells for r in results)
    off = [r.non_additivity()["share_off"] for r in results]
    wall = sum(v[0] for v in times.values())
    cpu = sum(v[1] for v in times.values())
    print(f"tables: {cells:,} cells in all; geography totals identical in the three tables: "
          f"{consistent}; share of relations off: {', '.join(f'{x:.3f}' for x in off)}")
    print(f"  {'step':45s} {'wall s':>8s} {'cpu s':>8s}")
    for k, (w, c) in times.items():
        print(f"  {k:45s} {w:8.1f} {c:8.1f}")
    print(f"  {'total':45s} {wall:8.1f} {cpu:8.1f}   (target < 120 s)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"peak resident memory: {peak_gib():.2f} GiB   (target < 4 GiB)")
    return 0 if consistent else 1


if __name__ == "__main__":
    sys.exit(main())

"""The optimal method's witness prune on one pattern, two code trees in the same run.

The table is an everyday case of ``bench_peers.py`` (default: ``ent-2d-p-opt``, the
962-cell 2-D p% table); the pattern is a protected one with spare suppressions: the
``gauss`` method's pattern plus a seeded share of the other candidate cells.  Each code
tree (``--code``, e.g. this checkout and a ``git worktree`` of an older commit) prunes
that pattern with ``witness_prune`` in a fresh process; the table shows the seconds, the
attacker LPs HiGHS ran, the suppressions left and their cost (the decisions are exact,
so equal code paths leave the same pattern), and whether the independent audit passes.

    python benchmarks/bench_optimal_prune.py --code . ../base-checkout
"""
from __future__ import annotations

import argparse
import json
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, pickle, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from tabprotect.secondary.optimal.prune import witness_prune
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.attacker_oracle import AttackerOracle
table, pattern, cost = pickle.load(open(sys.argv[2], "rb"))
req = Requirements.from_table(table, singleton=False)
oracle = AttackerOracle(table, req)
fixed = np.isin(table.status, ("U", "M"))
import cProfile, pstats
prof = cProfile.Profile()
t0 = time.perf_counter()
prof.enable()
out = witness_prune(oracle, pattern, fixed, cost, None)
prof.disable()
secs = time.perf_counter() - t0
lps = sum(v[1] for k, v in pstats.Stats(prof).stats.items()
          if k[0] == "~" and "highspy._core.run" in k[2])
print(json.dumps({"seconds": secs, "lps": lps, "left": int(out.sum()),
                  "cost": float(cost[out & ~fixed].sum()),
                  "pattern": out.tolist()}))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", nargs="+", default=[str(HERE.parent)],
                    help="code trees to compare (each pruned in its own process)")
    ap.add_argument("--case", default="ent-2d-p-opt", help="a bench_peers.py case")
    ap.add_argument("--extra", type=float, default=0.15,
                    help="share of the other candidate cells added to the pattern")
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "benchmarks" /
                                         "peers"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))
    import numpy as np
    from benchmarks.bench_peers import CASES, write_inputs
    from tabprotect import pipeline
    from tabprotect.audit import audit
    from tabprotect.io.job import load_job
    from tabprotect.secondary import cost_vector, protect
    from tabprotect.secondary.candidates import candidate_cells
    case = next(c for c in CASES if c.name == args.case)
    with tempfile.TemporaryDirectory() as tmp:
        job = write_inputs(case, Path(args.data), Path(tmp) / "job")
        table = pipeline.run(load_job(job), task="primary").table
        res = protect(table, method="gauss", cost="value", singleton=False)
        start = np.isin(res.status, ("U", "M"))
        rng = np.random.default_rng(0)
        cand = candidate_cells(table, "publish")
        pattern = start | (cand & (rng.random(table.n_cells) < args.extra))
        cost = cost_vector(table, "value")
        blob = Path(tmp) / "case.pkl"
        blob.write_bytes(pickle.dumps((table, pattern, cost)))
        print(f"{args.case}: {table.n_cells} cells, pattern of {int(pattern.sum())} "
              f"suppressions (gauss: {int(start.sum())})")
        print("| code | seconds | attacker LPs | suppressions left | cost | audit |")
        print("|---|---:|---:|---:|---:|---|")
        for code in args.code:
            p = subprocess.run([sys.executable, "-c", CHILD, str(Path(code).resolve()),
                                str(blob)], capture_output=True, text=True)
            if p.returncode != 0:
                print(f"| {code} | failed: {p.stderr.strip().splitlines()[-1][:120]} |")
                continue
            row = json.loads(p.stdout.strip().splitlines()[-1])
            st = table.status.copy()
            st[np.array(row["pattern"]) & (st != "U")] = "M"
            ok = audit(table.replace(status=st)).passed
            print(f"| {code} | {row['seconds']:.2f} | {row['lps']} | {row['left']} | "
                  f"{row['cost']:,.0f} | {'PASSED' if ok else 'FAILED'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

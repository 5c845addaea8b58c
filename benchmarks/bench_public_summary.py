"""The public summary's check (:func:`tabprotect.public_summary.public_summary`) on the
protected tables of the peers' cases, this code tree against a base tree in the same run.

The CLI writes the public summary after every suppression run; each value figure is
checked as one more published equation against every primary's interval, which costs
LPs. The case's table is protected once (this tree's ``pipeline.run`` of the job that
``bench_peers.py`` writes), then each tree's ``public_summary`` runs on that same pattern
in a new process, without a time limit (``--time-limit``: with one, as the CLI's budget
gives it), ``--repeat`` times in turn (median wall and CPU seconds). Without a time limit
the released figures of the two trees must be the same (each is exact).

    python benchmarks/bench_public_summary.py --data ../shared/benchmarks/peers \\
        --cases ent-3d-p-mod ent-2d-p-mod --base BASE --out benchmarks/results/x.md
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

CHILD = """
import json, pickle, sys, time
from tabprotect.public_summary import public_summary
table, status = pickle.load(open(sys.argv[1], "rb"))
limit = None if sys.argv[2] == "none" else float(sys.argv[2])
w, c = time.perf_counter(), time.process_time()
out = public_summary(table, status, time_limit=limit)
print(json.dumps({"wall": time.perf_counter() - w, "cpu": time.process_time() - c,
                  "figures": out}))
"""


def protected(case_name: str, data: Path, work: Path, seeds=()) -> Path:
    """The case's table and pattern from this tree's pipeline, pickled (a seeded
    variant's case, ``v<seed>-<kind>``, from its generated tables)."""
    import bench_peers
    from tabprotect import pipeline
    cases = bench_peers.CASES + bench_peers.variant_cases(list(seeds), work)
    case = next(c for c in cases if c.name == case_name)
    if case.data:
        data = Path(case.data)
    job = bench_peers.write_inputs(case, data, work / case_name)
    run = pipeline.run(str(job))
    path = work / f"{case_name}.pkl"
    path.write_bytes(pickle.dumps((run.published, run.status)))
    return path


def summary(tree: Path, pkl: Path, time_limit: float | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    limit = "none" if time_limit is None else str(time_limit)
    out = subprocess.run([sys.executable, "-c", CHILD, str(pkl), limit], env=env, check=True,
                         capture_output=True, text=True, cwd=str(pkl.parent))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the peers' folder")
    ap.add_argument("--cases", nargs="+", default=["ent-3d-p-mod", "ent-2d-p-mod"])
    ap.add_argument("--variants", type=int, nargs="*", default=[], metavar="SEED",
                    help="also the seeded variants' cases (bench_peers.py --variants)")
    ap.add_argument("--base", type=Path, required=True, help="a second code tree")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tree (median)")
    ap.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                    help="the checks' time limit (default none; the CLI gives half the "
                         "run's seconds, at least 2)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    trees = {"base": args.base.resolve(), "this": ROOT}
    lines = ["| case | cells | primaries | this s (CPU) | base s (CPU) | ratio (CPU) |"
             " same figures | released | withheld | base withheld |",
             "|---|---:|---:|---:|---:|---:|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases:
            pkl = protected(name, args.data, Path(tmp), args.variants)
            runs = {k: [] for k in trees}
            for _ in range(args.repeat):
                for key, tree in trees.items():
                    runs[key].append(summary(tree, pkl, args.time_limit))
            med = {k: (statistics.median(r["wall"] for r in v),
                       statistics.median(r["cpu"] for r in v)) for k, v in runs.items()}
            figs = {k: v[-1]["figures"] for k, v in runs.items()}
            same = figs["this"] == figs["base"]
            released = [k for k in figs["this"] if k not in
                        ("cells", "primary", "secondary", "suppressed", "withheld")]
            lines.append(
                f"| {name} | {figs['this']['cells']} | {figs['this']['primary']} | "
                f"{med['this'][0]:.2f} ({med['this'][1]:.2f}) | "
                f"{med['base'][0]:.2f} ({med['base'][1]:.2f}) | "
                f"{med['base'][1] / max(med['this'][1], 1e-9):.2f} | {same} | "
                f"{', '.join(released)} | {', '.join(figs['this']['withheld']) or '-'} | "
                f"{', '.join(figs['base']['withheld']) or '-'} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""protect() warm on a peer benchmark table, stage by stage, for before/after runs.

The table is a bench_peers case: a count case (primaries 0 < count <= 2, upper protection
1, sliding protection 2, single-contributor attack on, cost = frequency) or a magnitude
case (its job's primary rules applied to the microdata, outside intruder, cost = value,
as bench_peers runs it); the call is timed after a warm-up of the same method on a small
table, in one process per code tree:

    python benchmarks/bench_protect_warm.py --code . --code /path/to/old/checkout \\
        --methods gauss hypercube
    python benchmarks/bench_protect_warm.py --code . --case ent-2d-p-mod --methods modular
    python benchmarks/bench_protect_warm.py --code . --case cnt-3d --methods gauss \\
        --milp-repair auto on off

``--milp-repair`` runs each method once per value of ``MilpRepairSettings.enabled``
(``auto``, ``on``, ``off``; ``default`` leaves the tree's default), back to back, each in
its own process (each pays the same first-call costs), and adds the cells the
audit-and-repair loop added and the pattern's cost.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


#: --milp-repair values: MilpRepairSettings.enabled (None: the tree's default)
MILP_REPAIR = {"default": None, "auto": "auto", "on": True, "off": False}


def child(code: str, case_name: str, data: Path, methods: list[str],
          milp: list[str]) -> None:
    """(child process) The warm calls with ``code`` on the path; one JSON line each."""
    sys.path.insert(0, code)
    sys.path.insert(0, str(HERE))
    import bench_peers as bp
    from tabprotect.model.synthetic import preset
    from tabprotect.secondary import protect
    case = next(c for c in bp.CASES if c.name == case_name)
    if case.kind == "counts":
        t, cost, singleton = bp.count_table(case, data), "freq", True
    else:
        from tabprotect import pipeline
        with tempfile.TemporaryDirectory() as work:
            t = pipeline.run(bp.write_inputs(case, data, Path(work)), task="primary").table
        cost, singleton = "value", False
    small = preset("2d-small", seed=1)
    for method in methods:
        # gauss runs so small a table as plain Python: ask for the compiled kernel
        compiled = {"kernel": "compiled"} if method == "gauss" else {}
        protect(small, method=method, singleton=False, time_limit=60, **compiled)
        for name in milp:
            settings = None
            if MILP_REPAIR[name] is not None:
                from tabprotect.secondary import ProtectSettings
                from tabprotect.secondary.milp_repair import MilpRepairSettings
                settings = ProtectSettings(
                    milp_repair=MilpRepairSettings(enabled=MILP_REPAIR[name]))
            c0, t0 = time.process_time(), time.perf_counter()
            res = protect(t, method=method, cost=cost, singleton=singleton,
                          time_limit=case.time_limit, settings=settings)
            print(json.dumps({"method": method, "milp_repair": name,
                              "wall": time.perf_counter() - t0,
                              "cpu": time.process_time() - c0, "secondary": res.n_secondary,
                              "repaired": int(len(res.repaired)), "cost": res.cost,
                              "passed": res.passed, "stages": res.stage_seconds}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", action="append", default=[], help="a tabprotect code tree")
    ap.add_argument("--case", default="cnt-2d", help="a case of bench_peers")
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "benchmarks" /
                                          "peers"))
    ap.add_argument("--methods", nargs="+", default=["gauss", "hypercube"])
    ap.add_argument("--milp-repair", nargs="+", choices=sorted(MILP_REPAIR),
                    default=["default"], help="MilpRepairSettings.enabled values to run")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.case, Path(args.data), args.methods, args.milp_repair)
        return 0
    if not args.code:
        ap.error("give at least one --code")
    print("| code | method | MILP repair | wall s | CPU s | secondaries | added by repair "
          "| cost | protect()'s audit | stages (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for code, milp in [(c, m) for c in args.code for m in args.milp_repair]:
        code = str(Path(code).resolve())
        p = subprocess.run([sys.executable, __file__, "--child", code, "--case", args.case,
                            "--data", args.data, "--methods", *args.methods,
                            "--milp-repair", milp],
                           env=dict(os.environ, PYTHONPATH=code), cwd=code,
                           capture_output=True, text=True, check=True)
        label = subprocess.run(["git", "-C", code, "rev-parse", "--short", "HEAD"],
                               capture_output=True, text=True).stdout.strip() or code
        for line in p.stdout.splitlines():
            r = json.loads(line)
            stages = ", ".join(f"{k} {v:.2f}" for k, v in r["stages"].items())
            print(f"| {label} | {r['method']} | {r['milp_repair']} | {r['wall']:.2f} | "
                  f"{r['cpu']:.2f} | {r['secondary']} | {r['repaired']} | {r['cost']:,.0f} | "
                  f"{'PASSED' if r['passed'] else 'FAILED'} | {stages} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

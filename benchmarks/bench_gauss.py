"""gauss (Langsrud) method alone: the current code against a baseline revision, same run.

Each (table, variant) runs in a child process with a wall-clock timeout; the baseline is
``tabprotect/secondary/gauss.py`` as of a git revision (``git show REV:...``), loaded as a
stand-alone module, so both variants see the same table and the same cost (``value``).
A run that hits the timeout reports how many candidates it had offered by then.  The
pattern hash says whether the variants suppressed exactly the same cells.

Usage::

    python benchmarks/bench_gauss.py --tables 10k-4d 100k-4d --variants baseline current \\
        --baseline-rev 2242125 --timeout 300

``--protect``: gauss through ``protect()`` end to end instead (``cost="value"``,
``time_limit=1500`` for the whole call, ``audit_workers=--workers``), one row per
table with the verdict, the cost and the seconds of every stage (method, cube pass,
audits, repair rounds); ``--code DIR`` runs another code tree (e.g. ``git archive REV``
unpacked), so before/after runs need no baseline module::

    python benchmarks/bench_gauss.py --protect --tables 1m-3d --workers 2 --timeout 900
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def load_variant(variant: str, rev: str, current_rev: str | None = None):
    """The gauss module: the working tree's (``current``, or ``current_rev``'s) or the
    baseline revision's."""
    if variant == "current":
        if current_rev is None:
            from tabprotect.secondary import gauss as module
            return module
        rev = current_rev
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:tabprotect/secondary/gauss.py"],
                         check=True, capture_output=True, text=True).stdout
    # the registry refuses a second "gauss": register the baseline under another name
    src = src.replace('@register_method("gauss")', f'@register_method("gauss_{variant}")')
    path = Path(tempfile.mkdtemp()) / f"gauss_{variant}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("gauss_baseline", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def protect_child(args) -> None:
    """protect() end to end in this process (``--code``: that tree's tabprotect)."""
    if args.code:
        # that tree's tabprotect and gen_tables (the table must be of its Table class)
        code = Path(args.code).resolve()
        sys.path[:0] = [str(code / "benchmarks"), str(code)]
        for name in [m for m in sys.modules if m in ("tabprotect", "gen_tables") or
                     m.startswith("tabprotect.")]:
            del sys.modules[name]
    import numpy as np
    import gen_tables
    from tabprotect.secondary import protect

    assert args.code is None or str(Path(args.code).resolve()) in protect.__code__.co_filename
    t0 = time.perf_counter()
    table = gen_tables.preset(args.table, seed=args.seed)
    load_s = time.perf_counter() - t0
    start = time.perf_counter()
    res = protect(table, method="gauss", cost="value", time_limit=1500.0,
                  singleton=args.singleton, audit_workers=args.workers)
    seconds = time.perf_counter() - start
    sec = res.status == "M"
    row = {"table": args.table, "variant": "protect", "cells": table.n_cells,
           "code": args.code or str(ROOT), "singleton": args.singleton,
           "workers": args.workers, "primaries": int((table.status == "U").sum()),
           "load_s": round(load_s, 2), "seconds": round(seconds, 1),
           "method_s": round(res.method_seconds, 1), "passed": bool(res.passed),
           "audit_mode": res.audit.mode, "repaired": int(len(res.repaired)),
           "secondaries": int(sec.sum()), "cost": float(res.cost),
           "stages": getattr(res, "stage_seconds", {}),
           "pattern": hashlib.sha1(np.flatnonzero(sec).tobytes()).hexdigest()[:10],
           "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
           "loadavg_end": round(os.getloadavg()[0], 2)}
    print(json.dumps(row), flush=True)


def child(args) -> None:
    if args.protect:
        protect_child(args)
        return
    import numpy as np
    import gen_tables

    module = load_variant(args.variant, args.baseline_rev, args.current_rev)
    offers = [0]
    if hasattr(module, "_Eliminator"):  # the dict-based elimination (revisions before the compiled kernel)
        original_offer = module._Eliminator.offer

        def counting_offer(self, v, force=False):
            offers[0] += 1
            return original_offer(self, v, force)

        module._Eliminator.offer = counting_offer
    # (the array kernel counts its offers itself: details["offers"]; no progress)

    def report_progress():  # read by the parent if the run is killed
        while True:
            time.sleep(5)
            print(json.dumps({"progress_offers": offers[0],
                              "progress_s": round(time.perf_counter() - start, 1)}),
                  file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    table = gen_tables.preset(args.table, seed=args.seed)
    load_s = time.perf_counter() - t0
    cost = table.value.copy()
    start = time.perf_counter()
    cpu_start = time.process_time()
    threading.Thread(target=report_progress, daemon=True).start()
    # (a baseline without the workers option takes it in **options and ignores it)
    out = module.gauss(table, cost, singleton=args.singleton, workers=args.workers)
    seconds = time.perf_counter() - start
    if "offers" in out.details:
        offers[0] = out.details["offers"]
    sec = out.status == "M"
    row = {"table": args.table, "variant": args.variant, "cells": table.n_cells,
           "singleton": args.singleton, "workers": args.workers,
           "primaries": int((table.status == "U").sum()), "load_s": round(load_s, 2),
           "method_s": round(seconds, 2),
           "method_cpu_s": round(time.process_time() - cpu_start, 2), "offers": offers[0],
           "secondaries": int(sec.sum()), "value_secondary": float(table.value[sec].sum()),
           "pattern": hashlib.sha1(np.flatnonzero(sec).tobytes()).hexdigest()[:10],
           "forced_disclosures": out.details.get("forced_disclosures"),
           "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if args.save_status:
        np.save(Path(args.save_status) / f"gauss_{args.table}_status.npy", out.status)
    print(json.dumps(row), flush=True)


def measure(table: str, variant: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", "--table", table, "--variant", variant,
           "--baseline-rev", args.baseline_rev, "--seed", str(args.seed)]
    if args.current_rev:
        cmd += ["--current-rev", args.current_rev]
    if args.singleton:
        cmd.append("--singleton")
    cmd += ["--workers", str(args.workers)]
    if args.protect:
        cmd.append("--protect")
    if args.code:
        cmd += ["--code", args.code]
    if args.save_status:
        cmd += ["--save-status", args.save_status]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONHASHSEED": "0"})
    try:
        out, err = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        progress = [json.loads(x) for x in err.splitlines() if x.startswith('{"progress')]
        last = progress[-1] if progress else {}
        return {"table": table, "variant": variant,
                "killed_at_s": round(time.perf_counter() - t0, 1),
                "offers_done": last.get("progress_offers"),
                "offers_at_s": last.get("progress_s")}
    rows = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not rows:
        return {"table": table, "variant": variant, "error": err.strip().splitlines()[-1:]}
    return rows[-1]


def to_markdown(rows: list[dict]) -> str:
    if rows and all(r.get("variant") == "protect" and "stages" in r for r in rows):
        lines = ["| table | cells | primaries | total s | stages (s) | verdict | repaired "
                 "| secondaries | cost | peak MB |", "|" + "---|" * 10]
        for r in rows:
            stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items())
            lines.append(f"| {r['table']} | {r['cells']:,} | {r['primaries']:,} "
                         f"| {r['seconds']:.1f} | {stages} "
                         f"| {'PASSED' if r['passed'] else 'FAILED'} | {r['repaired']:,} "
                         f"| {r['secondaries']:,} | {r['cost']:,.0f} | {r['peak_mb']:,.0f} |")
        return "\n".join(lines)
    head = ("| table | cells | primaries | variant | method s | offers | secondaries "
            "| value of secondaries | pattern | peak MB |")
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        if "killed_at_s" in r:
            lines.append(f"| {r['table']} | | | {r['variant']} | killed at "
                         f"{r['killed_at_s']:.0f} s ({r['offers_done']} offers in "
                         f"{r['offers_at_s']} s) | | | | | |")
        elif "error" in r:
            lines.append(f"| {r['table']} | | | {r['variant']} | error: {r['error']} "
                         "| | | | | |")
        else:
            cpu = f" (cpu {r['method_cpu_s']:.2f})" if "method_cpu_s" in r else ""
            lines.append(
                f"| {r['table']} | {r['cells']:,} | {r['primaries']:,} | {r['variant']} "
                f"| {r['method_s']:.2f}{cpu} | {r['offers']:,} | {r['secondaries']:,} "
                f"| {r['value_secondary']:,.0f} | {r['pattern']} | {r['peak_mb']:,.0f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", default=["10k-4d", "100k-4d"])
    ap.add_argument("--variants", nargs="+", default=["baseline", "current"],
                    choices=["baseline", "current"])
    ap.add_argument("--baseline-rev", default="2242125",
                    help="git revision of the baseline gauss.py (default: the elimination "
                         "before the in-place updates)")
    ap.add_argument("--current-rev", help="git revision for 'current' (default: the "
                    "working tree)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--singleton", action="store_true",
                    help="singleton=True (two eliminations); default False as bench_scale")
    ap.add_argument("--workers", type=int, default=1,
                    help="gauss workers (2: the singleton pass's eliminations in parallel)")
    ap.add_argument("--jsonl", help="append the rows to this file")
    ap.add_argument("--protect", action="store_true",
                    help="gauss through protect() end to end (stage times, verdict)")
    ap.add_argument("--code", help="with --protect: root of the code tree to run")
    ap.add_argument("--save-status", help="method alone: save each pattern (status "
                    "array) as DIR/gauss_<table>_status.npy")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--table", help=argparse.SUPPRESS)
    ap.add_argument("--variant", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return
    rows = []
    if args.protect:
        args.variants = ["current"]
    for table in args.tables:
        for variant in args.variants:
            row = measure(table, variant, args)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.jsonl:
                with open(args.jsonl, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
    print(to_markdown(rows))


if __name__ == "__main__":
    main()

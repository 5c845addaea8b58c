"""``tabprotect protect JOB.toml``: primary rules + secondary suppression + audit.

Runs the job through the pipeline (:func:`tabprotect.pipeline.run`, task ``protect``) and
writes the outputs of docs/jobs.md into the output folder: ``published.csv`` when the
audit passed (``UNSAFE-not-for-publication.csv`` and exit code 1 when it did not),
``cells.csv``, ``audit.csv``, ``summary.json``, ``trail.json`` (and ``report.html`` with
``--report``).
"""
from __future__ import annotations

import argparse

from tabprotect.commands.common import add_job_arguments, execute

EXAMPLES = """  tabprotect protect job.toml                          rules, suppression, audit
  tabprotect protect job.toml --time-limit 60          best pattern within 60 s (audited)
  tabprotect protect job.toml --method modular --cost unity -o out/modular
  tabprotect protect job.toml --no-singleton           outside intruders only
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_job_arguments(p, "TOML job file: [input] (or [microdata]), [rules] or a status "
                      "column with U cells, optional [protect]")
    p.add_argument("--method", help="secondary method (overrides [protect] method)")
    p.add_argument("--cost", help="unity, freq, value, log or column (overrides [protect])")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds for the secondary method (the best pattern is audited)")
    p.add_argument("--no-singleton", action="store_true",
                   help="outside intruders only ([protect] singleton = false)")
    p.add_argument("--report", action="store_true", help="also write report.html")


def run(args) -> int:
    overrides = {"protect": {"method": args.method, "cost": args.cost,
                             "time_limit": args.time_limit,
                             "singleton": False if args.no_singleton else None}}
    result, code = execute(args, "protect", task="protect", overrides=overrides,
                           report=args.report)
    print_summary(result)
    return code


def print_summary(result) -> None:
    """Counts and the verdict of a protection run (no cell value)."""
    status = result.status
    r = result.results
    print(f"cells: {result.table.n_cells}   primary: {int((status == 'U').sum())}   "
          f"secondary: {int((status == 'M').sum())}   method: {result.method}")
    if r and result.kind == "adjustment":
        gap = "" if r.get("proven_optimal") or r.get("mip_gap") is None \
            else f" (gap {r['mip_gap']:.2%})"
        print(f"optimal: {'proven' if r.get('proven_optimal') else 'not proven'}{gap}   "
              f"solver: {r.get('solver_status')}   weighted {r.get('distance')} distance "
              f"{r.get('objective'):.6g}   changed cells: {r.get('changed_cells')}   "
              f"{r.get('seconds', 0):.2f} s")
        if r.get("seed") is not None:
            print(f"seed: {r['seed']}   (the secret margin's draws; keep it with the report)")
    elif r:
        gap = "" if r.get("proven_optimal") or r.get("mip_gap") is None \
            else f" (gap {r['mip_gap']:.2%})"
        print(f"optimal: {'proven' if r.get('proven_optimal') else 'not proven'}{gap}   "
              f"solver: {r.get('solver_status')}   method {r.get('method_seconds', 0):.2f} s, "
              f"audit {r.get('audit_seconds', 0):.2f} s   repaired: {r.get('repaired', 0)}")
    for note in result.notes:
        print(f"note: {note}")


COMMANDS = {"protect": (add_arguments, run, "primary rules + secondary suppression + audit: "
                        "write the publishable table", EXAMPLES)}

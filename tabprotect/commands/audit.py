"""``tabprotect audit JOB.toml``: feasibility intervals of a suppressed table."""
from __future__ import annotations

import argparse
import sys


from tabprotect.audit import audit
from tabprotect.errors import InputError
from tabprotect.io.job import build_table, load_job, write_frame

EXAMPLES = """  tabprotect audit job.toml                  status column of the cells file says U/M
  tabprotect audit job.toml --integer        integer intervals (frequency tables)
  tabprotect audit job.toml --singleton      also attack as each single contributor
  tabprotect audit job.toml --published-only-margins   audit "only margins published"
  tabprotect audit job.toml --verdict-only --workers 2   large patterns: verdict only
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="TOML job file ([input] with a status column)")
    p.add_argument("-o", "--output", help="output CSV/Parquet (default: <output.dir>/audit.csv)")
    p.add_argument("--integer", action="store_true", default=None,
                   help="integer min/max (default for frequency tables)")
    p.add_argument("--singleton", action="store_true",
                   help="also audit against each single-contributor attacker")
    p.add_argument("--published-only-margins", action="store_true",
                   help="treat every inner cell as unpublished")
    p.add_argument("--time-limit", type=float, default=None, help="seconds for the audit")
    p.add_argument("--verdict-only", action="store_true",
                   help="decide only whether each primary cell is protected (much faster on "
                        "large patterns; intervals are exact only where flagged)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes for independent components (default 1)")
    p.add_argument("--all-cells", action="store_true", help="write every cell, not only "
                   "the unpublished ones")


def run(args) -> int:
    job = load_job(args.job)
    table = build_table(job)
    opts = job.section("audit")
    unpublished = None
    if args.published_only_margins or opts.get("published") == "margins":
        unpublished = table.is_inner.copy()
    elif table.status is not None and not table.suppressed.any():
        raise InputError(f"{job.label}: no suppressed cells (status U or M) to audit; give a "
                         f"status column in [input] or --published-only-margins")
    progress = _progress if sys.stderr.isatty() else None
    res = audit(table, unpublished=unpublished,
                integer=args.integer if args.integer is not None else opts.get("integer"),
                singleton=args.singleton or bool(opts.get("singleton", False)),
                time_limit=args.time_limit or opts.get("time_limit"), progress=progress,
                mode="verdict" if args.verdict_only or opts.get("mode") == "verdict"
                else "intervals",
                workers=int(args.workers or opts.get("workers", 1)))
    frame = res.to_frame(table, only_unpublished=not args.all_cells)
    out = write_frame(frame, job.output_dir() / "audit.csv" if not args.output
                      else __import__("pathlib").Path(args.output))
    print_summary(res, table)
    print(f"intervals written to {out}")
    return 0 if res.passed else 1


def print_summary(res, table) -> None:
    s = res.summary()
    print(f"cells: {table.n_cells}   unpublished: {s['unpublished']}   "
          f"primary: {s['primary']}")
    print(f"audit: {'PASSED' if res.passed else 'FAILED'}   unprotected primary cells: "
          f"{s['unprotected_primary']}   exactly disclosed: {s['exactly_disclosed']}")
    print(f"LPs solved: {s['lp_solved']} (skipped {s['lp_skipped']}) in {s['components']} "
          f"component(s), {s['seconds']:.2f} s")
    if s["mode"] == "verdict":
        print(f"verdict mode: {s['certified_by_witness']} primary cells proven protected "
              f"by feasible tables found, without an LP of their own")
    bad = res.shortfalls[:5]
    for i in bad:
        print(f"  not protected: {table.cell_name(i)}")


def _progress(done: int, total: int) -> None:
    print(f"\raudit: component {done}/{total}", end="" if done < total else "\n",
          file=sys.stderr)


COMMANDS = {"audit": (add_arguments, run, "audit a suppressed table: feasibility intervals "
                      "and protection verdict", EXAMPLES)}


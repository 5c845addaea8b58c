"""``tabprotect primary JOB.toml``: apply the sensitivity rules of a job.

Reads the table (``[input] cells`` or ``[microdata]``), applies ``[rules]`` and writes every
cell with its value, freq, status, reason and protection levels to
``<output.dir>/primary.csv``, plus ``primary_summary.csv`` (cells per rule).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tabprotect.errors import InputError
from tabprotect.io.job import build_table, load_job, write_frame

EXAMPLES = """  tabprotect primary job.toml                   all cells -> out/primary.csv
  tabprotect primary job.toml --only-unsafe     only the unsafe cells
  tabprotect primary job.toml -o cells.parquet  another output file (CSV or Parquet)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="TOML job file with [rules] and [input] or [microdata]")
    p.add_argument("-o", "--output", help="output CSV/Parquet (default: "
                   "<output.dir>/primary.csv)")
    p.add_argument("--only-unsafe", action="store_true", help="write only the unsafe cells")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def run(args) -> int:
    from tabprotect.primary import apply_rules, rules_from_job
    job = load_job(args.job)
    if "rules" not in job.spec:
        raise InputError(f"{job.label}: no [rules] section (e.g. [rules.frequency] n = 3)")
    rules = rules_from_job(job)
    if not rules:
        raise InputError(f"{job.label}: [rules] names no rule")
    say = None if args.quiet or not sys.stderr.isatty() else \
        (lambda msg: print(f"tabulate: {msg}", file=sys.stderr))
    table = build_table(job, progress=say)
    result = apply_rules(table, rules)
    frame = result.to_frame(only_unsafe=args.only_unsafe)
    top_cols = []
    if table.top is not None:
        for j in range(table.top.shape[1]):
            frame[f"top{j + 1}"] = table.top[:, j] if not args.only_unsafe \
                else table.top[result.unsafe, j]
            top_cols.append(f"top{j + 1}")
    out = Path(args.output) if args.output else job.output_dir() / "primary.csv"
    write_frame(frame, out)
    summary = result.summary()
    summary_path = write_frame(summary, out.with_name(out.stem + "_summary.csv"))
    print(f"table: {table.n_cells} cells ({table.kind}), "
          f"{int(result.unsafe.sum())} primary unsafe, "
          f"{int((result.table.status == 'Z').sum())} empty")
    width = max(len(r) for r in summary["rule"])
    print(f"{'rule':<{width}}  cells  first  only")
    for row in summary.itertuples(index=False):
        print(f"{row.rule:<{width}}  {row.cells:5d}  {row.first_reason:5d}  "
              f"{row.only_reason:4d}")
    print(f"cells written to {out}; summary to {summary_path}")
    return 0


COMMANDS = {"primary": (add_arguments, run, "apply sensitivity rules (frequency, dominance, "
                        "p%, pq, request, zero, manual): unsafe cells and protection levels",
                        EXAMPLES)}

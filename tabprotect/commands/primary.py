"""``tabprotect primary JOB.toml``: apply the sensitivity rules of a job.

Reads the table (``[input] cells`` or ``[microdata]``), applies ``[rules]`` (pipeline task
``primary``) and writes every cell with its value, freq, status, reason and protection
levels to ``primary.csv``, plus ``summary.json`` and ``trail.json``.
"""
from __future__ import annotations

import argparse

from tabprotect.commands.common import add_job_arguments, execute
from tabprotect.errors import InputError


EXAMPLES = """  tabprotect primary job.toml                   all cells -> out/primary.csv
  tabprotect primary job.toml -o results        another output folder
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_job_arguments(p, "TOML job file with [rules] and [input] or [microdata]")


def run(args) -> int:
    from tabprotect.io.job import load_job
    job = load_job(args.job)
    if "rules" not in job.spec:
        raise InputError(f"{job.label}: no [rules] section (e.g. [rules.frequency] n = 3)")
    result, code = execute(args, "primary", task="primary", job=job)
    summary = result.rules.summary_rows()
    table = result.table
    print(f"table: {table.n_cells} cells ({table.kind}), "
          f"{int((table.status == 'U').sum())} primary unsafe, "
          f"{int((table.status == 'Z').sum())} empty")
    width = max(len(r["rule"]) for r in summary)
    print(f"{'rule':<{width}}  cells  first  only")
    for row in summary:
        print(f"{row['rule']:<{width}}  {row['cells']:5d}  {row['first_reason']:5d}  "
              f"{row['only_reason']:4d}")
    return code


COMMANDS = {"primary": (add_arguments, run, "apply sensitivity rules (frequency, dominance, "
                        "p%, pq, request, zero, manual): unsafe cells and protection levels",
                        EXAMPLES)}

"""``tabprotect cellkey JOB.toml`` and ``tabprotect swap JOB.toml`` (docs/census.md).

``cellkey`` runs the pipeline's cell key task: targeted swapping when the job has
``[swap]``, record keys where the microdata has none, the ``[microdata]`` table and the
``[cellkey] tables`` perturbed with one ptable; it writes ``published.csv`` (every table,
a ``table`` column naming it), ``cells.csv`` (confidential), ``ptable.txt``,
``perturbed.csv`` (the records as released with their keys, when it swapped or added keys),
``summary.json`` and ``trail.json``.  ``swap`` swaps only: ``perturbed.csv``, the summary
and the trail.
"""
from __future__ import annotations

import json

from tabprotect.commands.common import add_job_arguments, execute

CELLKEY_EXAMPLES = """  tabprotect cellkey job.toml                    [microdata], [cellkey] (and [swap])
  tabprotect cellkey job.toml --restore-additivity   additive published counts
"""
SWAP_EXAMPLES = """  tabprotect swap job.toml                       [microdata] and [swap]
  tabprotect swap job.toml --seed 7              override [swap] seed
"""


def add_cellkey_arguments(p) -> None:
    add_job_arguments(p, "TOML job file with [microdata] and [cellkey]")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of added record keys (overrides [cellkey] seed)")
    p.add_argument("--restore-additivity", action="store_true",
                   help="publish the least-cost additive counts within the ptable's range")


def run_cellkey(args) -> int:
    keys = {}
    if args.seed is not None:
        keys["seed"] = args.seed
    if args.restore_additivity:
        keys["restore_additivity"] = True
    result, code = execute(args, "cellkey", task="cellkey",
                           overrides={"cellkey": keys} if keys else None)
    s = result.results["cellkey"]
    for t in s["tables"]:
        add = t["additivity"]
        line = (f"table {t['name']}: {t['cells']} cells, {t['cells_changed']} changed; "
                f"relations off {add['off']} of {add['relations']} "
                f"(largest deviation {add['largest_deviation']:g})")
        if "restored" in t:
            line += f"; additivity restored: {t['restored']['status']}"
            before = t["restored"].get("additivity_before")
            if before is not None:
                line += f" (before: {before['off']} relations off)"
        print(line)
    if "swap" in s:
        sw = s["swap"]
        census = getattr(result, "census", None)
        seed = f"seed {census.swap.settings.seed}; " if census is not None else ""
        print(f"swap: {seed}{sw['households_moved']} of {sw['households']} households moved "
              f"(rate {sw['rate']:.3f})")
    for note in result.notes:
        print(f"  note: {note}")
    return code


def add_swap_arguments(p) -> None:
    add_job_arguments(p, "TOML job file with [microdata] and [swap]")
    p.add_argument("--seed", type=int, default=None, help="random seed (overrides [swap] seed)")


def run_swap(args) -> int:
    from tabprotect.census import swap_job
    from tabprotect.io.job import load_job
    from tabprotect.io.results import (jsonable, public_swap, trail_record, without_secrets,
                                       write_files)
    job = load_job(args.job)
    if args.seed is not None:
        job = job.merged({"swap": {"seed": args.seed}})
    if "swap" not in job.spec:
        from tabprotect.errors import InputError
        raise InputError(f"{job.label}: no [swap] section")
    data, res = swap_job(job)
    full = jsonable(res.summary())           # the terminal's; summary.json withholds counts
    summary = without_secrets(public_swap(full, job.section("swap").get("publish_counts",
                                                                         False)))
    folder = job.output_folder(args.output)
    files = write_files(folder, {"perturbed": data}, {"summary": json.dumps(summary, indent=2)},
                        lambda staged: trail_record(job.label, job.input_files(), job.spec,
                                                    staged, summary),
                        inputs=job.input_files())
    print(f"swap: seed {res.settings.seed}; {full['households_moved']} of "
          f"{full['households']} households moved "
          f"(rate {full['rate']:.3f}); at-risk records still in place per level: "
          + ", ".join(f"{r['level']} {r['at_risk_before']} -> {r['at_risk_after']}"
                      for r in full["risk"]))
    for key, path in files.items():
        print(f"{key}: {path}")
    return 0


COMMANDS = {
    "cellkey": (add_cellkey_arguments, run_cellkey,
                "the cell key method on tables of microdata (after targeted swapping with "
                "[swap])", CELLKEY_EXAMPLES),
    "swap": (add_swap_arguments, run_swap,
             "targeted record swapping of households across a geographic hierarchy",
             SWAP_EXAMPLES),
}

"""``tabprotect round JOB.toml`` and ``tabprotect audit-rounded JOB.toml``.

The job's ``[round]`` section (see docs/rounding.md)::

    [round]
    base = 5
    method = "controlled"      # deterministic | random | controlled | small-count
    seed = 12345               # random rounding (drawn and reported when absent)
    k_step = 1                 # controlled: allow the K-step relaxation when needed
    threshold = 3              # small-count: counts below it are rounded
    margins_from_interior = false   # random: totals = sums of rounded inner cells
    weights = "unity"          # controlled: unity | relative
    partition = "auto"         # controlled: auto | true | false
    time_limit = 300           # seconds for the solver
    audit = true               # round: also audit the rounded table
    published = "all"          # audit: all | margins (what the intruder sees)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from tabprotect.errors import InputError
from tabprotect.io.job import Job, build_hierarchy, build_table, load_job, write_frame
from tabprotect.model import Table, read_frame

ROUND_EXAMPLES = """  tabprotect round job.toml                     method and base from [round]
  tabprotect round job.toml --method random --seed 7 --base 3
  tabprotect round job.toml --k-step 1          allow the K-step relaxation (3+ dimensions)
  tabprotect round job.toml --no-audit          skip the rounded-table audit
"""
AUDIT_EXAMPLES = """  tabprotect audit-rounded job.toml             [input] cells hold the published rounded values
  tabprotect audit-rounded job.toml --published margins   only the margins are published
  tabprotect audit-rounded job.toml --method deterministic --base 10
"""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="TOML job file with [input] and [round]")
    p.add_argument("--base", type=int, default=None, help="rounding base (overrides [round])")
    p.add_argument("--method", default=None,
                   choices=["deterministic", "random", "controlled", "small-count"],
                   help="rounding method (overrides [round])")
    p.add_argument("--k-step", type=int, default=None,
                   help="controlled: extra steps allowed when zero-restricted is infeasible")
    p.add_argument("--threshold", type=int, default=None, help="small-count threshold")
    p.add_argument("--published", choices=["all", "margins"], default=None,
                   help="audit: which cells the intruder sees")
    p.add_argument("--time-limit", type=float, default=None, help="solver seconds")
    p.add_argument("-o", "--output-dir", default=None, help="output folder "
                   "(default: [output] dir)")


def add_round_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--seed", type=int, default=None, help="random rounding seed")
    p.add_argument("--no-audit", action="store_true", help="do not audit the rounded table")
    p.add_argument("--report", action="store_true",
                   help="also write report.html and its JSON audit trail (report.json)")


def add_audit_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--flagged-only", action="store_true",
                   help="write only cells flagged narrower / exact / pinned")


def _options(job: Job, args) -> dict:
    spec = dict(job.section("round"))
    for key in ("base", "method", "k_step", "threshold", "published", "time_limit", "seed"):
        val = getattr(args, key, None)
        if val is not None:
            spec[key] = val
    if "base" not in spec:
        raise InputError(f"{job.label}: give the rounding base ([round] base = 5 or --base)")
    known = {"base", "method", "seed", "k_step", "threshold", "margins_from_interior",
             "weights", "partition", "time_limit", "mip_gap", "audit", "published",
             "step_penalty", "small_max"}
    unknown = set(spec) - known
    if unknown:
        raise InputError(f"{job.label} [round]: unknown key(s) {sorted(unknown)} "
                         f"(known: {', '.join(sorted(known))})")
    return spec


def _published_mask(table: Table, spec: dict, label: str):
    which = spec.get("published", "all")
    if which == "all":
        return None
    if which == "margins":
        return ~table.is_inner
    raise InputError(f"{label} [round]: published must be 'all' or 'margins', not {which!r}")


def run_round(args) -> int:
    from tabprotect.rounding import round_table
    job = load_job(args.job)
    spec = _options(job, args)
    table = build_table(job)
    if np.any(np.abs(table.value - np.round(table.value)) > 1e-9):
        print("note: the table has non-integer values; they are rounded like counts, but "
              "the audit's integer intervals assume counts", file=sys.stderr)
    partition = spec.get("partition", "auto")
    res = round_table(
        table, spec["base"], spec.get("method", "controlled"), seed=spec.get("seed"),
        margins_from_interior=bool(spec.get("margins_from_interior", False)),
        weights=spec.get("weights"), k_step=int(spec.get("k_step", 0)),
        step_penalty=spec.get("step_penalty"), threshold=spec.get("threshold"),
        partition=partition, time_limit=spec.get("time_limit"), mip_gap=spec.get("mip_gap"),
        audit=False)
    out = job.output_dir(args.output_dir)
    written = [write_frame(res.publication_frame(), out / "rounded.csv"),
               write_frame(res.to_frame(), out / "rounding_detail.csv")]
    audit = None
    if not args.no_audit and spec.get("audit", True):
        from tabprotect.audit_rounded import audit_rounded
        audit = audit_rounded(res, published=_published_mask(table, spec, job.label),
                              small_max=int(spec.get("small_max", 2)))
        res.audit = audit
        written.append(write_frame(audit.to_frame(table), out / "rounded_audit.csv"))
    summary = {"rounding": res.summary(), "notes": res.notes,
               "audit": audit.summary() if audit else None,
               "audit_notes": audit.notes if audit else []}
    path = out / "rounding_summary.json"
    path.write_text(json.dumps(summary, indent=2, default=_json_default))
    written.append(path)
    _print_rounding(res)
    if audit is not None:
        _print_audit(audit)
    print("written: " + ", ".join(str(p) for p in written))
    if args.report:
        from tabprotect.report import Run, write_report
        html, trail = write_report(Run(table, title=job.spec.get("job", {}).get(
            "title", "tabprotect round"), kind="rounding", method=spec.get("method",
            "controlled"), rounded=res.rounded, audit=audit, parameters=job.spec), out)
        print(f"report written to {html} (audit trail {trail})")
    return 0 if audit is None or audit.passed else 1


def run_audit(args) -> int:
    from tabprotect.audit_rounded import audit_rounded
    job = load_job(args.job)
    spec = _options(job, args)
    table = published_table(job)
    method = spec.get("method", "controlled")
    audit = audit_rounded(table, base=spec["base"], method=method,
                          published=_published_mask(table, spec, job.label),
                          k_step=spec.get("k_step", 0), threshold=spec.get("threshold"),
                          margins_from_interior=spec.get("margins_from_interior"),
                          small_max=int(spec.get("small_max", 2)),
                          time_limit=spec.get("time_limit"))
    out = job.output_dir(args.output_dir)
    frame = audit.to_frame(table, only_flagged=args.flagged_only)
    p1 = write_frame(frame, out / "rounded_audit.csv")
    p2 = out / "rounded_audit_summary.json"
    p2.write_text(json.dumps({"audit": audit.summary(), "notes": audit.notes,
                              "base": spec["base"], "method": method}, indent=2,
                             default=_json_default))
    _print_audit(audit)
    print(f"written: {p1}, {p2}")
    return 0 if audit.passed else 1


def published_table(job: Job) -> Table:
    """The published (rounded) table of a job.

    Rounded tables need not be additive (deterministic or random rounding), so the
    structure comes from the inner rows and the published values of every cell are put
    in afterwards; with totals absent from the file they are computed (additive methods).
    """
    spec = job.section("input")
    label = f"{job.label} [input]"
    if "cells" not in spec:
        raise InputError(f"{label}: give 'cells' (the published rounded table)")
    dims = spec.get("dimensions")
    if not dims:
        raise InputError(f"{label}: give 'dimensions' (the code columns)")
    path = job.resolve(spec["cells"])
    frame = read_frame(path, dtype_str=dims)
    value = spec.get("value", "value")
    for col in list(dims) + [value]:
        if col not in frame.columns:
            raise InputError(f"{path.name}: column '{col}' not found")
    hierarchies = {d: build_hierarchy(job, d, frame[d]) for d in dims}
    leaf_rows = np.ones(len(frame), dtype=bool)
    for d, h in hierarchies.items():
        pos = h.lookup(frame[d].astype(str).str.strip())
        if (pos < 0).any():
            r = int(np.flatnonzero(pos < 0)[0])
            raise InputError(f"{path.name} row {r + 2}: the code in column '{d}' "
                             f"is not in its hierarchy")
        leaf_rows &= h.is_leaf[pos]
    base = Table.from_frame(frame[leaf_rows].reset_index(drop=True), hierarchies, value=value,
                            freq=None, compute_totals=True, kind="frequency", name=path.stem,
                            source=path.name)
    published = base.value.copy()
    pos = tuple(h.lookup(frame[d].astype(str).str.strip()) for d, h in hierarchies.items())
    flat = np.ravel_multi_index(pos, base.shape)
    vals = frame[value].to_numpy(dtype=float)
    if np.isnan(vals).any():
        r = int(np.flatnonzero(np.isnan(vals))[0])
        raise InputError(f"{path.name} row {r + 2}: missing value")
    published[flat] = vals
    return base.replace(value=published)


def _print_rounding(res) -> None:
    s = res.summary()
    print(f"rounding: {s['method']} to base {s['base']}  cells: {s['cells']}  "
          f"changed: {s['changed_cells']}")
    print(f"deviation: total {s['total_absolute_deviation']:g}  max "
          f"{s['max_absolute_deviation']:g}  additive: {s['additive']}  zero-restricted: "
          f"{s['zero_restricted']}  solver: {s['solver_path']}  {s['seconds']:.2f} s")
    if "seed" in res.params:
        print(f"seed: {res.params['seed']}")
    for n in res.notes:
        print(f"  note: {n}")


def _print_audit(audit) -> None:
    s = audit.summary()
    print(f"audit: {'PASSED' if audit.passed else 'FAILED'}  narrower than the method: "
          f"{s['narrower_than_method']}  exactly disclosed: {s['exactly_disclosed']}  "
          f"pinned small values: {s['pinned_small_values']}  ({s['lp_solved']} LPs, "
          f"{s['seconds']:.2f} s)")
    for n in audit.notes:
        print(f"  note: {n}")


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    return str(o)


COMMANDS = {
    "round": (add_round_arguments, run_round,
              "round a frequency table (deterministic, random, controlled, small-count) and "
              "audit the result", ROUND_EXAMPLES),
    "audit-rounded": (add_audit_arguments, run_audit,
                      "what an intruder can derive from a published rounded table",
                      AUDIT_EXAMPLES),
}

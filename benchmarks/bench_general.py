"""Loading and preparing general tables: Castro's tables (../shared/benchmarks/castro) read
from their cells + relations files, made additive, written to and read back from a JJ
file, and prepared for protection -- before and after the direct additivity repair, in the
same run.

Per table: "load lsqr s" and "load direct s" are ``load_castro(name, solver=...)`` (read
the CSVs, build the relations, make the values additive by the smallest relative change:
iterative LSQR per refinement step before, one sparse LU of the relations' normal
equations after); "max rel diff" is the largest relative difference between the two
additive value vectors; "JJ read s" is ``read_jj`` of the table written with
``write_jj`` (the job-file path: parse, build the relations, check additivity and
bounds); "structure s" is ``product_structure`` (recovering a product of hierarchies, or
finding there is none); "requirements s" is ``Requirements.from_table``.

Usage::

    python benchmarks/bench_general.py --out benchmarks/results/general.md
    python benchmarks/bench_general.py --tables TARGUS HIER13 --no-before
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.castro import CASTRO_TABLES, load_castro  # noqa: E402
from tabprotect.errors import InputError  # noqa: E402
from tabprotect.io.jj import read_jj, write_jj  # noqa: E402
from tabprotect.model.structure import product_structure  # noqa: E402
from tabprotect.secondary.repair import Requirements  # noqa: E402


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def measure(name: str, before: bool, folder: Path) -> dict:
    after, t_after = _timed(lambda: load_castro(name, solver="direct"))
    row = {"table": name, "cells": after.n_cells, "relations": after.n_relations,
           "load direct s": t_after,
           "residual": float(np.abs(after.relations @ after.value).max())}
    if before:
        old, t_old = _timed(lambda: load_castro(name, solver="lsqr"))
        row["load lsqr s"] = t_old
        row["max rel diff"] = float(np.max(np.abs(old.value - after.value)
                                           / np.maximum(1.0, np.abs(after.value))))
    path = write_jj(after, folder / f"{name}.jj")
    back, row["JJ read s"] = _timed(lambda: read_jj(path))
    assert back.n_cells == after.n_cells
    try:
        _, row["structure s"] = _timed(lambda: product_structure(after))
        row["structure"] = "product"
    except InputError:
        row["structure"] = "general"
        row["structure s"] = float("nan")
    _, row["requirements s"] = _timed(lambda: Requirements.from_table(after, singleton=True))
    return row


COLUMNS = ["table", "cells", "relations", "load lsqr s", "load direct s", "max rel diff",
           "residual", "JJ read s", "structure", "structure s", "requirements s"]


def _fmt(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "-"
        return f"{v:.2e}" if (v != 0 and (abs(v) < 1e-2 or abs(v) >= 1e4)) else f"{v:.2f}"
    return str(v)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="*", default=list(CASTRO_TABLES))
    ap.add_argument("--no-before", action="store_true", help="skip the LSQR loads")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tables:
            row = measure(name, not args.no_before, Path(tmp))
            rows.append(row)
            print("  ".join(f"{k}={_fmt(row.get(k, float('nan')))}" for k in COLUMNS),
                  flush=True)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_fmt(r.get(k, float("nan"))) for k in COLUMNS) + " |"
              for r in rows]
    table = "\n".join(lines)
    print(table)
    if args.out:
        cmd = "python benchmarks/bench_general.py " + " ".join(argv or sys.argv[1:])
        text = (f"# Loading and preparing general tables (`benchmarks/bench_general.py`)\n\n"
                f"{__doc__.split(chr(10) + chr(10), 1)[1].split('Usage::')[0].strip()}\n\n"
                f"Command: `{cmd}` (one process, single-threaded; both loads in the same "
                f"run).\n\n{table}\n")
        args.out.write_text(text)


if __name__ == "__main__":
    main()

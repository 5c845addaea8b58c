"""Where gauss's plain-Python elimination beats numba's in a new process.

A process's first compiled gauss call pays for importing numba and loading the cached
kernels; the plain-Python kernel pays nothing up front but runs many times slower. Each
table is protected in a new process per kernel (the table built first, untimed), and the
CPU seconds of the first ``gauss`` call are compared; the compiled kernel's second call
in the same process shows what the call costs once numba is loaded. Where the plain
first call is cheaper than the compiled first call, ``GaussOptions.python_below_cells``
should cover the table's size.

    python benchmarks/bench_gauss_kernel.py --data ../shared/benchmarks/peers \
        --tables cnt-2d cnt-3d 1k-3d 10k-3d --repeat 3

A table is a shared case (``cnt-2d``), a variant's case of ``bench_peers.py --variants``
(``v11-cnt-3d``), a preset of :mod:`tabprotect.model.synthetic` or a generated shape.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys, time
table_name, kernel, data, work = sys.argv[1:5]
if table_name.startswith(("cnt-", "v")):   # a shared case, or a variant's: "v11-cnt-3d"
    sys.path.insert(0, "BENCH")
    import bench_peers
    from pathlib import Path
    from tabprotect.io.job import build_table, load_job
    cases = bench_peers.CASES
    if table_name.startswith("v"):
        seed = int(table_name[1:].split("-")[0])
        cases = bench_peers.variant_cases([seed], Path(work))
    case = next(c for c in cases if c.name == table_name)
    folder = Path(case.data) if case.data else Path(data)
    job = load_job(bench_peers.write_inputs(case, folder, Path(work)))
    table = build_table(job)
elif table_name.startswith("("):   # a generated shape, e.g. "((4,4),(4,5),(6,))"
    import ast
    from tabprotect.model.synthetic import generate
    table = generate(ast.literal_eval(table_name), seed=1)
else:
    from tabprotect.model.synthetic import preset
    table = preset(table_name, seed=1)
from tabprotect.secondary.gauss.method import gauss
cost = table.value.astype(float) + 1.0
runs = []
for _ in range(2 if kernel == "compiled" else 1):
    c0 = time.process_time()
    out = gauss(table, cost, singleton=True, kernel=kernel)
    runs.append(time.process_time() - c0)
print(json.dumps({"cells": int(table.n_cells), "runs": runs,
                  "numba": "numba" in sys.modules,
                  "pattern": "".join(out.status.tolist())}))
"""


def child(table: str, kernel: str, data: str) -> dict:
    with tempfile.TemporaryDirectory() as work:
        code = CHILD.replace("BENCH", str(ROOT / "benchmarks"))
        p = subprocess.run([sys.executable, "-c", code, table, kernel, data, work],
                           env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT,
                           capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared/benchmarks/peers"))
    ap.add_argument("--tables", nargs="+", default=["cnt-2d", "cnt-3d", "1k-3d", "10k-3d"])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print("| table | cells | plain first call CPU s | compiled first call CPU s "
          "| compiled second call CPU s | same pattern |")
    print("|---|---:|---:|---:|---:|---|")
    for table in args.tables:
        plain, first, second, same = [], [], [], True
        for _ in range(args.repeat):
            a = child(table, "python", args.data)
            b = child(table, "compiled", args.data)
            assert not a["numba"], "the plain kernel imported numba"
            plain.append(a["runs"][0])
            first.append(b["runs"][0])
            second.append(b["runs"][1])
            same &= a["pattern"] == b["pattern"]
        med = statistics.median
        print(f"| {table} | {a['cells']:,} | {med(plain):.3f} | {med(first):.3f} "
              f"| {med(second):.3f} | {same} |", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark: tabulation and protection on a Dask cluster against one machine's engines.

(a) ``tabulate``: generated records (the table of bench_tabulate.py: 236,205 cells with
    every level, turnover, top-3) by pandas (in-memory frame), duckdb (one Parquet file)
    and dask (a folder of Parquet files, one partition per file of at most 1M records)
    on a ``LocalCluster`` of 2 worker processes of one thread; time and peak memory (max
    RSS of the process; for dask the peak of each worker, sampled every 0.1 s, and of the
    client process);
(b) ``protect``: a generated table protected with the audit's components in local
    worker processes (``audit_workers=2``) and on the cluster (``executor=client``, 2
    workers): time, number of tasks sent to the cluster, the same pattern and verdict;
(c) the dask tabulation with 1, 2 and 4 workers.

Each measurement runs in a fresh subprocess. Usage::

    python benchmarks/bench_dask.py --records 1000000,10000000 --table 100k-3d
    python benchmarks/bench_dask.py --skip-engines --skip-scaling --table 1k-3d \
        --method modular
    python benchmarks/bench_dask.py --skip-protect --records 1000000
    python benchmarks/bench_dask.py --skip-engines --skip-protect --records 10000000
"""
from __future__ import annotations

import argparse
import json
import os
import platform
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

PARTITION_RECORDS = 1_000_000


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class WorkerMemory:
    """Peak RSS of the cluster's worker processes, sampled in a thread."""

    def __init__(self, client):
        import psutil
        self.procs = {addr: psutil.Process(pid)
                      for addr, pid in client.run(os.getpid).items()}
        self.peak = {addr: 0 for addr in self.procs}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.stop.wait(0.1):
            for addr, proc in self.procs.items():
                try:
                    self.peak[addr] = max(self.peak[addr], proc.memory_info().rss)
                except Exception:  # noqa: BLE001 -- a worker that ended
                    pass

    def finish(self) -> list[int]:
        self.stop.set()
        self.thread.join()
        return sorted(round(v / 2**20) for v in self.peak.values())


def _cluster(workers: int):
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit="6GiB")
    return cluster, Client(cluster, set_as_default=False)


def _import_engine() -> None:
    import tabprotect.tabulate.dask_engine  # noqa: F401


def tabulate_child(engine: str, n: int, data: Path, workers: int) -> dict:
    from bench_tabulate import hierarchies, make_records

    from tabprotect.tabulate import tabulate
    dims = hierarchies()
    out: dict = {"engine": engine, "records": n, "workers": workers}
    if engine == "pandas":
        frame = make_records(n)
        out["input_mib"] = round(_rss_mib())
        start = time.perf_counter()
        table = tabulate(frame, dims, "turnover", top_k=3, engine="pandas")
    elif engine == "duckdb":
        start = time.perf_counter()
        table = tabulate(data / f"records_{n}.parquet", dims, "turnover", top_k=3,
                         engine="duckdb", threads=2)
    else:
        from distributed import get_task_stream

        from tabprotect.parallel import use_executor
        from tabprotect.parallel_dask import DaskExecutor
        t0 = time.perf_counter()
        cluster, client = _cluster(workers)
        # a running cluster has the package imported: the import is not timed
        client.run(_import_engine)
        out["startup_s"] = round(time.perf_counter() - t0, 2)
        memory = WorkerMemory(client)
        start = time.perf_counter()
        with use_executor(DaskExecutor(client)), get_task_stream(client) as stream:
            table = tabulate(data / f"dataset_{n}", dims, "turnover", top_k=3,
                             engine="dask")
        seconds = time.perf_counter() - start
        out["tasks"] = task_times(stream.data)
        out["worker_peak_mib"] = memory.finish()
        client.close()
        cluster.close()
        out["seconds"] = round(seconds, 2)
    out.setdefault("seconds", round(time.perf_counter() - start, 2))
    out["peak_mib"] = round(_rss_mib())
    out.update(cells=table.n_cells, total=float(table.value[0]),
               top1=float(table.top[0, 0]), freq=float(table.freq[0]))
    return out


def task_times(stream: list[dict]) -> dict:
    """Compute seconds of the partition and combine tasks, and the span from the first
    task's start to the last one's end."""
    out: dict = {"partition": [], "combine": []}
    first, last = float("inf"), 0.0
    for task in stream:
        kind = "partition" if "_partition" in str(task["key"]) else \
            "combine" if "_combine" in str(task["key"]) else None
        for step in task["startstops"]:
            first, last = min(first, step["start"]), max(last, step["stop"])
            if kind and step["action"] == "compute":
                out[kind].append(round(step["stop"] - step["start"], 3))
    out["span"] = round(last - first, 2) if out["partition"] else 0.0
    return out


def simulated_seconds(run: dict, workers: int, partitions: int | None = None) -> float:
    """The tabulation time on ``workers`` workers from one run's measured tasks: the
    partition tasks (``partitions`` of them, each of the measured mean time when given)
    scheduled longest first on the least loaded worker, then one combine per level of the
    tree (FAN_IN partials each), plus what the run spent outside its tasks (reading the
    metadata, assembling every level in the caller)."""
    import heapq

    from tabprotect.tabulate.dask_engine import FAN_IN
    times = run["tasks"]["partition"]
    if partitions is not None:
        times = [sum(times) / len(times)] * partitions
    load = [0.0] * workers
    for t in sorted(times, reverse=True):
        heapq.heapreplace(load, load[0] + t)
    levels, left = 0, len(times)
    while left > 1:
        left, levels = -(-left // FAN_IN), levels + 1
    combine = run["tasks"]["combine"]
    per_level = max(combine) if combine else 0.0
    outside = run["seconds"] - run["tasks"]["span"]
    return max(load) + levels * per_level + outside


def protect_child(mode: str, name: str, method: str) -> dict:
    import numpy as np

    from tabprotect.audit import audit
    from tabprotect.model import synthetic
    from tabprotect.parallel_dask import DaskExecutor
    from tabprotect.secondary import protect
    table = synthetic.preset(name, seed=0)
    out: dict = {"mode": mode, "table": name, "method": method, "cells": table.n_cells}
    if mode == "local":
        from tabprotect.secondary import METHODS
        # the same parallelism as the cluster run: the method's workers too, when it has
        # that option (protect(executor=) sets it to the cluster's worker count)
        extra = {"workers": 2} if "workers" in METHODS[method].valid_keys else {}
        start = time.perf_counter()
        res = protect(table, method=method, audit_workers=2, **extra)
    else:
        cluster, client = _cluster(2)
        client.run(_import_engine)

        class Counting(DaskExecutor):
            tasks = 0

            def map(self, fn, tasks, **kw):
                Counting.tasks += len(tasks)
                return super().map(fn, tasks, **kw)
        start = time.perf_counter()
        res = protect(table, method=method, executor=Counting(client))
        out["cluster_tasks"] = Counting.tasks
    out["seconds"] = round(time.perf_counter() - start, 1)
    out["passed"] = bool(res.passed)
    out["suppressed"] = int(np.isin(res.confidential_table.status, ("U", "M")).sum())
    out["pattern"] = np.flatnonzero(res.confidential_table.status == "M").tolist()
    check = audit(res.confidential_table, mode="verdict", workers=1)
    out["independent_audit"] = bool(check.passed)
    out["peak_mib"] = round(_rss_mib())
    return out


def child(args: list[str]) -> dict:
    cmd = [sys.executable, __file__, "--child", json.dumps(args)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def prepare(n: int, data: Path) -> None:
    """One Parquet file (pandas, duckdb) and a folder of 1M-record files (dask) of the
    same records."""
    from bench_tabulate import make_records
    single = data / f"records_{n}.parquet"
    folder = data / f"dataset_{n}"
    if single.exists() and folder.exists():
        return
    frame = make_records(n)
    frame.to_parquet(single, index=False)
    folder.mkdir(exist_ok=True)
    for i, start in enumerate(range(0, n, PARTITION_RECORDS)):
        frame.iloc[start:start + PARTITION_RECORDS].to_parquet(folder / f"part{i:03d}.parquet",
                                                             index=False)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", default="1000000,10000000")
    ap.add_argument("--scaling-records", type=int, default=None,
                    help="records of part (c) (default: the largest of --records)")
    ap.add_argument("--table", default="100k-3d", help="part (b): a synthetic preset")
    ap.add_argument("--method", default="hypercube")
    ap.add_argument("--skip-protect", action="store_true")
    ap.add_argument("--skip-engines", action="store_true", help="skip part (a)")
    ap.add_argument("--skip-scaling", action="store_true", help="skip part (c)")
    ap.add_argument("--data", help="folder for the generated records (default: temporary)")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        kind, *rest = json.loads(args.child)
        if kind == "tabulate":
            engine, n, data, workers = rest
            print(json.dumps(tabulate_child(engine, int(n), Path(data), int(workers))))
        else:
            print(json.dumps(protect_child(*rest)))
        return 0
    data = Path(args.data or tempfile.mkdtemp(prefix="tabprotect-bench-dask-"))
    data.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.records.split(",")]
    print(f"{platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f}")
    print("(a) tabulation")
    for n in ([] if args.skip_engines else sizes):
        prepare(n, data)
        ref = None
        for engine in ("pandas", "duckdb", "dask"):
            r = child(["tabulate", engine, n, str(data), 2])
            ref = ref or r
            same = (abs(r["total"] - ref["total"]) <= 1e-9 * abs(ref["total"])
                    and r["top1"] == ref["top1"] and r["freq"] == ref["freq"])
            print(json.dumps({**r, "same_as_pandas": same}), flush=True)
    n = args.scaling_records or max(sizes)
    if not args.skip_scaling:
        scaling(n, data)
    if not args.skip_protect:
        print("(b) protect")
        runs = [child(["protect", mode, args.table, args.method])
                for mode in ("local", "cluster")]
        same = runs[0]["pattern"] == runs[1]["pattern"]
        for r in runs:
            r.pop("pattern")
            print(json.dumps({**r, "same_pattern": same}), flush=True)
    return 0


def scaling(n: int, data: Path) -> None:
    """Part (c): the dask tabulation of ``n`` records on 1, 2 and 4 workers, then
    simulated from the 1-worker run's tasks on more workers and on 10^9 records."""
    prepare(n, data)
    print("(c) dask workers (measured, then simulated from the 1-worker run's tasks)")
    runs = {w: child(["tabulate", "dask", n, str(data), w]) for w in (1, 2, 4)}
    for w, r in runs.items():
        print(json.dumps(r), flush=True)
    for w in (1, 2, 4, 8):
        print(json.dumps({"workers": w, "records": n,
                          "simulated_seconds": round(simulated_seconds(runs[1], w), 1)}))
    for machines, cores in ((1, 8), (4, 8), (16, 8), (64, 8)):
        w = machines * cores
        print(json.dumps({"records": 10**9, "machines": machines, "workers": w,
                          "simulated_seconds": round(simulated_seconds(
                              runs[1], w, partitions=10**9 // PARTITION_RECORDS), 1)}))


if __name__ == "__main__":
    raise SystemExit(main())

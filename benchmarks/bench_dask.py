"""Benchmark: tabulation and protection on a Dask cluster against one machine's engines.

(a) ``tabulate``: generated records (the table of bench_tabulate.py: 236,205 cells with
    every level, turnover, top-3), written in chunks of 1M records to a folder of Parquet
    files (never held in memory at once), tabulated by pandas (the folder read into one
    in-memory frame), duckdb (the folder's files, 2 threads) and dask (one partition per
    file) on a ``LocalCluster`` of 2 worker processes of one thread; time and peak memory
    (max RSS of the process; for dask the peak of each worker, sampled every 0.1 s, and
    of the client process). A run whose process passes ``--max-rss-gib`` is stopped and
    reported with the RSS it had reached;
(b) ``protect``: a generated table protected with the audit's components in local
    worker processes (``audit_workers=2``) and on the cluster (``executor=client``, 2
    workers): time, number of tasks sent to the cluster, the same pattern and verdict;
(c) the dask tabulation with 1, 2 and 4 workers, and the model for 10^9 records.

Each measurement runs in a fresh subprocess (``--run-timeout`` seconds at most). Usage::

    python benchmarks/bench_dask.py --records 1000000,10000000,100000000 \
        --skip-protect --skip-scaling --data /tmp/bench-dask
    python benchmarks/bench_dask.py --skip-engines --skip-scaling --table 1m-3d \
        --method gauss --protect-options '{"singleton": false}'
    python benchmarks/bench_dask.py --skip-engines --skip-protect --records 10000000
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
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
    from bench_tabulate import hierarchies

    from tabprotect.tabulate import tabulate
    dims = hierarchies()
    out: dict = {"engine": engine, "records": n, "workers": workers}
    if engine == "pandas":
        import pandas as pd
        read = time.perf_counter()
        frame = pd.read_parquet(dataset(n, data))
        out["read_s"] = round(time.perf_counter() - read, 2)
        out["input_mib"] = round(_rss_mib())
        start = time.perf_counter()
        table = tabulate(frame, dims, "turnover", top_k=3, engine="pandas")
    elif engine == "duckdb":
        start = time.perf_counter()
        table = tabulate(single_file(n, data), dims, "turnover", top_k=3,
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
            table = tabulate(dataset(n, data), dims, "turnover", top_k=3,
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
    """The tabulation time on ``workers`` workers (a core each) from one dask run's
    measured tasks: ``partitions`` partition tasks (default: the run's) of the run's mean
    task time, then the combine tree (:data:`FAN_IN` partials per combine), each level's
    combines spread over the workers at the run's mean combine time; every task pays the
    run's mean idle gap between tasks (span x workers - task time, per task); plus what
    the run spent outside its tasks (reading the metadata, assembling every level in the
    caller)."""
    import math

    from tabprotect.tabulate.dask_engine import FAN_IN
    tasks = run["tasks"]
    part, comb = tasks["partition"], tasks["combine"]
    gap = max(0.0, (tasks["span"] * run["workers"] - sum(part) - sum(comb))
              / (len(part) + len(comb)))
    mean_part = sum(part) / len(part)
    mean_comb = sum(comb) / len(comb) if comb else 0.0
    left = partitions or len(part)
    total = math.ceil(left / workers) * (mean_part + gap)
    while left > 1:
        left = math.ceil(left / FAN_IN)
        total += math.ceil(left / workers) * (mean_comb + gap)
    return total + run["seconds"] - tasks["span"]


def protect_child(mode: str, name: str, method: str, options: dict | None = None,
                  recheck: bool = True, table_options: dict | None = None) -> dict:
    import numpy as np

    from tabprotect.audit import audit
    from tabprotect.model import synthetic
    from tabprotect.parallel_dask import DaskExecutor
    from tabprotect.secondary import protect
    table = synthetic.generate(synthetic.PRESETS[name], seed=0, name=name,
                               **(table_options or {}))
    options = dict(options or {})
    out: dict = {"mode": mode, "table": name, "method": method, "cells": table.n_cells,
                 "primary": int((table.status == "U").sum()), "options": options,
                 "table_options": table_options or {}}
    if mode == "local":
        from tabprotect.secondary import METHODS
        # the same parallelism as the cluster run: the method's workers too, when it has
        # that option (protect(executor=) sets it to the cluster's worker count)
        extra = {"workers": 2} if "workers" in METHODS[method].valid_keys else {}
        start = time.perf_counter()
        res = protect(table, method=method, audit_workers=2, **extra, **options)
    else:
        cluster, client = _cluster(2)
        client.run(_import_engine)

        class Counting(DaskExecutor):
            tasks = 0

            def map(self, fn, tasks, **kw):
                Counting.tasks += len(tasks)
                return super().map(fn, tasks, **kw)
        start = time.perf_counter()
        res = protect(table, method=method, executor=Counting(client), **options)
        out["cluster_tasks"] = Counting.tasks
    out["seconds"] = round(time.perf_counter() - start, 1)
    out["passed"] = bool(res.passed)
    out["suppressed"] = int(np.isin(res.confidential_table.status, ("U", "M")).sum())
    out["pattern"] = np.flatnonzero(res.confidential_table.status == "M").tolist()
    out["audit_mode"] = res.audit.mode
    out["incomplete"] = int(np.asarray(res.audit.incomplete).sum())
    if recheck:
        check = audit(res.confidential_table, mode="verdict", workers=1)
        out["independent_audit"] = bool(check.passed)
    out["peak_mib"] = round(_rss_mib())
    return out


#: set by main(): a child is stopped past this RSS (bytes) or these seconds
LIMITS = {"rss": 12 * 2**30, "seconds": 1800.0}


def child(args: list) -> dict:
    """One measurement in a fresh process, stopped (and reported so) when its RSS or its
    time passes :data:`LIMITS`."""
    import psutil
    cmd = [sys.executable, __file__, "--child", json.dumps(args)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=out, stderr=log, text=True)
        watched, peak, start, stopped = psutil.Process(proc.pid), 0, time.monotonic(), None
        while proc.poll() is None:
            try:
                peak = max(peak, watched.memory_info().rss)
            except psutil.Error:
                pass
            if peak > LIMITS["rss"]:
                stopped = f"RSS over {LIMITS['rss'] / 2**30:g} GiB"
            elif time.monotonic() - start > LIMITS["seconds"]:
                stopped = f"over {LIMITS['seconds']:g} s"
            if stopped:
                for p in watched.children(recursive=True) + [watched]:
                    with contextlib.suppress(psutil.Error):
                        p.kill()
                proc.wait()
                return {"args": args[:3], "stopped": stopped,
                        "peak_mib": round(peak / 2**20),
                        "seconds": round(time.monotonic() - start, 1)}
            time.sleep(0.2)
        if proc.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"{args[:3]} failed: {log.read()[-2000:]}")
        out.seek(0)
        return json.loads(out.read().strip().splitlines()[-1])


def make_chunk(n: int, part: int, seed: int = 1):
    """Records ``part`` (``n`` of them) of the generated survey: the distribution of
    bench_tabulate.make_records (its industry shares drawn once from ``seed``), each
    chunk from its own random stream, so that any number of records is written chunk
    by chunk."""
    import numpy as np
    import pandas as pd
    from bench_tabulate import NACE_FANOUT, REGION_FANOUT
    from generate import nace_codes, region_codes
    regions, naces = region_codes(REGION_FANOUT), nace_codes(NACE_FANOUT)
    nace_p = np.random.default_rng(seed).dirichlet(np.ones(len(naces)))
    rng = np.random.default_rng([seed, part])
    region = pd.Categorical.from_codes(rng.integers(0, len(regions), n), categories=regions)
    nace = pd.Categorical.from_codes(rng.choice(len(naces), n, p=nace_p), categories=naces)
    employment = np.minimum(np.floor(1 + rng.pareto(1.3, n) * 3), 5000)
    size = pd.Categorical.from_codes(np.searchsorted([10, 50, 250], employment, side="right"),
                                     categories=["S1", "S2", "S3", "S4"])
    turnover = np.round(employment * rng.lognormal(4.5, 0.9, n), 1)
    return pd.DataFrame({"region": region, "nace": nace, "size": size, "turnover": turnover})


def dataset(n: int, data: Path) -> Path:
    return data / f"dataset_{n}"


def single_file(n: int, data: Path) -> Path:
    return data / f"records_{n}.parquet"


def prepare(n: int, data: Path) -> None:
    """A folder of Parquet files of at most 1M records each, ``n`` records in all (dask
    reads one partition per file, pandas the whole folder), and the same records in one
    Parquet file of one row group per chunk (duckdb), written chunk by chunk (a marker
    file beside them says they are complete)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    folder, done = dataset(n, data), data / f"dataset_{n}.complete"
    if done.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    start, writer = time.perf_counter(), None
    try:
        for i, first in enumerate(range(0, n, PARTITION_RECORDS)):
            chunk = pa.Table.from_pandas(make_chunk(min(PARTITION_RECORDS, n - first), i),
                                         preserve_index=False)
            pq.write_table(chunk, folder / f"part{i:04d}.parquet")
            writer = writer or pq.ParquetWriter(single_file(n, data), chunk.schema)
            writer.write_table(chunk)
    finally:
        if writer is not None:
            writer.close()
    done.write_text(f"{time.perf_counter() - start:.1f} s\n")


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
    ap.add_argument("--protect-options", default="{}",
                    help="part (b): protect() options as JSON, e.g. '{\"singleton\": false}'")
    ap.add_argument("--table-options", default="{}",
                    help="part (b): synthetic.generate() options as JSON, e.g. "
                         "'{\"mean_enterprises\": 20}'")
    ap.add_argument("--recheck", action="store_true",
                    help="part (b): audit each published table once more (verdict mode)")
    ap.add_argument("--data", help="folder for the generated records (default: temporary)")
    ap.add_argument("--keep-data", action="store_true",
                    help="keep the generated records (default: removed at the end)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="only write the records of --records")
    ap.add_argument("--max-rss-gib", type=float, default=12.0,
                    help="stop a measurement whose process passes this RSS")
    ap.add_argument("--run-timeout", type=float, default=1800.0,
                    help="stop a measurement after this many seconds")
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
    LIMITS.update(rss=args.max_rss_gib * 2**30, seconds=args.run_timeout)
    data = Path(args.data or tempfile.mkdtemp(prefix="tabprotect-bench-dask-"))
    data.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.records.split(",")]
    print(f"{platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f}")
    try:
        if args.prepare_only:
            for n in sizes:
                prepare(n, data)
                print(json.dumps({"records": n, "written": str(dataset(n, data))}))
            return 0
        if not args.skip_engines:
            engines(sizes, data)
        if not args.skip_scaling:
            scaling(args.scaling_records or max(sizes), data)
        if not args.skip_protect:
            protect_both(args.table, args.method, json.loads(args.protect_options),
                         args.recheck, json.loads(args.table_options))
    finally:
        if not args.keep_data:
            shutil.rmtree(data, ignore_errors=True)
    return 0


def engines(sizes: list[int], data: Path) -> None:
    """Part (a): each size by pandas, duckdb and dask, checked against each other."""
    print("(a) tabulation")
    previous = None
    for n in sizes:
        prepare(n, data)
        ref = None
        for engine in ("pandas", "duckdb", "dask"):
            r = child(["tabulate", engine, n, str(data), 2])
            extra = {}
            if engine == "dask" and previous is not None and "stopped" not in r:
                # the model of part (c) fitted to the smaller run, against this one
                extra["model_from_previous_size"] = round(simulated_seconds(
                    previous, 2, partitions=len(r["tasks"]["partition"])), 1)
            print(json.dumps({**r, **extra, "load": round(os.getloadavg()[0], 1),
                              "same_as_first": _same(ref, r)}), flush=True)
            ref = ref or (r if "stopped" not in r else None)
            if engine == "dask" and "stopped" not in r and r["tasks"]["combine"]:
                previous = r


def _same(ref: dict | None, r: dict) -> bool | None:
    """Totals, counts and the largest contribution of the grand total equal (None when
    there is nothing to compare)."""
    if ref is None or "stopped" in r:
        return None
    return (abs(r["total"] - ref["total"]) <= 1e-9 * abs(ref["total"])
            and r["top1"] == ref["top1"] and r["freq"] == ref["freq"])


def protect_both(table: str, method: str, options: dict, recheck: bool,
                 table_options: dict) -> None:
    """Part (b): the same protect() with local worker processes and on the cluster."""
    print("(b) protect")
    runs = []
    for mode in ("local", "cluster"):
        runs.append(child(["protect", mode, table, method, options, recheck,
                           table_options]))
        print(json.dumps({k: v for k, v in runs[-1].items() if k != "pattern"}
                         | {"load": round(os.getloadavg()[0], 1)}), flush=True)
    if all("pattern" in r for r in runs):
        print(json.dumps({"same_pattern": runs[0]["pattern"] == runs[1]["pattern"],
                          "same_verdict": runs[0]["passed"] == runs[1]["passed"]}))


def scaling(n: int, data: Path) -> None:
    """Part (c): the dask tabulation of ``n`` records on 1, 2 and 4 workers, then
    simulated on more workers and on 10^9 records from the 1-worker run's tasks (a
    worker with the machine to itself) and from the 2-worker run's (two workers sharing
    it: the pessimistic bound on a loaded machine)."""
    prepare(n, data)
    print("(c) dask workers (measured, then simulated from the 1- and 2-worker runs' tasks)")
    runs = {w: child(["tabulate", "dask", n, str(data), w]) for w in (1, 2, 4)}
    for w, r in runs.items():
        print(json.dumps(r), flush=True)
    for w in (1, 2, 4, 8):
        print(json.dumps({"workers": w, "records": n, "simulated_seconds": [
            round(simulated_seconds(runs[base], w), 1) for base in (1, 2)]}))
    for machines, cores in ((1, 8), (4, 8), (16, 8), (64, 8)):
        w = machines * cores
        print(json.dumps({"records": 10**9, "machines": machines, "workers": w,
                          "simulated_seconds": [round(simulated_seconds(
                              runs[base], w, partitions=10**9 // PARTITION_RECORDS), 1)
                              for base in (1, 2)]}))


if __name__ == "__main__":
    raise SystemExit(main())

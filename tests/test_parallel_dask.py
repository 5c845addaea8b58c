"""tabprotect.parallel_dask: the package's parallel work on a Dask cluster (a LocalCluster
of two worker processes here), with the same results as in one process."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from helpers import two_by_two  # noqa: E402
from test_pipeline import from_files, from_run, via_worker, write_job  # noqa: E402

from tabprotect.audit import audit  # noqa: E402
from tabprotect.errors import InputError  # noqa: E402
from tabprotect.model import synthetic  # noqa: E402
from tabprotect.parallel import InlineExecutor, process_map, use_executor  # noqa: E402
from tabprotect.parallel_dask import (DaskExecutor, _SharedValues, as_executor,  # noqa: E402
                                      deal)
from tabprotect.pipeline import run  # noqa: E402
from tabprotect.secondary import protect  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit="1GiB")
    with distributed.Client(cluster, set_as_default=False) as c:
        yield c
    cluster.close()


# ---------------------------------------------------------------- task functions
def _square_minus(x: int) -> int:
    return x * x - 3 * x


def _pid(_: object) -> int:
    return os.getpid()


def _shared_sum(task: tuple) -> float:
    array, k = task
    return float(array.sum()) + k


def _count_and_fail(path: str) -> None:
    with open(path, "a") as f:
        f.write("run\n")
    raise ValueError("the task failed")


def _die_once(task: tuple) -> int:
    """Ends its worker process on the first attempt (a lost worker); returns ``x``."""
    marker, x = task
    if not Path(marker).exists():
        Path(marker).write_text("died")
        os._exit(1)
    return x


def _nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


class CountingExecutor(DaskExecutor):
    """A DaskExecutor that records the tasks it was given."""

    def __init__(self, client):
        super().__init__(client)
        self.tasks = 0

    def map(self, fn, tasks, **kw):
        self.tasks += len(tasks)
        return super().map(fn, tasks, **kw)


class _Raise:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        raise RuntimeError("a task failed on the cluster")


class _Slow:
    def __init__(self, fn, seconds):
        self.fn, self.seconds = fn, seconds

    def __call__(self, *args):
        time.sleep(self.seconds)
        return self.fn(*args)


class FailingExecutor(DaskExecutor):
    """Every task it runs raises."""

    def submit(self, fn, *args):
        return super().submit(_Raise(fn), *args)


class SlowExecutor(DaskExecutor):
    """Every task it runs first sleeps ``delay`` seconds."""

    def __init__(self, client, delay, task_timeout):
        super().__init__(client, task_timeout=task_timeout, restart_on_timeout=False)
        self.delay = delay

    def submit(self, fn, *args):
        return super().submit(_Slow(fn, self.delay), *args)


# ---------------------------------------------------------------- the executor
def test_results_equal_the_serial_ones_in_task_order(client):
    tasks = list(range(-9, 9))
    seen = []
    with use_executor(DaskExecutor(client)):
        got = process_map(_square_minus, tasks, workers=2,
                          weights=[abs(t) for t in tasks],
                          on_result=lambda i, r: seen.append((i, r)))
        pids = set(process_map(_pid, range(6), workers=2))
    assert got == [_square_minus(t) for t in tasks]
    assert sorted(seen) == list(enumerate(got))
    # the work ran in the cluster's worker processes, not here
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_tasks_are_dealt_into_balanced_batches():
    batches = deal([8, 1, 1, 1, 1, 4, 4], 3)
    assert sorted(i for b in batches for i in b) == list(range(7))
    loads = sorted(sum([8, 1, 1, 1, 1, 4, 4][i] for i in b) for b in batches)
    assert loads == [6, 6, 8]
    assert deal([], 4) == [] and deal([1.0], 4) == [[0]]


def test_a_value_shared_by_tasks_is_sent_once(client):
    big = np.arange(100_000, dtype=float)
    tasks = [(big, k) for k in range(5)]
    shared = _SharedValues(client, tasks)
    try:
        assert len(shared.futures) == 1
        assert all(t[0] is shared.futures[0] for t in shared.tasks)
    finally:
        shared.release()
    small = [(np.arange(3.0), k) for k in range(5)]     # different objects: sent inline
    assert _SharedValues(client, small).futures == []
    with use_executor(DaskExecutor(client)):
        assert process_map(_shared_sum, tasks, workers=2) == [big.sum() + k
                                                              for k in range(5)]


def test_an_error_is_raised_here_and_never_retried(client, tmp_path):
    path = tmp_path / "runs.txt"
    with use_executor(DaskExecutor(client)), pytest.raises(ValueError, match="task failed"):
        process_map(_count_and_fail, [str(path), str(path)], workers=2)
    assert path.read_text().count("run") == 2     # each task ran once: no retry


@pytest.mark.slow
def test_a_lost_workers_task_runs_again(client, tmp_path):
    marker = tmp_path / "died"
    with use_executor(DaskExecutor(client)):
        got = process_map(_die_once, [(str(marker), 5), (str(tmp_path / "x"), 7)],
                          workers=2)
    assert got == [5, 7] and marker.read_text() == "died"
    client.wait_for_workers(2, timeout=60)


def test_a_task_over_its_budget_fails_the_call(client):
    executor = DaskExecutor(client, task_timeout=0.5, restart_on_timeout=False)
    t0 = time.monotonic()
    with use_executor(executor), pytest.raises(TimeoutError, match="budget of 0.5 s"):
        process_map(_nap, [2.0, 0.0], workers=2)
    assert time.monotonic() - t0 < 2.0


@pytest.mark.slow
def test_a_task_over_its_budget_is_stopped(client):
    executor = DaskExecutor(client, task_timeout=1.0)
    t0 = time.monotonic()
    with use_executor(executor), pytest.raises(TimeoutError, match="budget of 1 s"):
        process_map(_nap, [30.0, 0.0], workers=2)
    assert time.monotonic() - t0 < 25
    client.wait_for_workers(2, timeout=60)
    # the sleeping worker was restarted, so the cluster takes new work at once
    t1 = time.monotonic()
    with use_executor(DaskExecutor(client)):
        assert process_map(_nap, [0.0, 0.0], workers=2) == [0.0, 0.0]
    assert time.monotonic() - t1 < 15


def test_as_executor_accepts_a_client_or_an_executor_only(client):
    assert isinstance(as_executor(client), DaskExecutor)
    executor = DaskExecutor(client, workers=3)
    assert as_executor(executor) is executor and executor.workers == 3
    assert DaskExecutor(client).workers == 2          # the cluster's threads
    with pytest.raises(InputError, match="expected a dask.distributed.Client"):
        as_executor("tcp://127.0.0.1:1")
    with pytest.raises(InputError, match="task_timeout"):
        DaskExecutor(client, task_timeout=0)


# ---------------------------------------------------------------- protect and audit
def _audited(result) -> tuple:
    """The pattern and the verdict of an independent interval audit of it."""
    check = audit(result.confidential_table, singleton=False)
    return result.confidential_table.status.tolist(), check.passed


def test_protect_on_the_cluster_equals_protect_here(client):
    table = synthetic.preset("3d-small", seed=1)
    here = protect(table, method="modular", singleton=False, workers=2)
    counting = CountingExecutor(client)
    there = protect(table, method="modular", singleton=False, executor=counting)
    assert counting.tasks > 0                          # the sub-tables went to the cluster
    assert there.params["workers"] == 2 and there.params["audit_workers"] == 2
    assert _audited(there) == _audited(here)
    assert there.passed and _audited(there)[1]


def test_a_failed_task_gives_no_verdict(client):
    table = synthetic.preset("3d-small", seed=1)
    with pytest.raises(RuntimeError, match="failed on the cluster"):
        protect(table, method="modular", singleton=False, executor=FailingExecutor(client))


def test_a_timed_out_task_gives_no_verdict(client):
    table = synthetic.preset("3d-small", seed=1)
    with pytest.raises(TimeoutError):
        protect(table, method="modular", singleton=False,
                executor=SlowExecutor(client, delay=2.0, task_timeout=0.5))


def _two_rectangles():
    """A 4 x 4 table (with totals) with two suppressed 2 x 2 rectangles in disjoint rows
    and columns: two independent audit components, each with one primary."""
    from tabprotect.model import Hierarchy, Table
    rows = Hierarchy.flat(["1", "2", "3", "4"], total="T")
    cols = Hierarchy.flat(["a", "b", "c", "d"], total="T")
    inner = np.full((4, 4), 5.0)
    grid = np.zeros((5, 5))
    grid[1:, 1:] = inner
    grid[0, 1:], grid[1:, 0], grid[0, 0] = inner.sum(0), inner.sum(1), inner.sum()
    table = Table.from_arrays({"r": rows, "c": cols}, grid.ravel())
    status = table.status.copy()
    for r0, c0 in ((1, 1), (3, 3)):
        cells = [r * 5 + c for r in (r0, r0 + 1) for c in (c0, c0 + 1)]
        status[cells] = "M"
        status[cells[0]] = "U"
    level = np.where(status == "U", 1.0, 0.0)
    return table.replace(status=status, upl=level, lpl=level)


class RecordingExecutor(DaskExecutor):
    """A DaskExecutor that keeps the tasks it was given."""

    def __init__(self, client):
        super().__init__(client)
        self.seen = []

    def map(self, fn, tasks, **kw):
        self.seen.extend(tasks)
        return super().map(fn, tasks, **kw)


@pytest.mark.parametrize("mode", [pytest.param("intervals", marks=pytest.mark.slow),
                                  "verdict"])
def test_a_component_past_its_deadline_on_arrival_is_never_counted(client, mode):
    from tabprotect.audit.settings import AuditSettings
    table = _two_rectangles()
    primary = table.status == "U"
    every_task = AuditSettings(parallel_min_cells=1)
    recording = RecordingExecutor(client)
    with use_executor(recording):
        on_time = audit(table, mode=mode, workers=2, time_limit=60, settings=every_task)
    assert on_time.passed and not on_time.incomplete.any()
    # each task carries its deadline as wall-clock time, which every machine can read
    assert len(recording.seen) == 2
    assert all(abs(t.deadline - (time.time() + 60)) < 30 for t in recording.seen)
    # every task reaches its worker after the audit's time limit has passed
    with use_executor(SlowExecutor(client, delay=1.0, task_timeout=None)):
        late = audit(table, mode=mode, workers=2, time_limit=0.2, settings=every_task)
    assert late.incomplete[primary].all()
    assert not late.protected[primary].any() and not late.passed


def test_protect_rejects_an_executor_it_cannot_use():
    with pytest.raises(InputError, match="executor"):
        protect(two_by_two(), executor=object())


# ---------------------------------------------------------------- jobs and the service
def _cluster_job(tmp_path: Path, client, name: str = "microdata") -> Path:
    job = write_job(tmp_path / "job", name)
    address = client.scheduler.address
    job.write_text(job.read_text() + f'\n[cluster]\nscheduler = "{address}"\n')
    return job


def test_a_job_gives_the_same_table_and_verdict_with_and_without_the_cluster(client,
                                                                           tmp_path):
    job = write_job(tmp_path / "plain", "microdata")
    clustered = _cluster_job(tmp_path, client)
    here, there = from_run(run(job)), from_run(run(clustered))
    assert there["verdict"] == here["verdict"] == "PASSED"
    np.testing.assert_array_equal(there["pattern"], here["pattern"])
    audited = from_run(run(_cluster_job(tmp_path / "a", client, "audit-only")))
    assert audited["verdict"] == from_run(run(write_job(tmp_path / "b", "audit-only"))
                                          )["verdict"]


def _without_times(frame):
    return frame.drop(columns="seconds")


def test_a_compare_job_runs_its_methods_on_the_cluster_with_the_same_result(client,
                                                                          tmp_path):
    here = run(write_job(tmp_path / "plain", "compare"))
    with distributed.get_task_stream(client) as stream:
        there = run(_cluster_job(tmp_path, client, "compare"))
    assert len(stream.data) >= 1                       # the runs went to the cluster
    assert there.kind == here.kind == "compare"
    pd.testing.assert_frame_equal(_without_times(there.comparison),
                                  _without_times(here.comparison))
    a, b = from_run(there), from_run(here)
    assert a["verdict"] == b["verdict"]
    np.testing.assert_array_equal(a["pattern"], b["pattern"])


@pytest.mark.slow
def test_compare_sends_one_task_per_run_and_the_table_once(client):
    from tabprotect.compare import compare
    table = synthetic.preset("3d-small", seed=1)
    # a run's own parallel work (workers = 2) runs inside its task on the cluster, and
    # here one piece after another: the same result as in worker processes
    methods = ["hypercube", {"method": "modular", "workers": 2}]
    with use_executor(InlineExecutor()):
        here = compare(table, methods, singleton=False)
    recording = RecordingExecutor(client)
    there = compare(table, methods, singleton=False, executor=recording)
    assert len(recording.seen) == 2 and all(t[0] is table for t in recording.seen)
    pd.testing.assert_frame_equal(_without_times(there.frame), _without_times(here.frame))
    for a, b in zip(here.runs, there.runs):
        np.testing.assert_array_equal(a.published.status, b.published.status)


def test_cluster_keys_are_checked(tmp_path):
    job = write_job(tmp_path / "job", "microdata")
    text = job.read_text()
    job.write_text(text + '\n[cluster]\nscheduler = "tcp://127.0.0.1:9"\nnodes = 3\n')
    with pytest.raises(InputError, match=r"unknown key 'nodes'"):
        run(job)
    job.write_text(text + '\n[cluster]\nworkers = 2\n')
    with pytest.raises(InputError, match=r"\[cluster\]: give 'scheduler'"):
        run(job)
    job.write_text(text + '\n[cluster]\nscheduler = "tcp://127.0.0.1:9"\n'
                   'connect_timeout = 0.5\n')
    with pytest.raises(InputError, match=r"\[cluster\] scheduler: cannot reach"):
        run(job)


def test_the_service_worker_runs_jobs_on_its_cluster(client, tmp_path):
    from tabprotect.service.config import load_config
    job = write_job(tmp_path / "job", "microdata")
    expected = from_run(run(job))
    got = from_files(via_worker(job, tmp_path, dask=client.scheduler.address))
    assert got["verdict"] == expected["verdict"]
    np.testing.assert_array_equal(got["pattern"], expected["pattern"])
    assert load_config(tokens=("a-long-token-0123",), dask="tcp://h:8786").dask == "tcp://h:8786"
    with pytest.raises(InputError, match="dask must be a scheduler address"):
        load_config(tokens=("a-long-token-0123",), dask="h:8786").check()


def test_the_service_refuses_a_submitted_cluster(tmp_path):
    from fastapi import HTTPException

    from tabprotect.service.validate import check_spec
    spec = {"input": {"cells": "cells.csv", "dimensions": ["r"]},
            "cluster": {"scheduler": "tcp://203.0.113.9:8786"}}
    with pytest.raises(HTTPException, match="cluster"):
        check_spec(spec, {"cells.csv"}, tmp_path, 60.0)

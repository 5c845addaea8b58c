"""The package's parallel work on a Dask cluster (``pip install "tabprotect[dask]"``).

:class:`DaskExecutor` is a :class:`~tabprotect.parallel.TaskExecutor` on a
``dask.distributed.Client``: the audit's components (with their verdict blocks), the
modular method's sub-tables, the hypercube and cube passes and the greedy repair's runs
become Dask tasks on the cluster's workers instead of local processes.
``protect(..., executor=client)``, ``[cluster] scheduler = "tcp://..."`` in a job and
``tabprotect serve --dask tcp://...`` all end here.

What moves over the network: each task's own arguments (an audit component's LP, a
sub-table, a run of primaries).  A value that several tasks of one call share (the table
of the hypercube pass, say) is sent to the cluster once (:meth:`Client.scatter`) and
reaches each worker that needs it once; only the tasks' results come back.

Failures:

* a worker that dies (or whose machine is lost) loses its tasks; the scheduler runs them
  again on the other workers (Dask's ``distributed.scheduler.allowed-failures``, 3 by
  default, after which the call raises ``KilledWorker``);
* a task still running ``task_timeout`` seconds after its submission raises
  :class:`TimeoutError` in the caller; the call's other tasks are cancelled and, with
  ``restart_on_timeout``, the workers running them are restarted by their nannies (a
  Python thread cannot be stopped from outside: without a restart the worker finishes
  the task and its result is dropped);
* an error raised by a task is raised in the caller, never retried (a task is
  deterministic: it would fail again), and never counted: the audit or method that
  asked for the work raises instead of returning a verdict.
"""
from __future__ import annotations

import contextlib
from concurrent.futures import Future
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from tabprotect.errors import InputError
from tabprotect.parallel import OnResult, TaskExecutor, gather, use_executor

__all__ = ["DaskExecutor", "as_executor", "connect", "cluster_executor"]

#: a value shared by several tasks of one call is scattered once when its pickled size is
#: at least this (smaller values cost less inline than a scatter's round trip)
SHARE_MIN_BYTES = 64 * 1024
#: a call's tasks go out in at most this many batches per worker: enough for the
#: scheduler to even out unequal tasks, few enough that thousands of small audit
#: components do not cost thousands of round trips
BATCHES_PER_WORKER = 4


class _RemoteFuture(Future):
    """A :class:`concurrent.futures.Future` mirroring one Dask future; cancelling it
    cancels the Dask task."""

    def __init__(self, remote: Any) -> None:
        super().__init__()
        self.remote = remote

    def cancel(self) -> bool:
        self.remote.cancel()
        return super().cancel()


def _settle(local: _RemoteFuture, remote: Any) -> None:
    """Copy a finished Dask future's outcome into ``local`` (a Dask callback thread)."""
    if local.done():
        return
    try:
        if remote.status == "finished":
            local.set_result(remote.result())
        elif remote.status == "cancelled":
            local.cancel()
        else:
            local.set_exception(remote.exception())
    except Exception as exc:  # noqa: BLE001 -- a lost connection fails the future
        if not local.done():
            local.set_exception(exc)


class DaskExecutor:
    """A :class:`~tabprotect.parallel.TaskExecutor` on a ``dask.distributed.Client``
    (the caller owns the client and closes it).

    Parameters
    ----------
    client : a connected ``dask.distributed.Client``
    workers : tasks in flight at a time (default: the cluster's threads when the executor
        is made)
    task_timeout : seconds a task may take from its submission before the call fails
        with :class:`TimeoutError` (None: no bound)
    restart_on_timeout : restart the workers running a timed-out call's tasks (needs
        nannies, the default of ``dask worker`` and of a process ``LocalCluster``)
    """

    def __init__(self, client: Any, workers: int | None = None,
                 task_timeout: float | None = None, restart_on_timeout: bool = True) -> None:
        self.client = client
        if workers is None:
            workers = sum(client.nthreads().values())
        self.workers = max(1, int(workers))
        if task_timeout is not None and not task_timeout > 0:
            raise InputError(f"task_timeout must be positive, not {task_timeout!r}")
        self.task_timeout = task_timeout
        self.restart_on_timeout = bool(restart_on_timeout)

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        remote = self.client.submit(fn, *args, pure=False, retries=0)
        local = _RemoteFuture(remote)
        remote.add_done_callback(lambda r: _settle(local, r))
        return local

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], *,
            workers: int | None = None, timeout: float | None = None,
            weights: Sequence[float] | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        """``[fn(t) for t in tasks]``; the tasks go to the cluster in at most
        :data:`BATCHES_PER_WORKER` batches per worker, dealt heaviest first to the
        lightest batch (many small audit components cost one Dask task per batch, not
        one each)."""
        limit = min(self.workers, workers or self.workers)
        w = [1.0] * len(tasks) if weights is None else [float(x) for x in weights]
        batches = deal(w, min(len(tasks), limit * BATCHES_PER_WORKER))
        shared = _SharedValues(self.client, tasks)
        results: list[Any] = [None] * len(tasks)

        def arrived(b: int, values: list[Any]) -> None:
            for i, value in zip(batches[b], values):
                results[i] = value
                if on_result is not None:
                    on_result(i, value)
        try:
            gather(self.submit, _Batch(fn), [[shared.tasks[i] for i in b] for b in batches],
                   limit=limit, timeout=timeout, weights=[sum(w[i] for i in b)
                                                          for b in batches],
                   on_result=arrived, task_timeout=self.task_timeout,
                   on_timeout=self._stop)
        finally:
            shared.release()
        return results

    def _stop(self, running: list[Future]) -> None:
        """End the workers busy with ``running`` (a timed-out call's open tasks)."""
        keys = {f.remote.key for f in running if isinstance(f, _RemoteFuture)}
        busy = [] if not self.restart_on_timeout or not keys else \
            [w for w, held in self.client.processing().items() if keys & set(held)]
        for fut in running:
            fut.cancel()
        if busy:
            with contextlib.suppress(Exception):  # no nanny: the result is dropped only
                self.client.restart_workers(busy)


class _Batch:
    """``fn`` over a list of tasks, in one Dask task."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, items: list[Any]) -> list[Any]:
        return [self.fn(item) for item in items]


def deal(weights: Sequence[float], bins: int) -> list[list[int]]:
    """Task indices dealt to ``bins`` non-empty batches, heaviest first to the lightest
    batch (ties in task order); each batch lists its tasks in task order.

    Examples
    --------
    >>> deal([5, 1, 1, 3], 2)
    [[0], [1, 2, 3]]
    """
    bins = max(1, min(int(bins), len(weights)))
    load = [0.0] * bins
    out: list[list[int]] = [[] for _ in range(bins)]
    for i in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        b = min(range(bins), key=lambda b: (load[b], b))
        out[b].append(i)
        load[b] += max(float(weights[i]), 1e-12)
    return [sorted(b) for b in out if b]


class _SharedValues:
    """The tasks of one call, with each large value that two or more tuple tasks hold
    (the same object) replaced by a Dask future of it, scattered once."""

    def __init__(self, client: Any, tasks: Sequence[Any]) -> None:
        self.futures: list[Any] = []
        seen: dict[int, int] = {}
        for task in tasks:
            if isinstance(task, tuple):
                for item in {id(x): x for x in task}.values():
                    seen[id(item)] = seen.get(id(item), 0) + 1
        large: dict[int, Any] = {}
        for task in tasks:
            if not isinstance(task, tuple):
                continue
            for item in task:
                if seen.get(id(item), 0) > 1 and id(item) not in large \
                        and _nbytes(item) >= SHARE_MIN_BYTES:
                    large[id(item)] = client.scatter(item, hash=False)
        self.futures = list(large.values())
        self.tasks = [tuple(large.get(id(x), x) for x in t) if isinstance(t, tuple) and large
                      else t for t in tasks]

    def release(self) -> None:
        for fut in self.futures:
            fut.release()


def _nbytes(value: Any) -> int:
    """A cheap lower bound of a value's pickled size: arrays and tables by their arrays;
    other values count as small."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    arrays = getattr(value, "value", None), getattr(value, "relations", None)
    if isinstance(arrays[0], np.ndarray):
        return int(arrays[0].nbytes) * 8
    return 0


def _is_dask_client(engine: Any) -> bool:
    return (type(engine).__module__.split(".")[0] == "distributed"
            and hasattr(engine, "get_executor") and hasattr(engine, "nthreads"))


def as_executor(engine: Any) -> TaskExecutor:
    """``engine`` as a :class:`~tabprotect.parallel.TaskExecutor`: a Dask client is wrapped
    in :class:`DaskExecutor`; an object with ``submit``, ``map`` and ``workers`` is
    returned as it is; anything else is an :class:`InputError`."""
    if _is_dask_client(engine):
        return DaskExecutor(engine)
    if all(hasattr(engine, name) for name in ("submit", "map", "workers")):
        return engine
    raise InputError(f"executor: expected a dask.distributed.Client or a TaskExecutor "
                     f"(submit, map, workers), not {type(engine).__name__}")


def connect(address: str, *, timeout: float = 10.0, where: str = "cluster") -> Any:
    """A ``dask.distributed.Client`` connected to the scheduler at ``address``; a missing
    extra or an unreachable scheduler is one :class:`InputError` naming ``where``."""
    try:
        from distributed import Client
    except ImportError:
        raise InputError(f"{where}: a Dask scheduler needs the dask extra: "
                         f"pip install \"tabprotect[dask]\"") from None
    if not isinstance(address, str) or "://" not in address:
        raise InputError(f"{where}: the scheduler address must look like "
                         f"tcp://host:8786, not {address!r}")
    try:
        return Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise InputError(f"{where}: cannot reach the Dask scheduler at {address} "
                         f"({type(exc).__name__})") from None


@contextlib.contextmanager
def cluster_executor(address: str, *, workers: int | None = None,
                     task_timeout: float | None = None, connect_timeout: float = 10.0,
                     where: str = "cluster") -> Iterator[DaskExecutor]:
    """Connect to the scheduler at ``address`` and send the package's parallel work
    there (:func:`~tabprotect.parallel.use_executor`) until the block ends; the client
    is closed afterwards."""
    client = connect(address, timeout=connect_timeout, where=where)
    try:
        executor = DaskExecutor(client, workers=workers, task_timeout=task_timeout)
        with use_executor(executor):
            yield executor
    finally:
        client.close()

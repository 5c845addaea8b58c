"""Run independent pieces of work (audit components, sub-tables, runs of primaries) in
worker processes.

The work goes through an *executor*: anything with ``submit(fn, *args)`` returning a
:class:`concurrent.futures.Future` and ``map(fn, tasks, *, timeout, weights,
on_result)`` (the :class:`TaskExecutor` protocol).  The default is :class:`ProcessPool`,
a :class:`concurrent.futures.ProcessPoolExecutor` whose workers start from a fork server
(``spawn`` where there is none): never forked from the caller, so no worker inherits
HiGHS' threads in a broken state.  One pool per process is created on first use, reused
by every later call and shut down at exit, so the worker start-up is paid once.  Another
engine (e.g. a Dask client's ``get_executor()``, wrapped in :class:`FuturesExecutor`)
plugs in with :func:`use_executor`.

Like every ``spawn``/``forkserver`` pool, the workers import the caller's main script
(to find functions defined there): a script that calls tabprotect with ``workers > 1``
keeps its top-level work under ``if __name__ == "__main__":``.

Small work stays in the calling process by an explicit rule (one worker or one task, and
the callers' own size thresholds), never by catching a failure: an error in a task, a
task that cannot be pickled or a worker that dies is raised in the caller, and the tasks
not yet started are cancelled.
"""
from __future__ import annotations

import atexit
import contextlib
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, Sequence

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

OnResult = Callable[[int, Any], None]


class TaskExecutor(Protocol):
    """What the package needs of a parallel engine."""

    workers: int

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        """Start ``fn(*args)``; its future."""

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], *,
            workers: int | None = None, timeout: float | None = None,
            weights: Sequence[float] | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        """``[fn(t) for t in tasks]`` in task order, at most ``workers`` (default
        `workers`) at a time; raises the first task's error or :class:`TimeoutError` after
        ``timeout`` seconds, cancelling what has not started."""


def gather(submit: Callable[..., Future], fn: Callable[[Any], Any], tasks: Sequence[Any],
           *, limit: int, timeout: float | None = None,
           weights: Sequence[float] | None = None,
           on_result: OnResult | None = None, task_timeout: float | None = None,
           on_timeout: Callable[[list[Future]], None] | None = None) -> list[Any]:
    """`TaskExecutor.map` on top of any ``submit``: at most ``limit`` tasks in flight,
    started heaviest first (``weights``, default all equal; ties in task order), results
    returned in task order, ``on_result(index, result)`` called in this thread as each
    result arrives.  :class:`TimeoutError` is raised when the whole call passes
    ``timeout`` seconds or one task passes ``task_timeout`` seconds from its submission;
    ``on_timeout(open_futures)`` is called first (e.g. to end the workers running them).
    On an error or a time-out the tasks not finished are cancelled."""
    n = len(tasks)
    order = (sorted(range(n), key=lambda i: (-float(weights[i]), i)) if weights
             else list(range(n)))
    deadline = None if timeout is None else time.monotonic() + timeout
    results: list[Any] = [None] * n
    running: dict[Future, int] = {}
    submitted: dict[Future, float] = {}
    nxt = 0
    try:
        while nxt < n or running:
            while nxt < n and len(running) < max(1, limit):
                fut = submit(fn, tasks[order[nxt]])
                running[fut] = order[nxt]
                submitted[fut] = time.monotonic()
                nxt += 1
            ends = [] if deadline is None else [deadline]
            if task_timeout is not None:
                ends.append(min(submitted[f] for f in running) + task_timeout)
            left = None if not ends else max(0.0, min(ends) - time.monotonic())
            done, _ = wait(running, timeout=left, return_when=FIRST_COMPLETED)
            if not done:
                if on_timeout is not None:
                    on_timeout(list(running))
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"parallel work not finished within {timeout:g} s "
                                       f"({n - nxt + len(running)} of {n} tasks open)")
                raise TimeoutError(f"a task ran past its budget of {task_timeout:g} s "
                                   f"({n - nxt + len(running)} of {n} tasks open)")
            for fut in sorted(done, key=running.__getitem__):
                i = running.pop(fut)
                results[i] = fut.result()  # a task's error is raised here
                del submitted[fut]
                if on_result is not None:
                    on_result(i, results[i])
        return results
    finally:
        for fut in running:
            fut.cancel()  # no-op for a running task (see ProcessPool.map)


def _start_method() -> str:
    import multiprocessing
    return ("forkserver" if "forkserver" in multiprocessing.get_all_start_methods()
            else "spawn")


class ProcessPool:
    """A lazily created, reused :class:`ProcessPoolExecutor` of ``workers`` processes.

    A call that needs more workers than the pool has replaces the pool with a larger one;
    a time-out or a broken worker discards the pool (its processes are ended), so the next
    call starts clean.
    """

    def __init__(self, workers: int = 2) -> None:
        self.workers = int(workers)
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _pool(self) -> ProcessPoolExecutor:
        # multiprocessing and the process pool are imported by the first pool: a run that
        # starts none (small work stays in-process) does not load them
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        with self._lock:
            if self._executor is None:
                context = multiprocessing.get_context(_start_method())
                if context.get_start_method() == "forkserver":
                    # the fork server imports the package once; each worker is forked
                    # from it with numpy, scipy and HiGHS loaded (no solver has run in
                    # the server, so no HiGHS thread is copied)
                    context.set_forkserver_preload(["tabprotect.secondary"])
                self._executor = ProcessPoolExecutor(max_workers=self.workers,
                                                     mp_context=context)
            return self._executor

    def grow(self, workers: int) -> None:
        """Make sure the pool has at least ``workers`` processes (a smaller pool is
        replaced; it finishes the tasks it has, e.g. another thread's, then ends)."""
        with self._lock:
            if workers <= self.workers:
                return
            old, self._executor = self._executor, None
            self.workers = int(workers)
        if old is not None:
            old.shutdown(wait=False)

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        return self._pool().submit(fn, *args)

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], *,
            workers: int | None = None, timeout: float | None = None,
            weights: Sequence[float] | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        from concurrent.futures.process import BrokenProcessPool
        limit = min(self.workers, workers or self.workers)
        try:
            return gather(self.submit, fn, tasks, limit=limit, timeout=timeout,
                          weights=weights, on_result=on_result)
        except (TimeoutError, BrokenProcessPool):
            # a running task cannot be cancelled, and a broken pool takes no more work:
            # end the workers (other threads' tasks in this pool fail with them)
            self.shutdown(kill=True)
            raise

    def shutdown(self, kill: bool = False) -> None:
        """End the pool (the next call creates a new one); ``kill`` ends the workers'
        running tasks too instead of waiting for them."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        # (the executor has no public way to end busy workers before Python 3.14)
        processes = list(getattr(executor, "_processes", {}).values()) if kill else []
        executor.shutdown(wait=not kill, cancel_futures=True)
        for proc in processes:
            proc.kill()
        for proc in processes:
            proc.join()


class FuturesExecutor:
    """Any :class:`concurrent.futures.Executor` (e.g. ``dask.distributed.Client(...)
    .get_executor()``) as a :class:`TaskExecutor`; the caller owns and shuts it down."""

    def __init__(self, executor: Executor, workers: int) -> None:
        self.executor = executor
        self.workers = int(workers)

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        return self.executor.submit(fn, *args)

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], *,
            workers: int | None = None, timeout: float | None = None,
            weights: Sequence[float] | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        limit = min(self.workers, workers or self.workers)
        return gather(self.submit, fn, tasks, limit=limit, timeout=timeout, weights=weights,
                      on_result=on_result)


class InlineExecutor:
    """A :class:`TaskExecutor` that runs every task in the calling thread, one after
    another (same results as in parallel): for work that runs inside a task of another
    engine, e.g. in a Dask worker, whose daemonic process may start no processes."""

    workers = 1

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future:
        fut: Future = Future()
        try:
            fut.set_result(fn(*args))
        except Exception as exc:  # noqa: BLE001 -- raised by the caller's result()
            fut.set_exception(exc)
        return fut

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], *,
            workers: int | None = None, timeout: float | None = None,
            weights: Sequence[float] | None = None,
            on_result: OnResult | None = None) -> list[Any]:
        return gather(self.submit, fn, tasks, limit=1, timeout=timeout, weights=weights,
                      on_result=on_result)


_DEFAULT_POOL = ProcessPool()
atexit.register(_DEFAULT_POOL.shutdown)
_CURRENT: ContextVar[TaskExecutor | None] = ContextVar("tabprotect_executor", default=None)


@contextlib.contextmanager
def use_executor(executor: TaskExecutor) -> Iterator[TaskExecutor]:
    """Send the package's parallel work (in this thread or task) to ``executor``.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> with ThreadPoolExecutor(2) as pool, use_executor(FuturesExecutor(pool, 2)):
    ...     process_map(abs, [-1, -2, 3], workers=2)
    [1, 2, 3]
    """
    token = _CURRENT.set(executor)
    try:
        yield executor
    finally:
        _CURRENT.reset(token)


def active_executor() -> TaskExecutor | None:
    """The executor set by :func:`use_executor` in this context, or None."""
    return _CURRENT.get()


def current_executor(workers: int) -> TaskExecutor:
    """The executor set by :func:`use_executor`, else the process pool grown to
    ``workers`` processes."""
    chosen = _CURRENT.get()
    if chosen is not None:
        return chosen
    _DEFAULT_POOL.grow(workers)
    return _DEFAULT_POOL


def process_map(fn: Callable[[Any], Any], tasks: Sequence[Any], workers: int = 2, *,
                weights: Sequence[float] | None = None, on_result: OnResult | None = None,
                timeout: float | None = None) -> list[Any]:
    """``[fn(t) for t in tasks]``, computed by ``workers`` worker processes.

    With one worker or at most one task the work runs in this process (same results, no
    start-up).  Results come back in task order whatever the finishing order; tasks are
    started heaviest first (``weights``, default all 1).  ``fn`` and the tasks must be
    picklable (``fn`` a module-level function).  The first error raised by ``fn`` is
    raised here; ``timeout`` (seconds, default none) bounds the whole call.

    Parameters
    ----------
    on_result : called as ``on_result(task_index, result)`` in this thread as results
        arrive

    Examples
    --------
    >>> process_map(abs, [-3, 1, -2], workers=2)
    [3, 1, 2]
    """
    n = len(tasks)
    workers = max(1, min(int(workers), n))
    if workers == 1:
        results = []
        for i, task in enumerate(tasks):
            results.append(fn(task))
            if on_result is not None:
                on_result(i, results[-1])
        return results
    return current_executor(workers).map(fn, tasks, workers=workers, timeout=timeout,
                                         weights=weights, on_result=on_result)


def map_runs(fn: Callable[[Any], Any], items: Sequence[Any], workers: int,
             job: Callable[[Sequence[Any]], Any]) -> list[Any]:
    """Cut ``items`` (in their order) into ``workers`` runs of neighbours and return
    ``[fn(job(run)) for run in runs]``, computed by :func:`process_map`.

    Examples
    --------
    >>> map_runs(sum, [1, 2, 3, 4, 5], 2, job=list)
    [3, 12]
    """
    cuts = [round(i * len(items) / workers) for i in range(workers + 1)]
    jobs = [job(items[a:b]) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    return process_map(fn, jobs, workers=len(jobs))

"""Run independent pieces of work (audit components, sub-tables) in worker processes.

Why not ``multiprocessing``: its ``spawn`` start method re-imports the caller's main
script in every worker (a script without an ``if __name__ == "__main__"`` guard then runs
again), and ``fork`` would copy HiGHS' thread pool into the child in a broken state. Here
each worker is a fresh ``python -m tabprotect.parallel`` process that receives a pickled
function and its tasks on stdin and sends one pickled result per task back on a private
pipe, so nothing of the caller is re-run and the workers' console output cannot corrupt
the results.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from typing import Any, Callable, Sequence


def process_map(fn: Callable[[Any], Any], tasks: Sequence[Any], workers: int = 2, *,
                weights: Sequence[float] | None = None,
                on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
    """``[fn(t) for t in tasks]``, computed in ``workers`` processes.

    Tasks are dealt to the workers up front, heaviest first to the least loaded worker
    (``weights``, default all 1), so the split is deterministic; results come back in task
    order whatever the finishing order. ``fn`` and the tasks must be picklable (``fn`` a
    module-level function). An exception raised by ``fn`` is raised here.

    Parameters
    ----------
    on_result : called as ``on_result(task_index, result)`` as results arrive (from a
        reader thread, one call at a time)

    Examples
    --------
    >>> process_map(abs, [-3, 1, -2], workers=2)
    [3, 1, 2]
    """
    n = len(tasks)
    if n == 0:
        return []
    workers = max(1, min(int(workers), n))
    if weights is None:
        weights = [1.0] * n
    bins: list[list[int]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for i in sorted(range(n), key=lambda i: (-float(weights[i]), i)):
        w = min(range(workers), key=lambda b: (load[b], b))
        bins[w].append(i)
        load[w] += float(weights[i])

    results: list[Any] = [None] * n
    received: set[int] = set()
    errors: list[BaseException] = []
    lock = threading.Lock()
    env = dict(os.environ)
    # the worker must import exactly the modules this process uses
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)

    def run_bin(indices: list[int]) -> None:
        read_fd, write_fd = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tabprotect.parallel", str(write_fd)],
                stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                pass_fds=(write_fd,))
        except BaseException as exc:  # pragma: no cover - cannot start python
            os.close(read_fd)
            os.close(write_fd)
            with lock:
                errors.append(exc)
            return
        os.close(write_fd)
        stderr_chunks: list[bytes] = []
        drain = threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()),
                                 daemon=True)
        drain.start()
        try:
            with proc.stdin:
                pickle.dump((fn, [tasks[i] for i in indices]), proc.stdin,
                            protocol=pickle.HIGHEST_PROTOCOL)
        except BrokenPipeError:
            pass
        except BaseException as exc:  # e.g. an unpicklable task: raised in the caller
            proc.kill()
            proc.wait()
            drain.join()
            os.close(read_fd)
            with lock:
                errors.append(exc)
            return
        with os.fdopen(read_fd, "rb") as pipe:
            for _ in indices:
                try:
                    local, ok, payload = pickle.load(pipe)
                except EOFError:
                    break
                with lock:
                    if not ok:
                        errors.append(payload)
                        continue
                    results[indices[local]] = payload
                    received.add(indices[local])
                    if on_result is not None and not errors:
                        on_result(indices[local], payload)
        proc.wait()
        drain.join()
        if proc.returncode != 0:
            tail = b"".join(stderr_chunks).decode(errors="replace").strip().splitlines()[-5:]
            with lock:
                errors.append(RuntimeError(
                    f"worker process failed (exit code {proc.returncode}): "
                    + " | ".join(tail)))

    threads = [threading.Thread(target=run_bin, args=(b,), daemon=True) for b in bins if b]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    sent = sorted(i for b in bins for i in b)
    if len(received) != len(sent):
        # a worker that ended without answering every task must not pass for a result
        missing = [i for i in sent if i not in received]
        raise RuntimeError(f"worker processes returned no result for task(s) {missing[:5]}")
    return results


def map_runs(fn: Callable[[Any], Any], items: Sequence[Any], workers: int,
             job: Callable[[Sequence[Any]], Any]) -> list[Any] | None:
    """Cut ``items`` (in their order) into ``workers`` runs of neighbours and return
    ``[fn(job(run)) for run in runs]``, computed in worker processes; None when no worker
    process could run ``fn``'s module (e.g. it was loaded from a file path): the caller
    then does the work in its own process.

    Examples
    --------
    >>> map_runs(sum, [1, 2, 3, 4, 5], 2, job=list)
    [3, 12]
    """
    cuts = [round(i * len(items) / workers) for i in range(workers + 1)]
    jobs = [job(items[a:b]) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    try:
        return process_map(fn, jobs, workers=len(jobs))
    except RuntimeError:
        return None


def _worker(result_fd: int) -> None:
    """Body of a worker process: tasks from stdin, results to ``result_fd``."""
    fn, items = pickle.load(sys.stdin.buffer)
    with os.fdopen(result_fd, "wb") as out:
        for i, item in enumerate(items):
            try:
                message = (i, True, fn(item))
            except BaseException as exc:  # sent back and raised in the caller
                message = (i, False, exc)
            pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()


if __name__ == "__main__":
    _worker(int(sys.argv[1]))

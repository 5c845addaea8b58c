"""tabprotect.parallel: a reused process pool behind a small executor protocol."""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest

from tabprotect.parallel import (FuturesExecutor, ProcessPool, current_executor, map_runs,
                                 process_map, use_executor)


def _square_minus(x: int) -> int:
    return x * x - 3 * x


def _pid(_: object) -> int:
    return os.getpid()


def _die(code: int) -> None:
    os._exit(code)


def _nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_results_equal_the_serial_ones_whatever_the_weights():
    tasks = list(range(-7, 7))
    serial = [_square_minus(t) for t in tasks]
    assert process_map(_square_minus, tasks, workers=2) == serial
    assert process_map(_square_minus, tasks, workers=2,
                       weights=[abs(t) for t in tasks]) == serial
    assert process_map(_square_minus, tasks, workers=1) == serial


def test_map_runs_equals_the_serial_runs():
    items = list(range(11))
    assert map_runs(sum, items, 3, job=list) == [sum(items[0:4]), sum(items[4:7]),
                                                  sum(items[7:11])]


def test_the_pool_is_reused_across_calls():
    seen = set()
    for _ in range(3):
        seen |= set(process_map(_pid, range(8), workers=2))
    # the work ran in worker processes, and the three calls shared the pool's processes
    # (a new process per call would show up to six)
    assert os.getpid() not in seen and len(seen) <= current_executor(2).workers
    assert current_executor(2).workers < 6


def test_on_result_sees_every_task_once():
    seen = []
    process_map(abs, [-1, -2, -3, -4], workers=2,
                on_result=lambda i, r: seen.append((i, r)))
    assert sorted(seen) == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_exception_in_a_task_is_raised_in_the_caller():
    with pytest.raises(ValueError):
        process_map(int, ["1", "x", "3"], workers=2)
    assert process_map(int, ["1", "2"], workers=2) == [1, 2]  # the pool still works


def test_console_output_of_a_task_does_not_corrupt_results(capfd):
    # print returns None; what it writes goes to the console, not into the results
    assert process_map(print, ["hello", "world"], workers=2) == [None, None]


def test_empty_and_single_task_run_here():
    assert process_map(abs, [], workers=2) == []
    assert process_map(_pid, [0], workers=4) == [os.getpid()]


def test_a_task_that_cannot_be_sent_is_an_error_not_a_missing_result():
    lock = threading.Lock()  # not picklable
    with pytest.raises(TypeError):
        process_map(id, [1, lock], workers=2)


def test_a_function_the_workers_cannot_import_is_an_error_not_serial_work():
    # a function defined inside a test cannot be pickled by reference
    def local(x):
        return x
    with pytest.raises(Exception):
        process_map(local, [1, 2], workers=2)


def test_time_out_raises_and_cancels_the_tasks_not_started():
    pool = ProcessPool(workers=2)
    try:
        with pytest.raises(TimeoutError):
            pool.map(_nap, [30.0] * 6, timeout=0.5)
        # the hung workers were ended; a new pool answers
        assert pool.map(_square_minus, [1, 2, 3]) == [-2, -2, 0]
    finally:
        pool.shutdown(kill=True)


def test_a_worker_that_dies_is_an_error_and_the_next_call_gets_a_new_pool():
    with pytest.raises(BrokenProcessPool):
        process_map(_die, [3, 3], workers=2)
    assert process_map(_square_minus, [1, 2], workers=2) == [-2, -2]


def test_another_engine_plugs_in_through_the_protocol():
    calls = []

    class Counting(FuturesExecutor):
        def submit(self, fn, /, *args):
            calls.append(args)
            return super().submit(fn, *args)

    with ThreadPoolExecutor(2) as threads:
        engine = Counting(threads, workers=2)
        with use_executor(engine):
            got = process_map(_square_minus, [4, 5, 6], workers=2)
    assert got == [_square_minus(t) for t in (4, 5, 6)]
    assert len(calls) == 3

"""tabprotect.parallel: worker processes fed by pipes."""
from __future__ import annotations

import pytest

from tabprotect.parallel import process_map


def test_results_in_task_order_with_uneven_weights():
    tasks = list(range(-7, 7))
    got = process_map(abs, tasks, workers=3, weights=[abs(t) for t in tasks])
    assert got == [abs(t) for t in tasks]


def test_on_result_sees_every_task_once():
    seen = []
    process_map(abs, [-1, -2, -3, -4], workers=2, on_result=lambda i, r: seen.append((i, r)))
    assert sorted(seen) == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_exception_in_a_task_is_raised_in_the_caller():
    with pytest.raises(ValueError):
        process_map(int, ["1", "x", "3"], workers=2)


def test_console_output_of_a_task_does_not_corrupt_results(capfd):
    # print returns None; what it writes goes to the console, not into the result pipe
    assert process_map(print, ["hello", "world"], workers=2) == [None, None]


def test_empty_and_single_worker():
    assert process_map(abs, [], workers=2) == []
    assert process_map(abs, [-5], workers=4) == [5]


def test_a_task_that_cannot_be_sent_is_an_error_not_a_missing_result():
    import threading
    lock = threading.Lock()  # not picklable
    with pytest.raises(TypeError):
        process_map(id, [1, lock], workers=2)

"""The seconds of a whole command-line run, stage by stage (``--profile FILE``, a JSON
file kept out of the output folder: that folder holds exactly the files its trail lists).

Each stage has its wall and CPU seconds (``time.process_time``: this process alone, so
the figures hold on a machine other work shares).  The stages follow one another and
cover the process from its start to the writing of the profile: ``start-up`` (the
interpreter, ``site`` and the command line's modules, measured from the process's start
time where the system gives it), ``parser``, ``imports`` (the pipeline, the job reader and
the writer), ``read job``, the pipeline's steps (``build table``, ``primary rules``,
``protect (METHOD)``, ``information loss`` ...), ``run: other`` (the pipeline between its
steps), ``writing`` and ``printing``.  Stages nested in a step (a method's own stages,
the compiled kernels' load) are listed under ``within`` and not added again.  What the
profile cannot see -- the interpreter's exit -- is the process's whole run (measured
outside) less ``total``.
"""
from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from tabprotect.errors import InputError


def process_age() -> float | None:
    """Wall seconds since this process started (Linux: ``/proc/self/stat``'s start time
    against the boot-time clock, to the clock tick); None where the system does not say."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class RunProfile:
    """Stages in the order they ran, each ``{"stage", "wall", "cpu"}``; the first is the
    start-up up to this object's creation."""

    def __init__(self) -> None:
        self.wall0 = time.perf_counter()
        self.cpu0 = time.process_time()
        age = process_age()
        #: wall seconds before this object (None where the process's start is unknown)
        self.before = age
        self.stages: list[dict] = [{"stage": "start-up", "wall": age, "cpu": self.cpu0}]
        self.within: list[dict] = []

    @contextmanager
    def stage(self, name: str):
        """Times the ``with`` body as the stage ``name``."""
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - wall, time.process_time() - cpu)

    def add(self, name: str, wall: float | None, cpu: float | None) -> None:
        self.stages.append({"stage": name, "wall": wall, "cpu": cpu})

    def add_within(self, stage: str, name: str, wall: float | None,
                   cpu: float | None = None) -> None:
        """A part of ``stage`` (already counted in it)."""
        self.within.append({"stage": stage, "part": name, "wall": wall, "cpu": cpu})

    def add_steps(self, steps: dict[str, tuple[float, float]], wall: float,
                  cpu: float) -> None:
        """The pipeline's steps (name -> (wall, CPU)) of a run that took ``wall`` and
        ``cpu`` seconds in all; the rest is the stage ``run: other``."""
        for name, (w, c) in steps.items():
            self.add(name, w, c)
        self.add("run: other", max(0.0, wall - sum(w for w, _ in steps.values())),
                 max(0.0, cpu - sum(c for _, c in steps.values())))

    def to_dict(self) -> dict:
        wall = time.perf_counter() - self.wall0
        return {"stages": [_rounded(s) for s in self.stages],
                "within": [_rounded(s) for s in self.within],
                "total": {"wall": None if self.before is None
                          else round(self.before + wall, 4),
                          "cpu": round(time.process_time(), 4)},
                "python": sys.version.split()[0]}

    def write(self, path: str | Path) -> Path:
        """The profile as JSON in ``path`` (no cell value: stage names and seconds); a
        path that cannot be written is one line naming it."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.to_dict(), indent=2), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--profile {path}: cannot write ({exc.strerror or exc})") \
                from None
        return path


def _rounded(entry: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in entry.items()}

"""What every job command shares: ``-o/--output`` (a folder), ``--quiet``, progress
lines on stderr, running the pipeline and writing the outputs.

Each command turns its options into job keys (``overrides``), runs
:func:`tabprotect.pipeline.run` and writes the run with
:func:`tabprotect.io.results.write_outputs`.  Exit code 0: the audit passed (or the run
has no audit); 1: the audit failed (nothing is written as ``published.csv``); 2: bad input.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import re
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tabprotect.io.job import Job
    from tabprotect.pipeline import Run

#: seconds between two progress lines within a step when stderr is not a terminal
LOG_INTERVAL = 5.0
#: a run shorter than this writes no progress line to a log file
QUIET_START = 1.0
_DIGITS = re.compile(r"\d+")


def add_job_arguments(p: argparse.ArgumentParser, job_help: str) -> None:
    """The job file, ``-o/--output`` and ``--quiet``."""
    p.add_argument("job", help=job_help)
    p.add_argument("-o", "--output", metavar="FOLDER",
                   help="output folder (default: [output] dir of the job, else ./out "
                   "beside the job file)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--profile", metavar="FILE",
                   help="also write FILE (JSON): the run's wall and CPU seconds per stage, "
                   "from the process's start to the writing (kept out of the output "
                   "folder, whose trail lists every file in it)")


class ProgressPrinter:
    """Progress on stderr: one updated line on a terminal; on a log file or pipe, plain
    lines from :data:`QUIET_START` seconds on, one per step and at most one per
    :data:`LOG_INTERVAL` seconds within a step (messages that differ only in their numbers,
    such as ``audit: 2 of 5 components``, are one step)."""

    def __init__(self, command: str, stream=None, clock=time.perf_counter):
        self.command = command
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.clock = clock
        self.start = clock()
        self.last_step: str | None = None
        self.last_time = -LOG_INTERVAL

    def __call__(self, step: str, fraction: float) -> None:
        now = self.clock() - self.start
        line = f"{self.command} [{now:7.1f} s {100 * fraction:3.0f}%] {step[:70]}"
        if self.tty:
            print(f"\r{line:<100}", end="", file=self.stream, flush=True)
            self.last_step = step
            return
        if now < QUIET_START:
            return
        kind = _DIGITS.sub("#", step)       # "audit: 2 of 5" is the step "audit: # of #"
        if kind != self.last_step or now - self.last_time >= LOG_INTERVAL:
            print(line, file=self.stream, flush=True)
            self.last_step, self.last_time = kind, now

    def close(self) -> None:
        """End the terminal's progress line."""
        if self.tty:
            print(file=self.stream, flush=True)


def execute(args, command: str, *, task: str, overrides: dict | None = None,
            report: bool = False, job: Job | None = None, **write_options) -> tuple[Run, int]:
    """Run the job of ``args`` and write its outputs; returns the run and the exit code.
    The pipeline is imported here, not with the module: the command line's parser is
    built without it; the packages of the task's step load with it (``task="auto"``: in
    the run)."""
    profile = getattr(args, "run_profile", None)
    stage = profile.stage if profile is not None else _no_stage
    with stage("imports"), _collector_paused():
        from tabprotect.io.job import load_job
        from tabprotect.io.results import write_outputs
        from tabprotect.pipeline import STEP_PACKAGES, run
        for package in STEP_PACKAGES.get(task, ()):
            __import__(package)
        # the modules' objects live as long as the command: the collector's full passes
        # during the run leave them out
        gc.freeze()
    with stage("read job"):
        job = job or load_job(args.job)
    if profile is not None:
        _check_profile_path(args.profile, job.input_files(),
                            job.output_folder(getattr(args, "output", None)))
    printer = None if getattr(args, "quiet", False) else ProgressPrinter(command)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        result = run(job, task=task, overrides=overrides, progress=printer)
    finally:
        if printer is not None:
            printer.close()
    if profile is not None:
        _profile_run(profile, result, time.perf_counter() - wall, time.process_time() - cpu)
    folder = job.output_folder(getattr(args, "output", None))
    with stage("writing"):
        write_outputs(result, folder, report=report, **write_options)
    with stage("printing"):
        print_outputs(result)
    if profile is not None:
        profile.write(args.profile)
    return result, 0 if result.passed in (None, True) else 1


def _check_profile_path(path, inputs, folder) -> None:
    """``--profile FILE`` replaces no input of the run and stays out of the output folder
    (whose trail lists every file in it); checked before the run."""
    from pathlib import Path
    from tabprotect.errors import InputError
    target = Path(path).resolve()
    if any(target == Path(p).resolve() for p in inputs):
        raise InputError(f"--profile {path}: an input of the run; choose another file")
    if target.is_relative_to(Path(folder).resolve()):
        raise InputError(f"--profile {path}: inside the output folder, whose trail lists "
                         f"every file in it; choose a file outside it")


@contextlib.contextmanager
def _no_stage(name: str):
    yield


@contextlib.contextmanager
def _collector_paused():
    """No collection while the pipeline's modules load: their some 6*10^4 objects are
    kept until the command ends, so a collection among them (one of 10-15 ms CPU in a
    cold run) walks them and frees next to nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _profile_run(profile, result: Run, wall: float, cpu: float) -> None:
    """The pipeline's steps as stages of ``profile``, the method's own stages and the
    compiled kernels' load (when this process loaded them) within its step."""
    steps = {name: (seconds, result.cpu_timings.get(name, 0.0))
             for name, seconds in result.timings.items()}
    profile.add_steps(steps, wall, cpu)
    step = next((n for n in steps if n.startswith("protect")), None)
    for name, seconds in result.method_stages.items():
        profile.add_within(step or "protect", name, seconds)
    kernel = sys.modules.get("tabprotect.secondary.modular.network_kernel")
    loaded = kernel.load_seconds() if kernel is not None else (0.0, 0.0)
    if loaded[0] > 0:
        profile.add_within(step or "protect", "compiled kernels' load", *loaded)


def print_outputs(result: Run) -> None:
    """The verdict and the files written, on stdout."""
    from tabprotect.io.results import OUTPUT_FILES
    print(f"audit: {result.verdict}" + (f"   attacker model: {result.attacker}"
                                         if result.audit is not None else ""))
    if result.passed is False:
        print(f"the pattern failed its audit: written only as "
              f"{OUTPUT_FILES['unsafe'][0]}; do not publish it")
    for key, path in result.outputs.items():
        print(f"{key}: {path}")

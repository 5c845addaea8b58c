"""The command line: help, the audit command, and bad input (one line, exit code 2)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from helpers import AUDIT_CELLS as CELLS, AUDIT_REGION as REGION, write_audit_job as write_job
from tabprotect.cli import main

def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("audit", "demo"):
        assert cmd in out


def test_audit_command_writes_intervals(tmp_path, capsys):
    job = write_job(tmp_path)
    rc = main(["audit", str(job)])
    out = capsys.readouterr().out
    assert rc == 0 and "PASSED" in out
    frame = pd.read_csv(tmp_path / "out" / "audit.csv", dtype={"region": str, "size": str})
    assert {"lower", "upper", "required_lower", "required_upper", "protected"} <= set(frame)
    row = frame[(frame.region == "N1") & (frame["size"] == "s1")].iloc[0]
    # N1,s1 = 5 with N1,s2 / N2,s1 / N2,s2 hidden: a 2x2 block inside N's rows
    assert row.lower == 0 and row.upper == 6


def test_audit_margins_only(tmp_path, capsys):
    job = write_job(tmp_path)
    rc = main(["audit", str(job), "--published-only-margins", "--all-cells"])
    assert rc == 0
    frame = pd.read_csv(tmp_path / "out" / "audit.csv")
    assert len(frame) == 5 * 3


BAD_CASES = {
    "non-additive total": (CELLS + "N,s1,99,\n", REGION, "true", r"cells.csv: total cell \(region=N, size=s1\) is not the sum"),
    "duplicated cell": (CELLS + "S,s2,6,\n", REGION, "true", r"line 8: cell \(region=S, size=s2\) is duplicated"),
    "unknown code": (CELLS + "X9,s2,6,\n", REGION, "true", r"line 8: the code in column 'region' is not in its hierarchy"),
    "cycle": (CELLS, REGION + "N1,N\n", "true", r"region.csv.*two parents|cycle"),
    "two roots": (CELLS, REGION + "Other,S9\n", "true", r"2 roots"),
    # the input cell is named, not a total its value makes negative
    "negative value": (CELLS.replace("S,s1,4,", "S,s1,-9,"), REGION, "true",
                       r"cells.csv: cell \(region=S, size=s1\) has a negative value"),
    "missing value": (CELLS.replace("S,s1,4,", "S,s1,,"), REGION, "true", r"line 6: value column 'value' of cell \(region=S, size=s1\) is missing"),
    "empty file": ("", REGION, "true", r"cells.csv: empty file"),
    "not a number": (CELLS.replace("S,s1,4,", "S,s1,four,"), REGION, "true", r"not a number"),
    "missing totals": (CELLS + "N,s1,3,\n", REGION, "false", r"not the sum of its parts"),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, case):
    cells, region, compute, pattern = BAD_CASES[case]
    job = write_job(tmp_path, cells, region, compute)
    rc = main(["audit", str(job)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    import re
    assert re.search(pattern, err), err
    # no confidential value in the message
    assert "99" not in err and "four" not in err


def test_unknown_column_and_section(tmp_path, capsys):
    job = write_job(tmp_path)
    job.write_text(job.read_text().replace('value = "value"', 'value = "turnover"'))
    assert main(["audit", str(job)]) == 2
    assert "column 'turnover' not found" in capsys.readouterr().err
    job.write_text(job.read_text() + "\n[bogus]\nx = 1\n")
    assert main(["audit", str(job)]) == 2
    assert "unknown section [bogus]" in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "nope.toml")]) == 2


def test_hierarchy_columns_with_an_empty_code(tmp_path, capsys):
    job = write_job(tmp_path, region="grp,region\nN,N1\nN,N2\n,S\n")
    job.write_text(job.read_text().replace('pairs = "region.csv"',
                                           'file = "region.csv"\ncolumns = ["grp", "region"]'))
    assert main(["audit", str(job)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "region.csv line 4: empty code in column 'grp'" in err, err


def test_output_folder_that_is_a_file_is_one_line(tmp_path, capsys):
    job = write_job(tmp_path)
    (tmp_path / "taken").write_text("not a folder\n")
    rc = main(["audit", str(job), "-o", str(tmp_path / "taken"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert "taken: cannot write the output folder there" in err
    assert (tmp_path / "taken").read_text() == "not a folder\n"


def test_table_too_large_for_memory_is_one_line(tmp_path, capsys):
    """Three dimensions of 60,000 codes: a product of 2*10^14 cells, more than a process can
    address, is one line naming the allocation, exit 2, not a MemoryError traceback."""
    names = ["x", "y", "z"]
    pairs = "parent,child\n" + "".join(f"T,c{i}\n" for i in range(60_000))
    for d in names:
        (tmp_path / f"{d}.csv").write_text(pairs)
    (tmp_path / "cells.csv").write_text("x,y,z,value,freq\nc1,c1,c1,5,1\n")
    (tmp_path / "job.toml").write_text(
        '[input]\ncells = "cells.csv"\ndimensions = ["x", "y", "z"]\ncompute_totals = true\n'
        + "".join(f'[hierarchies.{d}]\npairs = "{d}.csv"\n' for d in names)
        + '[rules]\nfrequency = {n = 3, safety_range = 30}\n')
    code = main(["primary", str(tmp_path / "job.toml"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("tabprotect primary: error: not enough memory for this job")


def test_console_script_no_traceback(tmp_path):
    job = write_job(tmp_path, CELLS + "X9,s2,6,\n")
    # python -m tabprotect runs the command line as well as python -m tabprotect.cli
    proc = subprocess.run([sys.executable, "-m", "tabprotect", "audit", str(job)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "line 8" in proc.stderr
    assert "X9" not in proc.stderr      # a data field is named by row and column, not quoted
    proc = subprocess.run([sys.executable, "-m", "tabprotect.cli", "--debug", "audit",
                           str(job)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" in proc.stderr


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_on_a_log_file_is_plain_and_throttled():
    import io

    from tabprotect.commands.common import LOG_INTERVAL, QUIET_START, ProgressPrinter
    stream, clock = io.StringIO(), Clock()
    say = ProgressPrinter("protect", stream=stream, clock=clock)
    say("build table", 0.0)                        # within the first second: nothing
    clock.now += QUIET_START
    for k in range(50):                            # one step, many calls, little time
        say("protect (optimal)", 0.2 + k / 100)
    clock.now += LOG_INTERVAL
    say("protect (optimal)", 0.7)                  # the same step, after the interval
    for k in range(1, 6):                          # a new step, counting
        say(f"audit: {k} of 5 components", 0.8)
    say.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in stream.getvalue()
    assert lines[0].startswith("protect [") and lines[0].endswith("protect (optimal)")
    assert lines[1].endswith("protect (optimal)")
    assert lines[2].endswith("audit: 1 of 5 components")


def test_every_job_command_takes_output_folder_and_quiet():
    from tabprotect.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in ("primary", "protect", "audit", "round", "audit-rounded", "report",
                 "compare", "demo", "risk", "perturb", "cellkey", "swap"):
        options = {o for a in sub.choices[name]._actions for o in a.option_strings}
        assert {"-o", "--output", "--quiet"} <= options, name


def _run_python(code: str, *args) -> subprocess.CompletedProcess:
    """``code`` run by a new Python process with ``args`` as its arguments; it must
    succeed."""
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_the_parser_and_help_load_no_numerical_package():
    # the command line starts without pandas, the solvers or any method: a command's
    # implementation (and what it needs) is imported when the command runs
    code = ("import sys\n"
            "import tabprotect, tabprotect.cli as cli\n"
            "cli.build_parser()\n"
            "heavy = ('numpy', 'pandas', 'scipy', 'highspy', 'numba', 'matplotlib',\n"
            "         'fastapi', 'dask', 'tabprotect.pipeline', 'tabprotect.model')\n"
            "print([m for m in heavy if m in sys.modules])\n"
            "assert tabprotect.__version__\n")
    proc = _run_python(code)
    assert proc.stdout.strip() == "[]"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(),
                    reason="counts the process's threads in /proc/self/task (Linux)")
def test_the_command_runs_blas_on_one_thread_unless_told(tmp_path):
    """The ``tabprotect`` command's process starts no BLAS thread pool: after a protect
    job (numpy, scipy and HiGHS loaded) it has as many threads as with
    OPENBLAS_NUM_THREADS=1; a value the user sets is kept."""
    job = write_job(tmp_path)
    code = ("import atexit, os, sys\n"
            "atexit.register(lambda: print('threads', len(os.listdir('/proc/self/task')),\n"
            "                              os.environ['OPENBLAS_NUM_THREADS']))\n"
            "from tabprotect.cli import console\n"
            "sys.argv = ['tabprotect', 'protect', sys.argv[1], '--method', 'modular',\n"
            "            '--quiet']\n"
            "console()\n")

    def threads(blas: str | None) -> tuple[int, str]:
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
        if blas is not None:
            env["OPENBLAS_NUM_THREADS"] = blas
        proc = subprocess.run([sys.executable, "-c", code, str(job)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        count, told = proc.stdout.split("threads")[-1].split()
        return int(count), told

    one = threads("1")
    assert threads(None) == one
    assert threads("2")[1] == "2"


def test_the_command_collects_rarely(tmp_path):
    """The ``tabprotect`` command's process runs the collector a few times during a job,
    not the default dozens (a one-job process keeps what it imports until it ends)."""
    job = write_job(tmp_path)
    code = ("import atexit, gc, sys\n"
            "count = lambda: sum(s['collections'] for s in gc.get_stats())\n"
            "start = count()\n"
            "atexit.register(lambda: print('collections', count() - start, file=sys.stderr))\n"
            "from tabprotect.cli import console\n"
            "sys.argv = ['tabprotect', 'audit', sys.argv[1], '--quiet']\n"
            "console()\n")
    proc = _run_python(code, job)
    collections = int(proc.stderr.split("collections")[-1].split()[0])
    assert collections <= 10


def test_no_collection_while_the_pipeline_loads(tmp_path):
    """The command's imports (numpy, scipy, the pipeline: some 6*10^4 objects kept to the
    end) run with the collector paused, however low its threshold; it runs again for the
    job itself."""
    job = write_job(tmp_path)
    code = ("import gc, sys\n"
            "from tabprotect.cli import main\n"
            "loading = []\n"
            "gc.callbacks.append(lambda phase, info: phase == 'start' and loading.append(\n"
            "    'tabprotect.io.job' in sys.modules and gc.get_freeze_count() == 0))\n"
            "gc.set_threshold(500)\n"
            "main(['protect', sys.argv[1], '--quiet'])\n"
            "print('while loading', loading.count(True), 'after', loading.count(False),\n"
            "      'enabled', gc.isenabled())\n")
    proc = _run_python(code, job)
    loading, after, enabled = proc.stdout.splitlines()[-1].split()[2:7:2]
    assert loading == "0" and int(after) > 0 and enabled == "True"


def test_a_protect_job_imports_only_what_it_uses(tmp_path):
    """A small protect job's process loads neither the HTML report (no ``--report``), the
    process pool (small work stays in-process), a tabulation engine (a cells file) nor
    the other commands' modules."""
    job = write_job(tmp_path)
    code = ("import sys\n"
            "from tabprotect.cli import main\n"
            "code = main(['protect', sys.argv[1], '--method', 'modular', '--quiet'])\n"
            "unused = ('tabprotect.report', 'tabprotect.report_plots', 'multiprocessing',\n"
            "          'concurrent.futures.process', 'tabprotect.tabulate.api',\n"
            "          'tabprotect.commands.risk', 'tabprotect.commands.demo')\n"
            "print('loaded:', *[m for m in unused if m in sys.modules], code)\n")
    proc = _run_python(code, job)
    assert proc.stdout.splitlines()[-1] == "loaded: 0"
    assert (tmp_path / "out" / "published.csv").exists()


def test_the_command_table_names_every_command_and_its_module():
    """Parsing one command imports its module alone: the table of commands and modules
    holds every command the modules define, and gives each the same entry."""
    from tabprotect.cli import COMMAND_MODULES, _discover, build_parser
    every = _discover()
    assert set(COMMAND_MODULES) == set(every)
    for name in COMMAND_MODULES:
        assert _discover(name)[name] == every[name]
    args = build_parser("protect").parse_args(["protect", "job.toml", "--quiet"])
    assert args.command == "protect" and args.quiet and args.job == "job.toml"


def test_audit_of_a_rounding_job_points_to_its_task(tmp_path, capsys):
    # `tabprotect audit` audits the input's suppressed cells; on a job whose step is
    # [round] the one-line error names that step's task instead of saying it has none
    (tmp_path / "cells.csv").write_text("row,col,value\nA,x,3\nA,y,7\nB,x,0\nB,y,12\n")
    (tmp_path / "job.toml").write_text(
        '[input]\ncells = "cells.csv"\ndimensions = ["row", "col"]\ncompute_totals = true\n'
        '\n[round]\nbase = 3\n')
    assert main(["audit", str(tmp_path / "job.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no [protect] or [round] step" not in err and "[round] step is run by" in err

"""The job schema: every bad key, type, range and file is exit code 2 with one line naming
the file and the key, before any work; docs/jobs.md and the schema agree."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tabprotect.cli import main
from tabprotect.io.reference import generated, generated_part
from tabprotect.io.schema import SECTIONS

ROOT = Path(__file__).resolve().parents[1]

CELLS = "region,size,value,freq,status\nN1,a,5,4,U\nN1,b,7,3,M\nN2,a,1,3,M\nN2,b,9,5,M\n" \
        "S,a,4,4,\nS,b,6,6,\n"
REGION = "parent,child\nTotal,N\nTotal,S\nN,N1\nN,N2\n"
JOB = """
[input]
cells = "cells.csv"
dimensions = ["region", "size"]
status = "status"
compute_totals = true

[hierarchies.region]
pairs = "region.csv"
"""


def write(tmp_path, job=JOB, cells=CELLS) -> Path:
    (tmp_path / "cells.csv").write_text(cells)
    (tmp_path / "region.csv").write_text(REGION)
    (tmp_path / "job.toml").write_text(job)
    return tmp_path / "job.toml"


def run_cli(args, capsys) -> tuple[int, str]:
    code = main(args)
    err = capsys.readouterr().err.strip()
    return code, err


def test_docs_reference_is_generated_from_the_schema():
    assert generated_part(ROOT / "docs" / "jobs.md") == generated(), \
        "run: python -m tabprotect.io.reference docs/jobs.md"
    text = (ROOT / "docs" / "jobs.md").read_text()
    for section in SECTIONS.values():
        for key in section.keys:
            assert f"| `{key.name}` |" in text


BAD_JOBS = {
    "compute_totals as a string": (
        JOB.replace("compute_totals = true", 'compute_totals = "false"'),
        r"job.toml \[input\] compute_totals: must be a boolean, not a string"),
    "misspelt input key": (JOB.replace('status = "status"', 'status = "status"\nvaleu = "v"'),
                           r"job.toml \[input\]: unknown key 'valeu'"),
    "time_limit as a word": (JOB + '\n[protect]\ntime_limit = "fast"\n',
                             r"\[protect\] time_limit: must be a number, not a string"),
    "infinite time_limit": (JOB + "\n[protect]\ntime_limit = inf\n",
                            r"\[protect\] time_limit: must be a finite number"),
    "negative time_limit": (JOB + "\n[audit]\ntime_limit = -1\n",
                            r"\[audit\] time_limit: must be > 0"),
    "negative random seed": (JOB + '\n[round]\nbase = 5\nmethod = "random"\nseed = -5\n',
                             r"\[round\] seed: must be >= 0"),
    "misspelt protect key": (JOB + "\n[protect]\ntime_limt = 5\n",
                             r"\[protect\]: unknown key 'time_limt'"),
    "unknown protect key": (JOB + "\n[protect]\nfoo = 1\n", r"\[protect\]: unknown key 'foo'"),
    "rule count as a word": (JOB + '\n[rules.frequency]\nn = "three"\n',
                             r"\[rules.frequency\] n: must be an integer, not a string"),
    "bad choice": (JOB + '\n[protect]\nmethod = "fastest"\n',
                   r"\[protect\] method: must be one of optimal, modular"),
    "option of another method": (JOB + '\n[protect]\nmethod = "optimal"\nmax_passes = 3\n',
                                 r"\[protect\]: unknown key 'max_passes'"),
    "unknown section": (JOB + "\n[bogus]\nx = 1\n", r"unknown section \[bogus\]"),
    "hierarchy key": (JOB.replace('pairs = "region.csv"', 'pairs = "region.csv"\ntotl = "T"'),
                      r"\[hierarchies.region\]: unknown key 'totl'"),
    "hierarchy of no dimension": (JOB + '\n[hierarchies.regoin]\nflat = true\n',
                                  r"\[hierarchies.regoin\]: 'regoin' is not a dimension"),
    "dimension named twice": (JOB.replace('["region", "size"]', '["region", "region"]'),
                              r"\[input\] dimensions: 'region' is named twice"),
    "two sources of a hierarchy": (
        JOB.replace('pairs = "region.csv"', 'pairs = "region.csv"\ncodes = ["N1", "N2"]'),
        r"\[hierarchies.region\]: give one of .*, not pairs and codes"),
    "a key of another hierarchy source": (
        JOB.replace('pairs = "region.csv"', 'pairs = "region.csv"\nlead = "#"'),
        r"\[hierarchies.region\]: 'lead' goes with 'hrc'"),
    "a total the pairs do not have": (
        JOB.replace('pairs = "region.csv"', 'pairs = "region.csv"\ntotal = "T"'),
        r"\[hierarchies.region\] total: the root of region.csv is not 'T'"),
    "group check along no dimension": (
        JOB + '\n[rules.group]\ndimensions = ["sz"]\n',
        r"\[rules.group\] dimensions: 'sz' is not a dimension of the table"),
    "a duckdb key with another engine": (
        JOB + '\n[microdata]\nfile = "m.csv"\nengine = "memory"\nthreads = 4\n',
        r"\[microdata\]: 'threads' applies to the duckdb engine only \(the engine is memory\)"),
    "cost column without the column cost": (
        JOB + '\n[protect]\ncost = "unity"\ncost_column = "w"\n',
        r"\[protect\]: 'cost_column' applies to cost = \"column\" only \(the cost is unity\)"),
    "cost column of a compared method": (
        JOB + '\n[compare]\nmethods = [{method = "gauss", cost_column = "w"}]\n',
        r"\[compare\] methods\[0\]: 'cost_column' applies to cost = \"column\" only"),
}


@pytest.mark.parametrize("case", list(BAD_JOBS))
@pytest.mark.parametrize("command", ["audit", "protect", "report"])
def test_bad_job_is_one_line_exit_2(tmp_path, capsys, case, command):
    job, pattern = BAD_JOBS[case]
    code, err = run_cli([command, str(write(tmp_path, job)), "--quiet"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    import re
    assert re.search(pattern, err), err
    assert not (tmp_path / "out").exists()          # checked before any work


def test_method_options_are_accepted_for_their_method(tmp_path, capsys):
    job = JOB + '\n[protect]\nmethod = "modular"\nmax_passes = 3\nsingleton = false\n'
    code, err = run_cli(["protect", str(write(tmp_path, job)), "--quiet"], capsys)
    assert code == 0, err
    bad = JOB + '\n[protect]\nmethod = "modular"\nmax_passes = "many"\n'
    code, err = run_cli(["protect", str(write(tmp_path, bad)), "--quiet"], capsys)
    assert code == 2 and "max_passes: must be an integer" in err


def test_command_line_options_are_checked_like_job_keys(tmp_path, capsys):
    code, err = run_cli(["protect", str(write(tmp_path)), "--time-limit", "-5"], capsys)
    assert code == 2 and "[protect] time_limit: must be > 0" in err


def test_non_utf8_job_file(tmp_path, capsys):
    path = write(tmp_path)
    path.write_bytes(JOB.encode() + b"\n[job]\ntitle = \"Z\xfcrich\"\n")
    code, err = run_cli(["audit", str(path)], capsys)
    assert code == 2 and err.endswith("job.toml: not UTF-8 text (byte "
                                      f"{len(JOB.encode()) + 17})")


@pytest.mark.parametrize("kind", ["hrc", "jj", "service config", "tokens file"])
def test_non_utf8_input_file_is_one_line(tmp_path, capsys, kind):
    """A Latin-1 hierarchy, JJ file or service setting: one line naming the file, exit 2."""
    latin1 = "Z\xfcrich".encode("latin-1")
    if kind == "hrc":
        job = write(tmp_path, JOB.replace('pairs = "region.csv"', 'hrc = "region.hrc"'))
        (tmp_path / "region.hrc").write_bytes(b"N\n@N1\n@N2\nS\n@" + latin1 + b"\n")
        args, name = ["audit", str(job)], "region.hrc"
    elif kind == "jj":
        (tmp_path / "job.toml").write_text('[input]\njj = "t.jj"\n')
        (tmp_path / "t.jj").write_bytes(b"0\n1\n0 5 1 s 0 9 0 0 0\n0\n# " + latin1 + b"\n")
        args, name = ["audit", str(tmp_path / "job.toml")], "t.jj"
    elif kind == "service config":
        (tmp_path / "service.toml").write_bytes(b"[service]\nport = 9000  # " + latin1 + b"\n")
        args, name = ["serve", "--config", str(tmp_path / "service.toml")], "service.toml"
    else:
        (tmp_path / "tokens.txt").write_bytes(b"token-" + latin1 + b"-0123456789\n")
        (tmp_path / "service.toml").write_text('[service]\ntokens_file = "tokens.txt"\n')
        args, name = ["serve", "--config", str(tmp_path / "service.toml")], "tokens.txt"
    code, err = run_cli(args, capsys)
    assert code == 2 and err.endswith(f"{name}: not UTF-8 text"), err
    assert len(err.splitlines()) == 1 and "rich" not in err


def test_status_words_are_mapped_and_others_are_errors(tmp_path, capsys):
    # 'primary' is U (suppressed), never P: the audit then judges it as a primary
    cells = CELLS.replace("N1,a,5,4,U", "N1,a,5,4,primary").replace("S,a,4,4,", "S,a,4,4,Safe")
    code, err = run_cli(["audit", str(write(tmp_path, cells=cells)), "--quiet"], capsys)
    assert code == 0, err
    import pandas as pd
    status = pd.read_csv(tmp_path / "out" / "cells.csv", dtype=str)["status"]
    assert (status == "U").sum() == 1 and (status == "P").sum() == 0
    bad = CELLS.replace("N2,b,9,5,M", "N2,b,9,5,Pending")
    code, err = run_cli(["audit", str(write(tmp_path, cells=bad))], capsys)
    assert code == 2 and "cells.csv line 5, column 'status': not a status" in err
    assert "Pending" not in err
    # a published table read back: its X says suppressed, not primary or secondary
    code, err = run_cli(["audit", str(write(tmp_path, cells=CELLS.replace(",U\n", ",X\n")))],
                        capsys)
    assert code == 2 and "line 2, column 'status'" in err and "X, published.csv's" in err


def test_infinite_value_and_overflowing_total(tmp_path, capsys):
    code, err = run_cli(["audit", str(write(tmp_path, cells=CELLS.replace(
        "S,b,6,6", "S,b,inf,6")))], capsys)
    assert code == 2 and "line 7: value column 'value'" in err and "finite" in err
    huge = CELLS.replace("S,a,4,4", "S,a,1e308,4").replace("S,b,6,6", "S,b,1e308,6")
    with warnings.catch_warnings():     # a numpy warning would be more lines on stderr
        warnings.simplefilter("error")
        code, err = run_cli(["audit", str(write(tmp_path, cells=huge))], capsys)
    assert code == 2 and "overflows" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("column", ["upl", "lpl", "spl", "cost"])
def test_negative_protection_level_or_cost_is_one_line(tmp_path, capsys, column):
    """A protection level or cost is a size: a negative one (a sign error, a wrong column)
    is bad input, not a primary cell the audit protects trivially."""
    cells = CELLS.replace("status\n", f"status,{column}\n", 1).replace(
        "N1,a,5,4,U", "N1,a,5,4,U,-2")
    cells = "\n".join(line if line.count(",") == 5 else line + ",0"
                      for line in cells.strip().splitlines()) + "\n"
    job = JOB.replace('status = "status"', f'status = "status"\n{column} = "{column}"')
    code, err = run_cli(["audit", str(write(tmp_path, job, cells))], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"line 2: {column} column '{column}' of cell (region=N1, size=a) is negative" in err
    assert "-2" not in err


@pytest.mark.parametrize("tops, words", [("2,3", "the largest contributions first"),
                                         ("7,1", "largest contribution is above its value")])
def test_top_columns_out_of_order_or_above_the_value_are_one_line(tmp_path, capsys, tops,
                                                                   words):
    # N2,b (value 9) gets the bad contributions; every other cell a valid pair
    lines = CELLS.strip().splitlines()
    cells = "\n".join([lines[0] + ",top1,top2"] + [
        line + ("," + tops.replace("7,", "97,") if line.startswith("N2,b") else ",1,0")
        for line in lines[1:]]) + "\n"
    job = JOB.replace('status = "status"', 'status = "status"\ntop = "top"')
    code, err = run_cli(["audit", str(write(tmp_path, job, cells))], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "cells.csv: cell (region=N2, size=b)" in err and words in err, err
    assert "97" not in err and not (tmp_path / "out").exists()


def test_freq_column_named_in_the_job_must_be_in_the_file(tmp_path, capsys):
    """freq is optional in the file, but a column the job names is not: a misspelt header
    would otherwise leave every contributor count unknown without a word."""
    cells = CELLS.replace("value,freq,status", "value,frq,status")
    code, _ = run_cli(["audit", str(write(tmp_path, cells=cells)), "--quiet"], capsys)
    assert code == 0                       # freq not named: the file may leave it out
    job = JOB.replace('status = "status"', 'status = "status"\nfreq = "freq"')
    code, err = run_cli(["audit", str(write(tmp_path, job, cells)), "--quiet"], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "cells.csv: freq column 'freq' not found (columns: region, size, value, frq" in err


def test_parquet_without_pyarrow_names_the_extra(tmp_path):
    job = write(tmp_path, JOB.replace('cells = "cells.csv"', 'cells = "cells.parquet"'))
    (tmp_path / "cells.parquet").write_bytes(b"PAR1")
    # a Python where pyarrow cannot be imported (sys.modules entry None blocks the import)
    code = ("import sys; sys.modules['pyarrow'] = None; sys.modules['fastparquet'] = None; "
            "from tabprotect.cli import main; sys.exit(main(['audit', sys.argv[1]]))")
    proc = subprocess.run([sys.executable, "-c", code, str(job)], capture_output=True,
                          text=True, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "tabprotect audit: error: cells.parquet: reading Parquet needs pyarrow: pip install "
        "'tabprotect[files]'"]


def test_manual_status_words_are_mapped(tmp_path, capsys):
    """A manual a-priori file saying 'primary' makes the cell unsafe (never protected)."""
    (tmp_path / "apriori.csv").write_text("region,size,status\nS,a,primary\n")
    job = JOB + '\n[rules]\nmanual = "apriori.csv"\n'
    code, err = run_cli(["primary", str(write(tmp_path, job))], capsys)
    assert code == 0, err
    import pandas as pd
    cells = pd.read_csv(tmp_path / "out" / "primary.csv", dtype=str)
    row = cells[(cells.region == "S") & (cells["size"] == "a")].iloc[0]
    assert row.status == "U"
    (tmp_path / "apriori.csv").write_text("region,size,status\nS,a,private\n")
    code, err = run_cli(["primary", str(write(tmp_path, job))], capsys)
    assert code == 2 and "apriori.csv" in err and "not a status" in err


#: each method's package, imported when a job names the method
METHOD_PACKAGES = {"optimal": "tabprotect.secondary.optimal",
                   "modular": "tabprotect.secondary.modular",
                   "hypercube": "tabprotect.secondary.hypercube",
                   "gauss": "tabprotect.secondary.gauss",
                   "greedy": "tabprotect.secondary.greedy", "cta": "tabprotect.adjust"}
CHECK_METHOD_JOB = """
import dataclasses, json, sys
from tabprotect.errors import InputError
from tabprotect.io.schema import check_job
method, packages = sys.argv[1], json.loads(sys.argv[2])
loaded = lambda: sorted(m for m in packages.values() if m in sys.modules)
assert loaded() == [], loaded()
from tabprotect.secondary import METHODS
options = METHODS[method].options
keys = [f.name for f in dataclasses.fields(options)
        if type(f.default) in (bool, int, float, str) and f.name != "time_limit"]
spec = {"input": {"cells": "c.csv", "dimensions": ["r"]},
        "protect": {"method": method, keys[0]: options().__getattribute__(keys[0])}}
check_job(spec)
try:
    check_job({**spec, "protect": {"method": method, "no_such_option": 1}})
    raise SystemExit("an unknown option passed")
except InputError as exc:
    assert keys[0] in str(exc), str(exc)
print(json.dumps({"loaded": loaded(), "key": keys[0]}))
"""


@pytest.mark.parametrize("method", sorted(METHOD_PACKAGES))
def test_a_job_checks_a_method_option_by_loading_that_method(method):
    # the schema finds a method's option types through the registry, which imports the
    # method's package on first use: no method is loaded before, each method's options
    # are found (a method whose options class is not found would reject its own option)
    import json
    out = subprocess.run([sys.executable, "-c", CHECK_METHOD_JOB, method,
                          json.dumps(METHOD_PACKAGES)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert METHOD_PACKAGES[method] in json.loads(out.stdout.splitlines()[-1])["loaded"]

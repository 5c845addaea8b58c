"""``--profile FILE``: the stages of a command-line run cover the process's CPU seconds
(measured from outside), and the command's early exit loses no output."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from helpers import AUDIT_CELLS, write_audit_job
from tabprotect.io.profile import RunProfile, process_age

ROOT = Path(__file__).resolve().parents[1]

def _run(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    """``python -m tabprotect ARGS`` (the console's entry) and its CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "tabprotect", *args], cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def test_profile_stages_cover_the_process_and_no_output_is_lost(tmp_path):
    job = write_audit_job(tmp_path)
    proc, cpu = _run(["audit", str(job), "-o", str(tmp_path / "out"), "--profile",
                      str(tmp_path / "profile.json")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "out"
    printed = proc.stdout
    for name in ("published.csv", "cells.csv", "audit.csv", "summary.json", "trail.json"):
        assert (out / name).stat().st_size > 0, name
        assert str(out / name) in printed, name       # stdout flushed before the exit
    assert json.loads((out / "summary.json").read_text())["verdict"] == "PASSED"
    listed = json.loads((out / "trail.json").read_text())["outputs"]
    assert len(listed) == len([f for f in out.iterdir() if f.name != "trail.json"])
    profile = json.loads((tmp_path / "profile.json").read_text())
    names = [s["stage"] for s in profile["stages"]]
    assert names[:4] == ["start-up", "parser", "imports", "read job"]
    assert names[-2:] == ["writing", "printing"]
    assert "build table" in names and any(n.startswith("audit") for n in names)
    staged = sum(s["cpu"] for s in profile["stages"])
    assert abs(staged - profile["total"]["cpu"]) <= 0.02 + 0.02 * staged
    # the stages account for the process's CPU seconds as the system counts them
    # (the exit and the fork are all they miss): compare shares, generously
    assert 0.7 * cpu <= staged <= 1.1 * cpu + 0.05, (staged, cpu)
    if profile["total"]["wall"] is not None:
        walls = sum(s["wall"] for s in profile["stages"])
        assert abs(walls - profile["total"]["wall"]) <= 0.05 + 0.05 * walls


def test_without_profile_no_profile_file(tmp_path):
    job = write_audit_job(tmp_path)
    proc, _ = _run(["audit", str(job), "-o", str(tmp_path / "out"), "--quiet"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not list(tmp_path.glob("**/*profile*"))
    assert (tmp_path / "out" / "published.csv").exists()


def test_failed_audit_exit_code_survives_the_early_exit(tmp_path):
    # N2/s1 published: N1's cell is derived from its row and column
    job = write_audit_job(tmp_path, cells=AUDIT_CELLS.replace("N2,s1,1,M", "N2,s1,1,"))
    proc, _ = _run(["audit", str(job), "-o", str(tmp_path / "out"), "--quiet"], tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "do not publish" in proc.stdout


def test_profile_stages_add_up_in_process():
    profile = RunProfile()
    with profile.stage("one"):
        sum(range(200_000))
    profile.add_steps({"a": (0.5, 0.25), "b": (0.25, 0.125)}, 1.0, 0.5)
    data = profile.to_dict()
    assert [s["stage"] for s in data["stages"]] == ["start-up", "one", "a", "b",
                                                   "run: other"]
    other = data["stages"][-1]
    assert (other["wall"], other["cpu"]) == (0.25, 0.125)
    age = process_age()
    assert age is None or age > 0


def test_a_profile_path_that_cannot_be_written_is_one_line(tmp_path):
    job = write_audit_job(tmp_path)
    proc, _ = _run(["audit", str(job), "-o", str(tmp_path / "out"), "--quiet", "--profile",
                    str(tmp_path)], tmp_path)          # a folder, not a file
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert f"--profile {tmp_path}: cannot write" in proc.stderr


def test_a_profile_path_on_an_input_or_in_the_output_folder_is_refused(tmp_path, capsys):
    """``--profile`` naming an input of the run (the cells file, the job file) or a file in
    the output folder: one line, exit 2, before the run -- the input is unchanged and no
    output folder is made."""
    from tabprotect.cli import main
    job = write_audit_job(tmp_path)
    out = tmp_path / "out"
    for target, why in ((tmp_path / "cells.csv", "an input of the run"),
                        (job, "an input of the run"),
                        (out / "profile.json", "inside the output folder")):
        before = target.read_bytes() if target.exists() else None
        code = main(["audit", str(job), "-o", str(out), "--quiet", "--profile", str(target)])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert f"--profile {target}: {why}" in err
        assert (target.read_bytes() if target.exists() else None) == before
        assert not out.exists()

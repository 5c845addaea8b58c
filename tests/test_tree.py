"""The repository holds the project and nothing a working session left behind.

The root lists the project's own entries; scratch outputs (pickled objects, profiles,
arrays, logs) are never part of it anywhere.  The check reads the files git tracks, or
walks the tree where there is no git (an unpacked source archive).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the top-level entries of the project
ROOT_ENTRIES = {".ci", ".gitignore", "BENCHMARKS.md", "LICENSE", "README.md", "benchmarks",
                "docs", "fixtures", "pyproject.toml", "solvers", "tabprotect", "tests"}
#: suffixes of scratch outputs, never project files
SCRATCH_SUFFIXES = {".pkl", ".pickle", ".prof", ".pstats", ".npy", ".npz", ".log"}
#: folders a walk skips: caches, installs and git's own
SKIPPED = {".git", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist", ".venv"}


def project_files() -> list[str]:
    """Paths relative to the root: git's tracked files, else every file of the tree."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                             text=True, check=True).stdout
        return [line for line in out.splitlines() if line]
    return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
            if p.is_file() and not SKIPPED.intersection(p.relative_to(ROOT).parts)
            and not p.parts[-2].endswith(".egg-info")]


def stray(paths: list[str]) -> list[str]:
    """The paths that are not the project's: outside its root entries, or scratch."""
    return sorted(p for p in paths
                  if p.split("/")[0] not in ROOT_ENTRIES
                  or Path(p).suffix.lower() in SCRATCH_SUFFIXES)


def test_the_tree_holds_only_the_project():
    assert stray(project_files()) == []


@pytest.mark.parametrize("path", ["after_run.pkl", "tabprotect/x.prof", "benchmarks/a.npz",
                                  "notes.txt"])
def test_scratch_and_unknown_entries_are_caught(path):
    assert stray([path]) == [path]


def test_project_files_pass():
    assert stray(["tabprotect/__init__.py", "fixtures/LICENSES.md", ".ci/run"]) == []

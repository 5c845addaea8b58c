"""The repository holds the project and nothing a working session left behind.

The root lists the project's own entries; scratch outputs (pickled objects, profiles,
arrays, logs) are never part of it anywhere.  The check reads the files git tracks, or
walks the tree where there is no git (an unpacked source archive).
"""
from __future__ import annotations

import fnmatch
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
    """Paths relative to the root: git's tracked files, else every file of the tree that
    ``.gitignore`` does not name (the demo's and the tests' outputs, installs)."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                             text=True, check=True).stdout
        return [line for line in out.splitlines() if line]
    ignored = ignore_patterns(ROOT / ".gitignore")
    return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
            if p.is_file() and not SKIPPED.intersection(p.relative_to(ROOT).parts)
            and not is_ignored(p.relative_to(ROOT).parts, ignored)]


def ignore_patterns(path: Path) -> list[str]:
    """The name patterns of a ``.gitignore`` (slashes at either end dropped)."""
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line.strip("/") for line in lines if line and not line.startswith("#")]


def is_ignored(parts: tuple[str, ...], patterns: list[str]) -> bool:
    """A path one of whose parts matches a pattern (a folder's pattern covers what it
    holds)."""
    return any(fnmatch.fnmatch(part, pat) for part in parts for pat in patterns)


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


def test_the_walk_leaves_out_what_gitignore_names():
    patterns = ["__pycache__/", "*.egg-info/", "/out/", "tabprotect-demo/", "*.log"]
    patterns = [p.strip("/") for p in patterns]
    assert is_ignored(("tabprotect-demo", "audit.csv"), patterns)
    assert is_ignored(("tabprotect.egg-info", "PKG-INFO"), patterns)
    assert is_ignored(("benchmarks", "run.log"), patterns)
    assert not is_ignored(("tabprotect", "cli.py"), patterns)
    assert not is_ignored(("after_run.pkl",), patterns)

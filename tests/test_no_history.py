"""Code, docs and tests say what and why in the present tense: no development history.

The package, the solver layer, the docs, the tests and BENCHMARKS.md must not narrate
how the project came about: no numbered work sessions or issues (the word, then a number),
no work-log references, no scratch paths in the temporary folder, no notes on how fast
the machine of the day was, no commit hashes cited as history, no dated measurements.
BENCHMARKS.md states the date of each measured table by design, so only the date rule
skips it; the per-run records in benchmarks/results/ are outside this check.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED_DIRS = ("tabprotect", "solvers", "docs", "tests")
SCANNED_FILES = ("BENCHMARKS.md",)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".rst", ".cfg", ".ini", ".html", ".js",
                 ".css"}
THIS_FILE = Path(__file__).resolve()

#: name -> (pattern, files it does not apply to)
RULES: dict[str, tuple[re.Pattern, tuple[str, ...]]] = {
    "work-session number": (re.compile(r"\bsessions? \d+", re.I), ()),
    "issue number": (re.compile(r"\bissues? #?\d+|\b(?:issue|PR|ticket|bug|see)\s+#\d+",
                                re.I), ()),
    "work-log reference": (re.compile(r"\bwork[ -]?log", re.I), ()),
    "scratch path": (re.compile(r"/tmp/"), ()),
    "machine-speed note": (re.compile(
        r"\b(?:slower|faster|quiet|quieter) machine\b|\bmachine image\b|\bload average\b"
        r"|\btoday's\b", re.I), ()),
    "numbered helper": (re.compile(r"\bhelper \d+", re.I), ()),
    "commit cited as history": (re.compile(r"\bcommits? [0-9a-f]{7,40}\b"), ()),
    "dated note": (re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b"), ("BENCHMARKS.md",)),
}


def scanned_files() -> list[Path]:
    files = [ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file()]
    for d in SCANNED_DIRS:
        files += sorted(p for p in (ROOT / d).rglob("*")
                        if p.is_file() and p.suffix in TEXT_SUFFIXES
                        and "__pycache__" not in p.parts)
    return [p for p in files if p.resolve() != THIS_FILE]


def history_hits(text: str, rel: str) -> list[str]:
    """``line: rule: match`` for every line of ``text`` that narrates history."""
    hits = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for name, (pattern, exempt) in RULES.items():
            if rel in exempt:
                continue
            m = pattern.search(line)
            if m:
                hits.append(f"{rel}:{lineno}: {name}: {m.group(0)!r}")
    return hits


def test_no_development_history_in_code_docs_and_tests():
    files = scanned_files()
    assert any(p.name == "BENCHMARKS.md" for p in files)
    assert any(p.suffix == ".py" and "tabprotect" in p.parts for p in files)
    hits = []
    for p in files:
        hits += history_hits(p.read_text(encoding="utf-8", errors="replace"),
                             p.relative_to(ROOT).as_posix())
    assert not hits, ("development history in code, docs or tests (say what and why in "
                      "the present tense instead):\n" + "\n".join(hits))


@pytest.mark.parametrize("line", [
    # the work-session examples are assembled so that this file holds no such reference
    "# measured in {} 9 on the lead's runs".format("session"),
    "({}s 3-5 let it run 10 s past the limit)".format("session"),
    "see issue 5 for the goal",
    "as in the work log, entry 12",
    "python /tmp/h23/probe.py TABLE7",
    "took 419 s on a slower machine image",
    "the machine was quiet: load average 1.2",
    "on today's machine",
    "helper 24's method",
    "after commit 8eb4666 the audit is faster",
    "HIE1372D value, 2026-12-01: gap 6.2%",
])
def test_the_rules_catch_history(line):
    assert history_hits(line, "tabprotect/x.py")


@pytest.mark.parametrize("line", [
    'edgecolor="#555555", label=["primary"]',
    "color:#222;max-width:1200px",
    "on a loaded machine the last jobs still get their turn",
    "Hierarchy.from_hrc(path, total='Total', lead='@')",
    "the session cookie is refreshed",
    "issued by the service",
    "time_limit=600, audit_time_limit=900",
])
def test_the_rules_leave_ordinary_text_alone(line):
    assert not history_hits(line, "tabprotect/x.py")


def test_benchmarks_page_may_date_its_tables():
    assert not history_hits("Measured 2026-12-01 on 2 cores.", "BENCHMARKS.md")
    assert history_hits("Measured 2026-12-01 on 2 cores.", "docs/x.md")

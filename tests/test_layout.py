"""The code's layout: modules of one concept and functions that fit on a screen.

A module holds at most 700 lines.  A function (its docstring, whose parameters and
examples are part of reading it, included) holds at most 120 lines: about a screen of code
under its docstring.  A longer one would be named below with the reason it stays whole;
the list only shrinks.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the packages whose layout is checked
PACKAGES = ("tabprotect", "solvers")
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 120
#: functions longer than the limit, by "path:name", and why each stays whole
LONG_FUNCTIONS: dict[str, str] = {}


def python_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def long_functions(source: str, rel: str) -> dict[str, int]:
    """``"rel:name"`` -> lines of every function of ``source`` above the limit."""
    return {f"{rel}:{node.name}": node.end_lineno - node.lineno + 1
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES}


def all_long_functions() -> dict[str, int]:
    found: dict[str, int] = {}
    for p in python_files():
        found.update(long_functions(p.read_text(encoding="utf-8"),
                                    p.relative_to(ROOT).as_posix()))
    return found


def test_modules_are_at_most_700_lines():
    long = {p.relative_to(ROOT).as_posix(): n for p in python_files()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_functions_fit_on_a_screen():
    assert sorted(set(all_long_functions()) - set(LONG_FUNCTIONS)) == []


def test_the_allow_list_names_only_long_functions():
    # a function split (or gone) leaves the list: the list only shrinks
    assert sorted(set(LONG_FUNCTIONS) - set(all_long_functions())) == []


def test_the_check_counts_a_function_from_def_to_its_last_line():
    def source(lines: int) -> str:
        body = "\n".join(f"    x{i} = {i}" for i in range(lines - 1))
        return f"import os\n\n\ndef f():\n{body}\n\n\nx = 1\n"
    assert long_functions(source(MAX_FUNCTION_LINES), "m.py") == {}
    assert long_functions(source(MAX_FUNCTION_LINES + 1), "m.py") == {
        "m.py:f": MAX_FUNCTION_LINES + 1}

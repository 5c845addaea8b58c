"""Assemble BENCHMARKS.md from the per-area result files in benchmarks/results/*.md.

Each benchmark script writes (or its author pastes) its measured table, the command that
produced it, the machine and the date into ``benchmarks/results/<area>.md``; this script
only concatenates them, in a fixed order, under one header.

    python benchmarks/collect_results.py
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["audit", "audit_scale", "tabulate", "optimal", "scale", "gauss", "modular", "rounding",
         "BENCHMARKS_microdata"]

HEADER = """# Benchmarks

Every number here was measured by the script named in its section, on this project's
development machine (2 cores, 24 GiB, x86_64, Python 3.11) on the date given, with the
baseline measured in the same run. The machine was shared with other work while some of
these ran, so absolute times are pessimistic; the ratios compare runs made side by side.
Each section comes from `benchmarks/results/<area>.md`; `python benchmarks/collect_results.py`
rebuilds this file.

"""


def main() -> None:
    results = ROOT / "benchmarks" / "results"
    files = {p.stem: p for p in results.glob("*.md")}
    parts = [HEADER]
    for name in ORDER + sorted(set(files) - set(ORDER)):
        if name in files:
            text = files[name].read_text().strip()
            # demote every heading one level: the file's title becomes a section
            text = "\n".join("#" + ln if ln.startswith("#") else ln
                              for ln in text.splitlines())
            parts.append(text + "\n")
    (ROOT / "BENCHMARKS.md").write_text("\n".join(parts))


if __name__ == "__main__":
    main()

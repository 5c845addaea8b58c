"""Print a summary of a generated table (the generator is
:mod:`tabprotect.model.synthetic`; this script keeps the benchmarks' import name).

Usage::

    python benchmarks/gen_tables.py 100k-3d --seed 1
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tabprotect.model.synthetic import (DIMENSION_NAMES, PRESETS,  # noqa: E402,F401
                                        branching_hierarchy, generate, preset)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="summary of a generated table")
    ap.add_argument("preset", choices=sorted(PRESETS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t = preset(args.preset, args.seed)
    st = {s: int((t.status == s).sum()) for s in "SUZ"}
    print(f"{args.preset}: shape {t.shape}, cells {t.n_cells}, relations {t.n_relations}, "
          f"status {st}")


if __name__ == "__main__":
    main()

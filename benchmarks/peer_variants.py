"""Seeded tables of the peers' two kinds, for development beyond the shared cases.

The shared everyday tables (``../shared/benchmarks/peers``) are one microdata file and two
count tables; acceptance runs further tables of the same kinds. Each seed here gives:

* **enterprise microdata** like ``micro.csv.gz`` (``ent_id, region, industry, size,
  turnover``) with its ``region.hrc`` and ``industry.hrc``. Shapes: 3-7 regions of 2-6
  districts each (uneven), on some seeds a third level (regions of 2-3 provinces of 2-4
  districts); 3-8 industry sections of 2-7 divisions; 3-5 flat size classes. The shape is
  drawn until the 2-D table (region x industry, all totals) has 300-2,500 cells and the 3-D
  table (x size) at most 10^4. Distributions, each chosen to reproduce what the shared file
  shows: a district's and an industry's popularity lognormal (sigma 0.9 and 1.0: the shared
  region and industry counts vary by a factor of 40-60), independent, so sparse cells come
  from two small margins as in a real register; 10-50 enterprises per 2-D leaf cell (the
  shared file has 33), which moves the share of primaries; size class k with probability
  proportional to 0.3^k (the shared 72/19/7/2 %); turnover lognormal with median 55 x 6^(k-1)
  in size class k and sigma 1.1 (the shared class medians and means), times an industry
  factor (lognormal, sigma 0.5), so the dominance and p% rules fire on a few large
  enterprises as well as on few contributors.
* **count tables** like ``medium2d.csv`` / ``medium3d.csv`` (``dim1.., value, freq, grp1..``),
  one 2-D and one 3-D, each a two-level hierarchy per dimension (2-8 groups of uneven
  sizes), the number of cells with totals log-uniform in 10^2-10^4. A leaf's count is from
  a mixture: with probability w (0.10-0.25, per seed) Poisson(1.5), the small counts that
  become primaries, else uniform on 0-40 (the shared files' flat body up to 40); its value
  is the count times a normal 55 +- 10 (the shared value per unit).

Everything is drawn from ``numpy.random.default_rng`` of the seed and a fixed stream number
per table, so one seed always gives the same files.

    python benchmarks/peer_variants.py 3 --out DIR [--tiny]

writes ``DIR/enterprise/{micro.csv.gz,region.hrc,industry.hrc}`` and
``DIR/counts/{cnt-2d.csv,cnt-3d.csv}`` and prints the shapes as JSON (``--tiny``: small
shapes and few enterprises, for the tests).
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

#: the 2-D enterprise table's cells (with totals): the issue's everyday range
ENT_2D_CELLS = (300, 2500)
#: the 3-D enterprise table's cells at most
ENT_3D_MAX = 10_000
#: count tables' cells (with totals), log-uniform between
COUNT_CELLS = (100, 10_000)


@dataclass(frozen=True)
class EnterpriseShape:
    """One enterprise population's hierarchies and size."""
    regions: tuple[tuple[int, ...], ...]   # per region: districts per province (1 = none)
    three_level: bool                      # regions split into provinces
    sections: tuple[int, ...]              # divisions per industry section
    sizes: int                             # flat size classes
    enterprises: int

    def codes(self) -> tuple[int, int]:
        """Codes with totals of (region, industry)."""
        nr = 1 + sum(1 + len(r) * self.three_level + sum(r) for r in self.regions)
        return nr, 1 + len(self.sections) + sum(self.sections)

    def cells(self) -> tuple[int, int]:
        """Cells with totals of the 2-D and the 3-D table."""
        nr, ni = self.codes()
        return nr * ni, nr * ni * (self.sizes + 1)


@dataclass(frozen=True)
class CountShape:
    """One count table: leaves per group, per dimension."""
    groups: tuple[tuple[int, ...], ...]
    small_weight: float                    # mixture weight of the small-count component

    def cells(self) -> int:
        return int(np.prod([1 + len(g) + sum(g) for g in self.groups]))


def _rng(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, stream])


def enterprise_shape(seed: int, tiny: bool = False) -> EnterpriseShape:
    """The seed's hierarchy shapes, drawn until the tables' sizes are in range."""
    rng = _rng(seed, 1)
    while True:
        three = bool(rng.random() < 0.3)
        if tiny:
            regions = tuple((int(rng.integers(2, 4)),) for _ in range(2))
            sections = tuple(int(k) for k in rng.integers(2, 4, size=2))
        elif three:
            regions = tuple(tuple(int(k) for k in rng.integers(2, 5, size=rng.integers(2, 4)))
                            for _ in range(rng.integers(3, 6)))
            sections = tuple(int(k) for k in rng.integers(2, 8, size=rng.integers(3, 9)))
        else:
            regions = tuple((int(rng.integers(2, 7)),) for _ in range(rng.integers(3, 8)))
            sections = tuple(int(k) for k in rng.integers(2, 8, size=rng.integers(3, 9)))
        sizes = int(rng.integers(3, 6))
        leaves = sum(map(sum, regions)) * sum(sections)
        density = 3 if tiny else rng.uniform(10, 50)
        shape = EnterpriseShape(regions, three and not tiny, sections, sizes,
                                int(round(density * leaves)))
        c2, c3 = shape.cells()
        if tiny or (ENT_2D_CELLS[0] <= c2 <= ENT_2D_CELLS[1] and c3 <= ENT_3D_MAX):
            return shape


def write_enterprise(shape: EnterpriseShape, seed: int, folder: Path) -> None:
    """``micro.csv.gz``, ``region.hrc`` and ``industry.hrc`` of ``shape`` in ``folder``."""
    import pandas as pd
    rng = _rng(seed, 2)
    folder.mkdir(parents=True, exist_ok=True)
    hrc, districts = [], []
    for r, provinces in enumerate(shape.regions, 1):
        hrc.append(f"R{r}")
        for p, n in enumerate(provinces, 1):
            stem = f"R{r}P{p}" if shape.three_level else f"R{r}"
            lead = "@@" if shape.three_level else "@"
            if shape.three_level:
                hrc.append(f"@{stem}")
            for d in range(1, n + 1):
                hrc.append(f"{lead}{stem}D{d}")
                districts.append(f"{stem}D{d}")
    (folder / "region.hrc").write_text("\n".join(hrc) + "\n")
    hrc, divisions = [], []
    for s, n in enumerate(shape.sections):
        hrc.append(chr(ord("A") + s))
        for _ in range(n):
            divisions.append(f"{len(divisions) + 1:02d}")
            hrc.append("@" + divisions[-1])
    (folder / "industry.hrc").write_text("\n".join(hrc) + "\n")
    n = shape.enterprises
    pr = rng.lognormal(0.0, 0.9, len(districts))
    pi = rng.lognormal(0.0, 1.0, len(divisions))
    ps = 0.3 ** np.arange(shape.sizes)
    region = rng.choice(len(districts), n, p=pr / pr.sum())
    industry = rng.choice(len(divisions), n, p=pi / pi.sum())
    size = rng.choice(shape.sizes, n, p=ps / ps.sum())
    factor = rng.lognormal(0.0, 0.5, len(divisions))
    turnover = rng.lognormal(np.log(55.0 * 6.0 ** size), 1.1) * factor[industry]
    frame = pd.DataFrame({
        "ent_id": [f"E{i:06d}" for i in range(1, n + 1)],
        "region": np.asarray(districts)[region],
        "industry": np.asarray(divisions)[industry],
        "size": size + 1,
        "turnover": np.maximum(1, np.round(turnover)).astype(np.int64)})
    with gzip.GzipFile(folder / "micro.csv.gz", "wb", mtime=0) as fh:   # same bytes per seed
        fh.write(frame.to_csv(index=False).encode())


def count_shape(seed: int, dims: int, tiny: bool = False) -> CountShape:
    """The seed's count-table shape in ``dims`` dimensions (cells log-uniform in range)."""
    rng = _rng(seed, 10 + dims)
    lo, hi = (20, 200) if tiny else COUNT_CELLS
    target = np.exp(rng.uniform(np.log(lo), np.log(hi)))
    groups = []
    for _ in range(dims):
        length = max(4, int(round(target ** (1 / dims) * rng.lognormal(0.0, 0.15))))
        g = int(np.clip(round(np.sqrt(length) / 1.5), 2, 8))
        # at least one group of two leaves: a grouping of single leaves repeats the
        # dimension (GaussSuppression stops on such a table)
        leaves = max(2 * g, length - g - 1)
        # uneven groups of at least one leaf summing to ``leaves``
        split = 1 + rng.multinomial(leaves - g, rng.dirichlet(np.full(g, 2.0)))
        groups.append(tuple(int(k) for k in split))
    return CountShape(tuple(groups), float(rng.uniform(0.10, 0.25)))


def write_counts(shape: CountShape, seed: int, path: Path) -> None:
    """The leaf rows of ``shape`` as ``path`` (``dim1.., value, freq, grp1..``)."""
    import pandas as pd
    rng = _rng(seed, 20 + len(shape.groups))
    letters = "abcdefgh"
    codes, grps = [], []
    for k, groups in enumerate(shape.groups):
        c, g, i = [], [], 0
        for j, n in enumerate(groups, 1):
            for _ in range(n):
                i += 1
                c.append(f"{letters[k]}g{j}l{i:02d}")
                g.append(f"{letters[k]}g{j}")
        codes.append(np.asarray(c))
        grps.append(np.asarray(g))
    grid = np.stack(np.meshgrid(*[np.arange(len(c)) for c in codes], indexing="ij"),
                    -1).reshape(-1, len(codes))
    small = rng.random(len(grid)) < shape.small_weight
    freq = np.where(small, rng.poisson(1.5, len(grid)), rng.integers(0, 41, len(grid)))
    value = freq * rng.normal(55.0, 10.0, len(grid)).clip(min=5.0)
    frame = pd.DataFrame({f"dim{k + 1}": codes[k][grid[:, k]] for k in range(len(codes))})
    frame["value"] = np.round(value, 2)
    frame["freq"] = freq
    for k in range(len(codes)):
        frame[f"grp{k + 1}"] = grps[k][grid[:, k]]
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)


def write_variant(seed: int, folder: Path, tiny: bool = False) -> dict:
    """Every table of ``seed`` in ``folder`` (the shared folder's layout); the shapes."""
    ent = enterprise_shape(seed, tiny)
    write_enterprise(ent, seed, folder / "enterprise")
    out = {"seed": seed, "enterprise": {**asdict(ent), "cells_2d": ent.cells()[0],
                                        "cells_3d": ent.cells()[1]}}
    for dims in (2, 3):
        shape = count_shape(seed, dims, tiny)
        write_counts(shape, seed, folder / "counts" / f"cnt-{dims}d.csv")
        out[f"cnt-{dims}d"] = {**asdict(shape), "cells": shape.cells()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("--out", required=True, help="folder for enterprise/ and counts/")
    ap.add_argument("--tiny", action="store_true", help="small shapes (tests)")
    args = ap.parse_args(argv)
    print(json.dumps(write_variant(args.seed, Path(args.out), args.tiny)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Targeted record swapping of households (or persons) across a geographic hierarchy.

The geography is given as columns, one per level, coarse to fine (e.g. region, district,
municipality).  At level ``L`` a record is *rare* when fewer than ``k`` records share its
area at that level and its combination of the risk variables; a household is at risk at
level ``L`` when one of its persons is rare there.  Households are processed from the
coarsest level down: a household at risk at level ``L`` (and not yet moved) is swapped with
a *similar* household (equal on the matching variables, e.g. household size) from another
area of level ``L`` within the same area of level ``L - 1`` (for the coarsest level: anywhere).
Where no such partner exists the search widens to the next coarser level.  When the risky
households are fewer than ``swap_rate`` of all households, further households are swapped at
the finest level, drawn with probability growing with their risk, until the rate is met.

Swapping exchanges the geography of the two households, every level at once, together with
the ``carry`` variables (household-level variables that must travel with the geography).
Because both households of a pair lie in the same area of level ``L - 1`` and agree on the
matching variables, every table at level ``L - 1`` and above is unchanged by a swap at
level ``L`` (for household size as a matching variable: also the number of persons per
area at every level).

Risk before and after (per level): the records in rare cells, and of those, the records still
at their true place (an intruder who matches a rare released record finds the right
household only if it was not moved).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import pandas as pd

from ._validate import RowError, check_columns, draw_seed

__all__ = ["TargetedSwapSettings", "TargetedSwapResult", "swap_targeted", "geography_levels"]

HOUSEHOLD_SIZE = "household_size"   # a matching variable computed from the household ids


@dataclass(frozen=True)
class TargetedSwapSettings:
    """Settings of one targeted swap (recorded in the result)."""

    levels: tuple[str, ...]            # geography columns, coarse to fine: where risk is judged
    risk_variables: tuple[str, ...]    # their combination within an area makes a record rare
    k: int = 3                         # rare: fewer than k records share area and risk values
    swap_rate: float = 0.05            # least share of households moved (pairs count twice)
    similar: tuple[str, ...] = ()      # partners agree on these (e.g. household_size)
    carry: tuple[str, ...] = ()        # household variables moved with the geography
    household: str | None = None       # household id column; None: each record alone
    seed: int | None = None            # random seed: the same seed, the same swaps

    def __post_init__(self):
        if not self.levels:
            raise ValueError("targeted swap: give at least one geography level")
        if not self.risk_variables:
            raise ValueError("targeted swap: give at least one risk variable")
        if int(self.k) < 2:
            raise ValueError("targeted swap: k must be at least 2")
        if not (0.0 <= float(self.swap_rate) <= 1.0):
            raise ValueError("targeted swap: swap_rate must lie in [0, 1]")


@dataclass(eq=False)
class TargetedSwapResult:
    """Swapped microdata, the pairs (household positions) and the risk per level."""

    data: pd.DataFrame
    pairs: np.ndarray            # (pairs, 2) household positions (order of first appearance)
    pair_level: np.ndarray       # level index at which each pair shares its parent area
    n_households: int
    risk: pd.DataFrame           # per level: rare records before/after, still at true place
    settings: TargetedSwapSettings
    unmatched: int = 0           # risky households for which no partner existed
    extra: dict = field(default_factory=dict)

    @property
    def households_moved(self) -> int:
        return 2 * int(self.pairs.shape[0])

    @property
    def rate(self) -> float:
        return self.households_moved / max(self.n_households, 1)

    def summary(self) -> dict:
        """Counts only (no record values), and the seed that repeats the swap (secret: the
        public summaries withhold it, :func:`tabprotect.io.results.without_secrets`)."""
        per_level = np.bincount(self.pair_level, minlength=len(self.settings.levels))
        return {"method": "swap", "seed": self.settings.seed, "households": self.n_households,
                "households_moved": self.households_moved, "rate": round(self.rate, 6),
                "unmatched_at_risk": self.unmatched,
                "pairs_per_level": dict(zip(self.settings.levels, map(int, per_level))),
                "risk": self.risk.to_dict(orient="records")}


def geography_levels(data: pd.DataFrame, column: str, hierarchy, names: Sequence[str]) -> pd.DataFrame:
    """Add one column per hierarchy level below the total (coarse to fine) from a column
    of leaf codes; ``names`` names them (as many as the hierarchy's depth)."""
    leaves = list(hierarchy.leaves)
    codes_all, parent = hierarchy.codes, hierarchy.parent
    chains = {}
    for leaf in leaves:
        chain, i = [], hierarchy.index(leaf)
        while parent[i] >= 0:
            chain.append(codes_all[i])
            i = int(parent[i])
        chains[leaf] = chain[::-1]
    depth = {len(c) for c in chains.values()}
    if len(depth) != 1 or depth.pop() != len(names):
        raise ValueError(f"geography '{column}': every leaf must lie {len(names)} levels below "
                         "the total")
    codes = data[column].astype(str)
    unknown = ~codes.isin(leaves)
    if unknown.any():
        raise RowError(f"geography '{column}': the code is not a leaf of the hierarchy",
                       np.flatnonzero(unknown.to_numpy())[0], data.index)
    out = data.copy()
    for d, name in enumerate(names):
        out[name] = codes.map({leaf: c[d] for leaf, c in chains.items()})
    return out


# ---------------------------------------------------------------------- internals
def _column_codes(frame: pd.DataFrame, col: str, hh: np.ndarray | None = None) -> np.ndarray:
    """Integer codes ``>= 0`` of one column (missing is a code of its own); the computed
    ``household_size`` when the frame has no such column."""
    if col == HOUSEHOLD_SIZE and col not in frame.columns:
        return np.bincount(hh)[hh].astype(np.int64)
    x = frame[col]
    if isinstance(x.dtype, pd.CategoricalDtype):
        return x.cat.codes.to_numpy().astype(np.int64) + 1
    return pd.factorize(x, sort=False)[0].astype(np.int64) + 1


def _dense(x: np.ndarray) -> np.ndarray:
    """Relabel non-negative integers as 0..m-1 (order kept)."""
    if x.size == 0:
        return x
    top = int(x.max())
    if top < 4 * x.size + 1_000_000:
        present = np.zeros(top + 1, bool)
        present[x] = True
        return (np.cumsum(present) - 1)[x]
    return np.unique(x, return_inverse=True)[1].ravel()


def _combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _dense(a * (int(b.max()) + 1 if b.size else 1) + b)


def _codes(frame: pd.DataFrame, cols: Sequence[str], hh: np.ndarray | None = None) -> np.ndarray:
    """One dense code per combination of ``cols``."""
    out = np.zeros(len(frame), np.int64)
    card = 1
    for c in cols:
        k = _column_codes(frame, c, hh)
        m = int(k.max()) + 1 if k.size else 1
        if card * m >= 2 ** 62:
            out, card = _dense(out), int(out.max()) + 1 if out.size else 1
        out = out * m + k
        card *= m
    return _dense(out)


def _rare(area: np.ndarray, riskc: np.ndarray, k: int) -> np.ndarray:
    cell = _combine(area, riskc)
    return np.bincount(cell)[cell] < k


def _household_index(data: pd.DataFrame, household: str | None) -> np.ndarray:
    if household is None:
        return np.arange(len(data), dtype=np.int64)
    hh = pd.factorize(data[household], sort=False)[0].astype(np.int64)
    if hh.size and hh.min() < 0:
        raise RowError(f"targeted swap: household column {household!r} is empty",
                       np.flatnonzero(hh < 0)[0], data.index)
    return hh


def _constant_within(frame: pd.DataFrame, hh: np.ndarray, first: np.ndarray,
                     cols: Sequence[str], what: str):
    for c in cols:
        codes = _column_codes(frame, c, hh)
        off = np.flatnonzero(codes != codes[first[hh]])
        if off.size:
            raise RowError(f"targeted swap: {what} variable {c!r} differs within a household "
                           "(from its first record)", off[0], frame.index)


def _first_records(hh: np.ndarray) -> np.ndarray:
    """Position of each household's first record (households numbered by first
    appearance, as ``pandas.factorize`` numbers them)."""
    if hh.size == 0:
        return hh
    runmax = np.maximum.accumulate(hh)
    return np.flatnonzero(np.r_[True, hh[1:] > runmax[:-1]])


class _Pools:
    """Candidate partners per (parent area, matching profile) group, drawn at random
    (a Python generator seeded from the run's numpy generator: one call per draw)."""

    def __init__(self, group: np.ndarray, rng: np.random.Generator):
        order = np.argsort(group, kind="stable")
        self.group = group
        self.order = order
        self.bounds = np.searchsorted(group[order], np.arange(group.max() + 2))
        self.rand = random.Random(int(rng.integers(2 ** 62)))
        self.pools: dict[int, list[int]] = {}

    def draw(self, h: int, area: np.ndarray, used: np.ndarray) -> int:
        """An unused household of ``h``'s group in another area than ``h``'s (-1: none)."""
        g = int(self.group[h])
        pool = self.pools.get(g)
        if pool is None:
            pool = self.order[self.bounds[g]:self.bounds[g + 1]].tolist()
            self.pools[g] = pool
        own = area[h]
        randrange = self.rand.randrange
        tries = 0
        while pool:
            i = randrange(len(pool))
            c = pool[i]
            if used[c]:
                pool[i] = pool[-1]
                pool.pop()
                continue
            if area[c] != own:
                pool[i] = pool[-1]
                pool.pop()
                return c
            tries += 1
            if tries > 30:
                rest = [x for x in pool if not used[x] and area[x] != own]
                if not rest:
                    return -1
                c = rest[randrange(len(rest))]
                pool.remove(c)
                return c
        return -1


def swap_targeted(data: pd.DataFrame, settings: TargetedSwapSettings) -> TargetedSwapResult:
    """Targeted record swapping (see the module docstring).

    Examples
    --------
    >>> df = pd.DataFrame({"reg": list("AAAABBBB"), "mun": list("aabbccdd"),
    ...                    "job": list("xxxxxxxy")})
    >>> s = TargetedSwapSettings(levels=("reg", "mun"), risk_variables=("job",), k=2,
    ...                          swap_rate=0.0, seed=1)
    >>> res = swap_targeted(df, s)      # the only 'y' of region B moves to region A
    >>> res.data["reg"].iloc[7], sorted(res.data["mun"]) == sorted(df["mun"])
    ('A', True)
    """
    s = replace(settings, seed=draw_seed(settings.seed))     # recorded in the result
    levels = check_columns(data, list(s.levels), "geography level")
    risk_cols = check_columns(data, list(s.risk_variables), "risk")
    if s.household is not None:
        check_columns(data, [s.household], "household")
    rng = np.random.default_rng(s.seed)
    hh = _household_index(data, s.household)
    H = int(hh.max()) + 1 if hh.size else 0
    similar = list(s.similar)
    for c in similar:
        if c != HOUSEHOLD_SIZE:
            check_columns(data, [c], "matching")
    carry = check_columns(data, list(s.carry), "carried") if s.carry else []
    first = _first_records(hh)                               # one record per household
    _constant_within(data, hh, first, levels + similar + carry, "household")
    lev_codes = [_codes(data, levels[: d + 1]) for d in range(len(levels))]
    area = [c[first] for c in lev_codes]
    riskc = _codes(data, risk_cols)
    profile = _codes(data, similar, hh)[first]
    rare = [_rare(c, riskc, s.k) for c in lev_codes]
    hh_rare = [np.bincount(hh, weights=r, minlength=H) > 0 for r in rare]

    used = np.zeros(H, bool)
    pairs, pair_level = [], []
    unmatched = 0
    for d in range(len(levels)):
        todo = np.flatnonzero(hh_rare[d] & ~used)
        unmatched += _pair_level(todo, d, area, profile, used, rng, pairs, pair_level)
    target = int(np.ceil(s.swap_rate * H / 2))
    if len(pairs) < target:
        # more households at the finest level, more likely the riskier (rare at more levels)
        score = sum(r.astype(float) for r in hh_rare) + 1.0
        free = np.flatnonzero(~used)
        m = min(free.size, 4 * (target - len(pairs)) + 16)
        # weighted sampling without replacement: the m largest u ** (1 / score)
        keys = rng.random(free.size) ** (1.0 / score[free])
        extra = free[np.argpartition(-keys, m - 1)[:m]] if m else free[:0]
        _pair_level(extra, len(levels) - 1, area, profile, used, rng, pairs, pair_level,
                    stop_at=target, widen=False)
    pairs_arr = np.asarray(pairs, np.int64).reshape(-1, 2)
    out = _apply(data, hh, first, pairs_arr, levels + carry)
    pair_level_arr = np.asarray(pair_level, np.int64)
    moved_level = np.full(H, -1, np.int64)
    moved_level[pairs_arr[:, 0]] = pair_level_arr
    moved_level[pairs_arr[:, 1]] = pair_level_arr
    risk = _risk_table(lev_codes, out, levels, risk_cols, s.k, moved_level[hh], riskc)
    return TargetedSwapResult(out, pairs_arr, pair_level_arr, H, risk, s, unmatched)


def _pair_level(donors, d, area, profile, used, rng, pairs, pair_level, stop_at=None,
                widen=True) -> int:
    """Pair each unused donor with a partner from another area of level ``d`` in the same
    area of level ``d - 1`` (widening upwards when there is none).  Returns the number of
    donors left without a partner."""
    failed = 0
    levels = list(range(d, -1, -1)) if widen else [d]
    pools: dict[int, _Pools] = {}

    def pool(lev: int) -> _Pools:
        if lev not in pools:
            parent = area[lev - 1] if lev > 0 else np.zeros_like(area[0])
            pools[lev] = _Pools(_combine(parent, profile), rng)
        return pools[lev]

    for h in rng.permutation(np.asarray(donors, np.int64)).tolist():
        if stop_at is not None and len(pairs) >= stop_at:
            break
        if used[h]:
            continue
        for lev in levels:
            c = pool(lev).draw(h, area[lev], used)
            if c >= 0:
                used[h] = used[c] = True
                pairs.append((h, c))
                pair_level.append(lev)
                break
        else:
            failed += 1
    return failed


def _apply(data, hh, first, pairs, cols) -> pd.DataFrame:
    """Exchange ``cols`` between the households of each pair."""
    H = first.size
    src = np.arange(H)
    src[pairs[:, 0]] = pairs[:, 1]
    src[pairs[:, 1]] = pairs[:, 0]
    out = data.copy()
    take = first[src[hh]]                          # the record whose values a record takes
    for c in cols:
        out[c] = data[c].array.take(take)
    return out


def _risk_table(lev_before, after, levels, risk_cols, k, moved_level, riskc_before):
    """Per level: records in rare cells before and after, those still at their true place
    after, and the records moved by pairs formed at that level."""
    riskc_after = _codes(after, risk_cols)
    moved = moved_level >= 0
    rows = []
    for d, name in enumerate(levels):
        rb = _rare(lev_before[d], riskc_before, k)
        ra = _rare(_codes(after, levels[: d + 1]), riskc_after, k)
        rows.append({"level": name, "rare_before": int(rb.sum()), "rare_after": int(ra.sum()),
                     "at_risk_before": int(rb.sum()), "at_risk_after": int((ra & ~moved).sum()),
                     "records_moved": int((moved_level == d).sum())})
    return pd.DataFrame(rows)

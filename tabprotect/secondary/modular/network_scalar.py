"""A small node of the network search judged in plain Python.

:meth:`.network_search._Search._row_branch` judges a node by some twenty numpy calls
over its short rows and available candidates; on a node with a few short rows and a
few dozen candidates (most nodes of a search) numpy's cost per call is most of the
node's time.  :func:`row_branch` is the same judgement by loops over Python floats: the
same capped coefficients, feasibility sums (numpy's pairwise order), fractional cover
bounds (summed in ratio order, as ``np.cumsum`` sums them), row choice and branch
order, so the search takes the same decisions node for node.
"""
from __future__ import annotations

import numpy as np


def pairwise_sum(a: list) -> float:
    """``np.sum`` of a list of floats as numpy adds them: one by one below 8, else eight
    accumulators over the multiples of 8 added pairwise and the rest one by one (numpy's
    block of up to 128; longer lists are summed by numpy itself)."""
    n = len(a)
    if n < 8:
        res = -0.0
        for x in a:
            res += x
        return res
    if n > 128:
        return float(np.sum(np.asarray(a, dtype=float)))
    r0, r1, r2, r3, r4, r5, r6, r7 = a[:8]
    i, end = 8, n - n % 8
    while i < end:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[i]
        i += 1
    return res


def cover(pairs: list, need: float, c: list) -> float:
    """The row's cheapest fractional cover (``network_bounds._cover_bounds`` of one row)
    from its available candidates with a positive coefficient ``pairs`` ((column,
    capped coefficient), ascending columns): by cost per unit covered (ties: by
    column), each taking what the row still lacks, the terms summed one after the
    other."""
    total, before = 0.0, 0.0
    for ratio, _, k in sorted([(c[j] / k, j, k) for j, k in pairs]):
        if before >= need:          # the rest cover nothing (terms of 0)
            break
        total += min(max(need - before, 0.0), k) * ratio
        before += k
    return total


#: relative margin within which a sum in Python's order may fall on the other side of a
#: threshold than numpy's pairwise sum (then that sum is taken): any order of at most
#: 10^4 non-negative terms errs by less
SUM_MARGIN = 1e-12


def row_branch(rows: list, need: list, tol: list, avail: list, c: list, cost: float,
               best_cost: float, exact_sum) -> list | None:
    """The branch of a node (``_Search._row_branch``): None to drop the node, else the
    candidates to branch on (best ratio first).

    ``rows``: per short row its positive coefficients as (column, coefficient) pairs,
    ascending columns; ``need``, ``tol``: their slack and tolerances; ``avail``: per
    candidate whether it is available; ``c``: the costs; ``exact_sum(i)``: numpy's sum
    of short row ``i``'s capped coefficients over the available candidates, asked for
    only when Python's sum lies too near the row's threshold to decide."""
    capped, support = [], []
    for i, (row, nd, t) in enumerate(zip(rows, need, tol)):
        pairs = [(j, k if k < nd else nd) for j, k in row if avail[j]]
        got = sum([k for _, k in pairs])
        limit = nd - t
        if abs(got - limit) <= SUM_MARGIN * max(got, abs(limit)):
            got = exact_sum(i)
        if got < limit:
            return None             # the row cannot be met
        capped.append(pairs)
        support.append(len(pairs))
    least = min(support)
    few = [i for i, s in enumerate(support) if s == least]
    if best_cost < float("inf"):
        limit = best_cost - 1e-9 * max(1.0, best_cost)
        # as the numpy node: a row's cover costs at least what it lacks at its cheapest
        # cost per unit, and at most its cheapest candidate filling it alone; only the
        # rows to pick from and those whose cover may reach the limit need it exactly
        exact = set(few)
        for i, (pairs, nd, t) in enumerate(zip(capped, need, tol)):
            if cost + (nd - t) * min([c[j] / k for j, k in pairs]) * (1 - 1e-12) >= limit:
                return None
            fill = [c[j] for j, k in pairs if k >= nd]
            if not fill or cost + min(fill) * (1 + 1e-9) >= limit:
                exact.add(i)
        bound = {i: cover(capped[i], need[i], c) for i in sorted(exact)}
        if cost + max(bound.values()) >= limit:
            return None
        r = max(few, key=bound.__getitem__)      # (the first of the largest)
    elif len(few) > 1:
        r = max(few, key=lambda i: cover(capped[i], need[i], c))
    else:
        r = few[0]
    return [j for _, j in sorted([(c[j] / k, j) for j, k in capped[r]])]

"""A sub-table whose relations form a network: the attacker problem as a maximum flow.

When every cell lies in at most two relations with coefficients +-1 and the relations
can be signed so that each cell enters one with +1 and the other with -1 (1-D and 2-D
tables with their totals), ``A y = 0`` says that the deviation ``y`` is a circulation:
a relation is a node, a cell an edge from the node where it enters with +1 (its
*tail*) to the node where it enters with -1 (its *head*); a cell in one relation only
ends at a ground node, which needs no balance of its own (the others imply it).

The intruder's deviation of a suppressed cell ``e`` lies in ``[-down_e, up_e]``: flow
from tail to head up to ``up_e``, from head to tail up to ``down_e``.  So primary ``s``
moves up by at most ``min(up_s, F)``, ``F`` the maximum flow from its head back to its
tail through the other suppressed cells, and down by at most ``min(down_s, F')``, ``F'``
the maximum flow from tail to head (Gusfield's view of two-way tables).  A minimum cut
of that flow is a capacity cut of the pattern: every cell crossing it in the flow's
direction adds its range, and a pattern protects the primary exactly when every such cut
holds its requirement.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

#: flows and cuts below this (relative to the requirement) count as zero
EPS = 1e-12


@dataclass(frozen=True)
class Network:
    """The cells of a table as edges between its relations (plus a ground node).

    Attributes
    ----------
    tail, head : per cell, the node its flow leaves and enters (``y_e > 0``)
    n_nodes : relations + 1 (the last node is the ground)
    """

    tail: np.ndarray
    head: np.ndarray
    n_nodes: int

    @classmethod
    def of(cls, relations) -> "Network | None":
        """The network of a relation matrix (relations x cells), or None when the
        relations are no network (a cell in no relation or in three, a coefficient
        other than +-1, or an odd cycle of signs: 3-D tables).

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> A = sp.csr_matrix([[1.0, -1.0, -1.0]])      # total = a + b
        >>> net = Network.of(A)
        >>> net.tail.tolist(), net.head.tolist(), net.n_nodes
        ([0, 1, 1], [1, 0, 0], 2)
        """
        A = relations.tocsc()
        m, n = A.shape
        counts = np.diff(A.indptr)
        if n == 0 or (counts == 0).any() or (counts > 2).any() \
                or not np.all(np.abs(A.data) == 1.0):
            return None
        sign = _node_signs(A, m)
        if sign is None:
            return None
        ground = m
        tail = np.full(n, ground, dtype=np.int64)
        head = np.full(n, ground, dtype=np.int64)
        for e in range(n):
            for k in range(A.indptr[e], A.indptr[e + 1]):
                r = int(A.indices[k])
                if sign[r] * A.data[k] > 0:
                    tail[e] = r
                else:
                    head[e] = r
        if (tail == head).any():
            return None
        return cls(tail, head, m + 1)

    def flow(self, forward: np.ndarray, backward: np.ndarray, source: int, sink: int,
             skip: tuple[int, ...] = ()) -> tuple[float, np.ndarray]:
        """The maximum flow from node ``source`` to ``sink`` when cell ``e`` carries up
        to ``forward[e]`` from tail to head and ``backward[e]`` back (cells in ``skip``
        carry none), and the source side of a minimum cut (bool mask over nodes)."""
        cap = self.capacities(forward, backward, skip)
        return max_flow(cap, source, sink)

    def capacities(self, forward: np.ndarray, backward: np.ndarray,
                   skip: tuple[int, ...] = ()) -> list[list[float]]:
        """Node-to-node capacities (parallel cells add up)."""
        n = self.n_nodes
        cap = np.zeros((n, n))
        fwd = np.asarray(forward, dtype=float).copy()
        bwd = np.asarray(backward, dtype=float).copy()
        for e in skip:
            fwd[e] = bwd[e] = 0.0
        np.add.at(cap, (self.tail, self.head), fwd)
        np.add.at(cap, (self.head, self.tail), bwd)
        return cap.tolist()


def _node_signs(A, m: int) -> np.ndarray | None:
    """A sign per relation such that every cell in two relations enters them with
    opposite signed coefficients (a 2-colouring; None when there is none)."""
    rows_of = [A.indices[A.indptr[e]:A.indptr[e + 1]] for e in range(A.shape[1])]
    vals_of = [A.data[A.indptr[e]:A.indptr[e + 1]] for e in range(A.shape[1])]
    adj: list[list[tuple[int, float]]] = [[] for _ in range(m)]
    for rows, vals in zip(rows_of, vals_of):
        if len(rows) == 2:
            a, b = int(rows[0]), int(rows[1])
            # sign_b = -sign_a * va * vb
            rel = -float(vals[0] * vals[1])
            adj[a].append((b, rel))
            adj[b].append((a, rel))
    sign = np.zeros(m)
    for start in range(m):
        if sign[start] != 0:
            continue
        sign[start] = 1.0
        todo = [start]
        while todo:
            a = todo.pop()
            for b, rel in adj[a]:
                want = sign[a] * rel
                if sign[b] == 0:
                    sign[b] = want
                    todo.append(b)
                elif sign[b] != want:
                    return None
    return sign


def max_flow(cap: list[list[float]], source: int, sink: int) -> tuple[float, np.ndarray]:
    """Edmonds-Karp on a small dense capacity matrix (lists; modified in place into the
    residual capacities).  Returns the flow value and the source side of a minimum cut.

    >>> v, side = max_flow([[0, 3, 2], [0, 0, 2], [0, 0, 0]], 0, 2)
    >>> v, side.tolist()
    (4.0, [True, True, False])
    """
    n = len(cap)
    total = 0.0
    finite = [c for row in cap for c in row if c < np.inf]
    eps = EPS * max(1.0, max(finite, default=0.0))
    nbrs = [[v for v in range(n) if cap[u][v] > 0 or cap[v][u] > 0] for u in range(n)]
    while True:
        parent = [-1] * n
        parent[source] = source
        queue = deque([source])
        while queue and parent[sink] < 0:
            u = queue.popleft()
            row = cap[u]
            for v in nbrs[u]:
                if parent[v] < 0 and row[v] > eps:
                    parent[v] = u
                    queue.append(v)
        if parent[sink] < 0:
            break
        push = np.inf
        v = sink
        while v != source:
            u = parent[v]
            push = min(push, cap[u][v])
            v = u
        if push == np.inf:      # a path of unbounded cells: no finite cut
            total = np.inf
            break
        v = sink
        while v != source:
            u = parent[v]
            cap[u][v] -= push
            cap[v][u] += push
            v = u
        total += push
    side = np.zeros(n, dtype=bool)
    for v in range(n):
        side[v] = parent[v] >= 0
    return float(total), side

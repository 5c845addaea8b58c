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

from tabprotect.secondary.modular import network_kernel as kernels

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
        key = _structure_key(relations)
        if key is not None and key in _NETWORKS:
            return _NETWORKS[key]
        net = cls._build(relations)
        if key is not None:
            if len(_NETWORKS) >= _NETWORKS_KEPT:
                _NETWORKS.clear()
            _NETWORKS[key] = net
        return net

    @classmethod
    def _build(cls, relations) -> "Network | None":
        A = relations.tocsc()
        m, n = A.shape
        counts = np.diff(A.indptr)
        if n == 0 or (counts == 0).any() or (counts > 2).any() \
                or not np.all(np.abs(A.data) == 1.0):
            return None
        sign = _node_signs(A, m, counts)
        if sign is None:
            return None
        col = np.repeat(np.arange(n), counts)
        signed = sign[A.indices] * A.data
        pos, neg = signed > 0, signed < 0
        if (np.bincount(col[pos], minlength=n) > 1).any() \
                or (np.bincount(col[neg], minlength=n) > 1).any():
            return None
        ground = m
        tail = np.full(n, ground, dtype=np.int64)
        head = np.full(n, ground, dtype=np.int64)
        tail[col[pos]] = A.indices[pos]
        head[col[neg]] = A.indices[neg]
        tail.flags.writeable = head.flags.writeable = False   # shared by the memo
        return cls(tail, head, m + 1)

    def flow(self, forward: np.ndarray, backward: np.ndarray, source: int, sink: int,
             skip: tuple[int, ...] = ()) -> tuple[float, np.ndarray]:
        """The maximum flow from node ``source`` to ``sink`` when cell ``e`` carries up
        to ``forward[e]`` from tail to head and ``backward[e]`` back (cells in ``skip``
        carry none), and the source side of a minimum cut (bool mask over nodes)."""
        if kernels.kernel_loaded():     # the same capacities and paths, compiled
            total, side = kernels.flow_compiled(
                self.tail, self.head, np.asarray(forward, dtype=float),
                np.asarray(backward, dtype=float), np.asarray(skip, dtype=np.int64),
                self.n_nodes, source, sink, EPS)
            return float(total), side
        return max_flow(self.capacities(forward, backward, skip).tolist(), source, sink)

    def capacities(self, forward: np.ndarray, backward: np.ndarray,
                   skip: tuple[int, ...] = ()) -> np.ndarray:
        """Node-to-node capacities (parallel cells add up)."""
        n = self.n_nodes
        cap = np.zeros((n, n))
        fwd = np.asarray(forward, dtype=float).copy()
        bwd = np.asarray(backward, dtype=float).copy()
        for e in skip:
            fwd[e] = bwd[e] = 0.0
        np.add.at(cap, (self.tail, self.head), fwd)
        np.add.at(cap, (self.head, self.tail), bwd)
        return cap


#: networks by their relation matrix's structure (:func:`_structure_key`): the
#: sub-tables of one shape share their relations, so each shape is analysed once
_NETWORKS: dict = {}
#: structures kept before the memo starts again (a bound on its memory)
_NETWORKS_KEPT = 256


def _structure_key(relations) -> tuple | None:
    """The relation matrix's format, shape and entries as bytes (None: not a
    compressed sparse matrix, nothing memoised)."""
    if getattr(relations, "format", None) not in ("csr", "csc"):
        return None
    return (relations.format, relations.shape, relations.indptr.tobytes(),
            relations.indices.tobytes(), relations.data.tobytes())


def _node_signs(A, m: int, counts: np.ndarray) -> np.ndarray | None:
    """A sign per relation such that every cell in two relations enters them with
    opposite signed coefficients (a 2-colouring; None when there is none)."""
    two = np.flatnonzero(counts == 2)
    first = A.indptr[two]
    a, b = A.indices[first], A.indices[first + 1]
    # sign_b = -sign_a * v_a * v_b
    rel = -(A.data[first] * A.data[first + 1])
    adj: list[list[tuple[int, float]]] = [[] for _ in range(m)]
    for x, y, r in zip(a.tolist(), b.tolist(), rel.tolist()):
        adj[x].append((y, r))
        adj[y].append((x, r))
    sign = [0.0] * m
    for start in range(m):
        if sign[start] != 0:
            continue
        sign[start] = 1.0
        todo = [start]
        while todo:
            x = todo.pop()
            for y, r in adj[x]:
                want = sign[x] * r
                if sign[y] == 0:
                    sign[y] = want
                    todo.append(y)
                elif sign[y] != want:
                    return None
    return np.asarray(sign)


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


def min_cost_flow(net: Network, forward: np.ndarray, backward: np.ndarray, source: int,
                  sink: int, amount: float, cells: np.ndarray) -> np.ndarray | None:
    """The least total movement sending ``amount`` from ``source`` to ``sink`` through
    ``cells`` (each unit on each cell costs 1; a cell carries up to ``forward`` from
    tail to head, ``backward`` back): per cell of ``cells`` its signed flow (+: tail to
    head), or None when ``amount`` cannot be sent.  Successive shortest paths
    (Bellman-Ford on the residual arcs: fewest cells first).

    >>> net = Network(np.array([0, 0, 1]), np.array([1, 2, 2]), 3)
    >>> min_cost_flow(net, np.array([5.0, 2, 2]), np.zeros(3), 0, 2, 3.0,
    ...               np.array([0, 1, 2])).tolist()
    [1.0, 2.0, 1.0]
    """
    tails = net.tail[cells].tolist()
    heads = net.head[cells].tolist()
    # arc 2k: tail -> head, arc 2k + 1: head -> tail; residual capacities
    res = []
    for k in range(len(cells)):
        res += [float(forward[cells[k]]), float(backward[cells[k]])]
    frm = [x for k in range(len(cells)) for x in (tails[k], heads[k])]
    to = [x for k in range(len(cells)) for x in (heads[k], tails[k])]
    flow = [0.0] * len(res)          # on arc a; its reverse residual is flow[a]
    eps = EPS * max(1.0, amount)
    left = amount
    n = net.n_nodes
    while left > eps:
        dist = [np.inf] * n
        via = [-1] * n                # arc index * 2 + (1: along a reverse residual)
        dist[source] = 0.0
        for _ in range(n - 1):
            changed = False
            for a in range(len(res)):
                if res[a] - flow[a] > eps and dist[frm[a]] + 1 < dist[to[a]]:
                    dist[to[a]] = dist[frm[a]] + 1
                    via[to[a]] = 2 * a
                    changed = True
                if flow[a] > eps and dist[to[a]] - 1 < dist[frm[a]]:
                    dist[frm[a]] = dist[to[a]] - 1
                    via[frm[a]] = 2 * a + 1
                    changed = True
            if not changed:
                break
        if dist[sink] == np.inf:
            return None
        path = []
        v = sink
        while v != source:
            a, back = divmod(via[v], 2)
            path.append((a, back))
            v = to[a] if back else frm[a]
        push = min(left, min(flow[a] if back else res[a] - flow[a] for a, back in path))
        for a, back in path:
            flow[a] += -push if back else push
        left -= push
    out = np.asarray(flow[0::2]) - np.asarray(flow[1::2])
    return out

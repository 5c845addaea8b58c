"""A network sub-table's primaries judged by maximum flows (:mod:`.network`): whether a
pattern protects each one against the outside intruder and, where the requirements say
so, every single-contributor attacker."""
from __future__ import annotations

import numpy as np

from tabprotect.secondary.modular.network import Network
from tabprotect.secondary.modular.network_cuts import REL_TOL, Problem


def protects(prob: Problem, z: np.ndarray) -> bool:
    """Every primary meets its requirements under ``z``, checked by maximum flows."""
    return all(_meets(prob, z, prob.req, int(s)) for s in prob.req.primary)


def network_unprotected(sub, req, hidden: np.ndarray) -> np.ndarray | None:
    """The primaries of a network sub-table that the ``hidden`` cells leave
    unprotected, by maximum flows (None: the sub-table is no network)."""
    net = Network.of(sub.relations)
    if net is None:
        return None
    hidden = np.asarray(hidden, bool)
    prob = Problem(net, req, np.zeros(sub.n_cells), np.zeros(sub.n_cells, bool), hidden)
    short = [int(s) for s in req.primary
             if not _meets(prob, hidden, req, int(s))]
    return np.asarray(short, dtype=np.int64)


def _meets(prob: Problem, z: np.ndarray, req, s: int) -> bool:
    """Primary ``s`` meets its requirements under ``z`` against every attacker."""
    slot = int(np.searchsorted(req.primary, s))
    nu, nd = float(req.need_up[slot]), float(req.need_down[slot])
    width = float(req.need_width[slot])
    tol = REL_TOL * max(1.0, nu, nd, width)
    attackers = [-1]
    if req.singleton.any():
        attackers += [int(j) for j in np.flatnonzero(req.singleton & z) if j != s]
    for j in attackers:
        up, down, _ = prob.moves(z, s, j)
        if up < nu - tol or down < nd - tol or up + down < width - tol:
            return False
    return True

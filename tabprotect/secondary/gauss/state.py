"""The elimination's arrays and constants, shared by the kernel and its callers."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: the prime modulus (2^31 - 1): coefficients live in [0, P)
P = 2_147_483_647
#: the prime modulus of the support fingerprints (2^61 - 1: a sum of two fits an int64)
Q = 2_305_843_009_213_693_951

#: roles of a watched vector (bits): a checked primary must stay out of the published
#: span; an attacker's value is known to its single contributor
ROLE_CHECKED, ROLE_ATTACKER = 1, 2


class State(NamedTuple):
    """The elimination's arrays.

    Vectors (the watched vectors ``0..n_watched-1``: primaries and attackers, with their
    ``role`` bits; then the basis vectors in publication order) are runs
    ``[vstart, vstart + vlen)``, sorted by key, of the pool ``pkey`` / ``pval`` /
    ``pnode`` with room for ``vcap`` entries.  Every entry but a basis
    vector's pivot has a node (``pnode``) in its key's linked list of holders
    (``head_p``: watched vectors, ``head_b``: basis vectors; ``nnext``/``nowner``), marked
    dead (owner -1) when the entry cancels and freed when the list is next walked, so
    the live nodes are exact; ``cnt_p``/``cnt_b`` count them.  The non-zero watched
    vectors are also filed in an open-addressing hash table by the fingerprint of their
    support (``fp``: the sum of their keys' ``salt`` modulo Q), which is how an offer
    finds the primaries it would disclose, and the attacker whose reduced vector a
    primary's would become proportional to.
    """
    vstart: np.ndarray
    vlen: np.ndarray
    vcap: np.ndarray
    pkey: np.ndarray      # int32 keys
    pval: np.ndarray      # int32 coefficients mod P
    pnode: np.ndarray     # int32 list node of the entry (-1: a basis vector's pivot)
    pivot_of: np.ndarray  # key -> basis vector id, or -1
    cnt_p: np.ndarray
    cnt_b: np.ndarray
    head_p: np.ndarray
    head_b: np.ndarray
    nnext: np.ndarray
    nowner: np.ndarray
    salt: np.ndarray      # per key: a random number in [1, Q)
    fp: np.ndarray        # per vector: its support's fingerprint (used when watched)
    table: np.ndarray     # hash table of the non-zero watched vectors (-1: empty slot)
    acc: np.ndarray       # dense work arrays over the keys (all zero / False between uses)
    inacc: np.ndarray
    touched: np.ndarray
    rk: np.ndarray        # the offered vector reduced (keys, coefficients)
    rv: np.ndarray
    tk: np.ndarray        # per key of the reduced offer: kind, value, position
    tv: np.ndarray
    tn: np.ndarray
    ids: np.ndarray       # holders of the pivot
    role: np.ndarray      # per watched vector: ROLE_* bits
    mark: np.ndarray      # per watched vector: the offer that last found it a holder
    hstart: np.ndarray    # per holder of the pivot: its trial vector (pool, length,
    hlen: np.ndarray      # fingerprint) in the pair test
    hfp: np.ndarray
    meta: np.ndarray      # scalars, see the M_* indices


# indices into State.meta
(M_TOP, M_NVEC, M_FREE, M_NODE_TOP, M_NFREE, M_DISCLOSED, M_NEED, M_STATUS, M_STAMP,
 M_PAIRS) = range(10)
STATUS_PUBLISHED, STATUS_SUPPRESSED, STATUS_NEED_POOL, STATUS_NEED_NODES = 1, 0, -1, -2

"""Spare HiGHS instances: a dropped :class:`~solvers.HighsModel`'s instance, cleared,
serves the next model.  Constructing (and destroying) one costs several times what a
small attacker LP's solve does, and a search builds hundreds of such models."""

from __future__ import annotations

import sys

#: the spare instances, cleared and with default options
SPARE: list = []
#: at most this many spare instances ...
MAX_SPARES = 256
#: ... each from a model of at most this many columns plus rows (a cleared instance
#: keeps the memory of its largest model's arrays)
MAX_SIZE = 20_000


def new(highspy, spare: bool = False):
    """A bare HiGHS instance of the module ``highspy``; with ``spare``, a spare one when
    there is one: its run clock, which HiGHS' time limit counts from, goes on from its
    earlier models' runs, so only :class:`~solvers.HighsModel`, which sets every LP
    time limit relative to that clock, asks for one.

    The pybind ``_core._Highs`` class is preferred over ``highspy.Highs``: the Python
    subclass registers callbacks (overhead on every run) and prints a copyright banner on
    stdout at first construction, which would pollute CLI output. Fall back to the public
    class when the private one is not there (other highspy versions).
    """
    if spare:
        try:
            return SPARE.pop()
        except IndexError:
            pass
    core = getattr(getattr(highspy, "_core", None), "_Highs", None)
    h = core() if core is not None else highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


def release(h, size: int, holders: int) -> None:
    """Keep ``h`` (of a model of ``size`` columns plus rows) as a spare instance, its
    model, solver state and options cleared as a new instance's are.  Only when nothing
    but its ``holders`` references (the caller's) holds it: a caller that kept the raw
    instance of a model it dropped still owns it."""
    if h is None or size > MAX_SIZE or len(SPARE) >= MAX_SPARES \
            or sys.getrefcount(h) > holders + 1:
        return
    try:
        h.clearModel()
        h.resetOptions()
        h.setOptionValue("output_flag", False)
    except Exception:  # pragma: no cover - at interpreter exit, or a foreign instance
        return
    SPARE.append(h)

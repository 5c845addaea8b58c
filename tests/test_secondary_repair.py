"""The greedy repair's kept deviations: a condition they show met needs no LP, and the
independent LP audit agrees that it is met."""
import pytest

from tabprotect.model.synthetic import preset
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.repair import GreedyRepair
from tests import lp_oracle


class RecordingRepair(GreedyRepair):
    """The greedy repair, recording each condition its kept deviations settle and the
    pattern it was settled on."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.settled = []

    def _witnessed(self, suppressed, s, kind, j, need):
        met = super()._witnessed(suppressed, s, kind, j, need)
        if met:
            self.settled.append((suppressed.copy(), s, kind, j, need))
        return met


def _case(name, seed, singleton):
    table = preset(name, seed=seed)
    req = Requirements.from_table(table, singleton=singleton)
    return table, req, cost_vector(table, "value"), candidate_cells(table)


@pytest.mark.parametrize("name,seed,singleton", [
    ("2d-small", 1, False), ("2d-small", 3, False), ("3d-small", 0, False),
    ("3d-small", 5, False), ("3d-small", 1, True)])
def test_settled_conditions_hold_and_the_pattern_passes(name, seed, singleton):
    table, req, cost, cand = _case(name, seed, singleton)
    first = table.status == "U"
    rep = RecordingRepair(table, req, cost, cand)
    pattern, unmet = rep.run(first)
    assert not unmet
    assert rep.settled      # the case exercises the kept deviations
    for suppressed, s, kind, j, need in rep.settled:
        (lo, hi), = lp_oracle.intervals(table, suppressed, fixed=(j,) if j >= 0 else (),
                                        cells=[s]).values()
        x = table.value[s]
        reach = hi - x if kind == "up" else x - lo
        assert reach >= need * (1 - 1e-6) - 1e-6, (s, kind, j)
    # the pattern protects every primary (the independent audit, single contributors too)
    assert lp_oracle.protected(table, pattern, singleton=singleton)[first].all()
    # and keeps no more cells than the repair that solves every condition's LP
    plain, plain_unmet = GreedyRepair(table, req, cost, cand, witnesses_kept=0).run(first)
    assert not plain_unmet
    assert pattern.sum() <= plain.sum()

"""Notes that count primary cells are marked where they are made
(:class:`tabprotect.results.PrimaryCountNote`) and the trail withholds exactly those: a
count of primaries beside the number of suppressed cells can say that every suppressed
cell is a primary.  Each producer of such a note runs here on a small count table."""
from __future__ import annotations

import json

from helpers import flat_count_table

from tabprotect.io.results import WITHHELD_NOTE, write_outputs
from tabprotect.model import synthetic
from tabprotect.pipeline import Run
from tabprotect.results import PrimaryCountNote
from tabprotect.secondary import protect
from tabprotect.secondary.protect_settings import ProtectSettings
from tabprotect.secondary.repair_options import WitnessSearchSettings

#: per producer of a counting note, words its note holds
PRODUCERS = {
    "feasibility check skipped": "candidate cells: up-front feasibility check skipped",
    "failed final audit": "did NOT pass the audit",
    "deviation LPs": "deviation LPs for",
    "attacker deviations": "deviations against single contributors",
    "integral witnesses": "integral witnesses",
    "MILP repair": "MILP(s)",
}


def _counts_primaries(note: str) -> bool:
    return "primar" in note and any(c.isdigit() for c in note)


def _runs():
    """Protect() runs whose notes, together, come from every producer."""
    t = flat_count_table((4, 4, 3), 1, 2.0)
    unchecked = dict(feasibility_check_max_work=0)
    local = ProtectSettings(whole_repair_max_work=0, **unchecked)
    yield t, protect(t, method="greedy", cost="value", singleton=True, repair=False,
                     settings=local)
    yield t, protect(t, method="greedy", cost="value", singleton=True, settings=local)
    yield t, protect(t, method="greedy", cost="value", singleton=True,
                     settings=ProtectSettings(
                         interval_audit_max_work=0,
                         witness_search=WitnessSearchSettings(attack_min_cells=0),
                         **unchecked))
    counts = synthetic.count_table([(2, 3)] * 3, seed=2)
    yield counts, protect(counts, method="gauss", cost="value", singleton=False,
                          settings=ProtectSettings(**unchecked))


def test_every_note_that_counts_primaries_is_marked_and_withheld(tmp_path):
    seen, plain = set(), 0
    for k, (table, res) in enumerate(_runs()):
        for note in res.notes:
            if _counts_primaries(note):
                assert isinstance(note, PrimaryCountNote), note
            for name, words in PRODUCERS.items():
                if words in note:
                    assert isinstance(note, PrimaryCountNote), note
                    seen.add(name)
        run = Run(table, kind="suppression", method=res.method,
                  published=res.confidential_table, audit=res.audit, notes=list(res.notes))
        write_outputs(run, tmp_path / str(k))
        trail = json.loads((tmp_path / str(k) / "trail.json").read_text())["notes"]
        assert len(trail) == len(res.notes)
        for note, public in zip(res.notes, trail):
            assert public == (WITHHELD_NOTE if isinstance(note, PrimaryCountNote) else note)
            plain += public == note     # a note that counts no primary reaches the trail
        assert not [n for n in trail if _counts_primaries(n)]
    assert seen == set(PRODUCERS), set(PRODUCERS) - seen
    assert plain

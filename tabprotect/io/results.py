"""Writing a run's outputs: one set of file names for every command and the service.

:data:`OUTPUT_FILES` is the one table of names (docs/jobs.md shows it).  A pattern whose
audit failed is written only as ``UNSAFE-not-for-publication.csv``, never as
``published.csv``.  Files are written into a temporary folder inside the output folder;
then the previous run's outputs are removed (the trail first), the new files are renamed
into place, and the trail -- listing every output with its SHA-256 -- comes last.  A
folder with a trail therefore holds exactly the outputs the trail lists; a folder without
one holds no finished run.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tabprotect.errors import InputError
from tabprotect.io.output import write_frame
from tabprotect.model.columns import Columns
from tabprotect.model.status import is_suppressed
from tabprotect.results import SUPPRESSED_LETTER, PrimaryCountNote

if TYPE_CHECKING:
    import pandas as pd

#: key -> (file name, what it holds); the confidential files hold true cell values
OUTPUT_FILES: dict[str, tuple[str, str]] = {
    "published": ("published.csv", "the publishable table: codes, value (blank when "
                  "suppressed or, with published = \"margins\", an inner cell; the rounded "
                  "value for rounding, the adjusted value for cta), freq, status: S, P or "
                  "Z where published, X for every "
                  "suppressed cell, primary and secondary alike (no freq or status for "
                  "rounding and cta). Written only when the audit passed"),
    "unsafe": ("UNSAFE-not-for-publication.csv", "the same columns for a run whose audit "
               "failed (exit code 1), with U and M to show what failed: never publish it"),
    "primary": ("primary.csv", "confidential: every cell with its status, the rule that "
                "made it unsafe and its protection levels (`primary`)"),
    "cells": ("cells.csv", "confidential: every cell's true value, freq and final status "
              "(rounding, cta: and the published value)"),
    "audit": ("audit.csv", "confidential: what an intruder can derive for each unpublished "
              "cell (rounding: each cell), the required protection and the verdict"),
    "comparison": ("compare.csv", "confidential: one row per method of a comparison (the "
                   "secondaries' count and value beside all suppressed cells' give the "
                   "primaries')"),
    "risk": ("risk.csv", "microdata (`risk`): the disclosure risk of each record, no key "
             "values"),
    "perturbed": ("perturbed.csv", "microdata (`perturb`, `swap`; `cellkey` when it swapped "
                  "or added record keys): the records after perturbation, with their record "
                  "keys, for later runs; confidential when it holds record keys (with the "
                  "published ptable they give every cell's noise)"),
    "ptable": ("ptable.txt", "`cellkey`: the perturbation table in tau-Argus format "
               "(public: it is published with the tables)"),
    "matrices": ("matrices.csv", "microdata (`perturb`): the transition matrices used "
                 "(rows = true categories); confidential for invariant PRAM (its matrix "
                 "gives each stratum's true category counts up to scale: T'R = T') and for "
                 "a swap (its empirical shares give the swap rate, unless [perturb] "
                 "publish_counts)"),
    "report": ("report.html", "confidential: the report for the people who decide what is "
               "published (`report`, `demo`, `--report`)"),
    "summary": ("summary.json", "counts and the verdict, no cell value: safe to share"),
    "trail": ("trail.json", "written last: the input and output files (the public outputs "
              "with SHA-256 checksums), the job as run, software versions, timings and the "
              "summary"),
}

#: outputs that may be published, listed in the trail with size and SHA-256; the inputs
#: and every other output are listed by name only: a checksum of a small confidential file
#: is an oracle that tells which guess of its suppressed values is right
PUBLIC_OUTPUTS = frozenset({"published", "summary", "ptable"})

#: files of earlier versions a re-used output folder is cleared of as well
_OLD_NAMES = ("protected.csv", "protect_summary.json", "rounded.csv", "rounding_detail.csv",
              "rounded_audit.csv", "rounding_summary.json", "rounded_audit_summary.json",
              "primary_summary.csv", "report.json", "compare.json", "compare_report.html",
              "compare_report.json", "risk_records.csv", "risk_records_summary.json",
              "perturbed_matrices.csv", "perturbed_summary.json")

__all__ = ["OUTPUT_FILES", "PUBLIC_OUTPUTS", "write_outputs", "write_files", "trail_record",
           "run_summary", "SummaryBudget", "audit_trail", "sha256_file", "versions",
           "published_frame", "public_notes", "public_parameters", "public_swap"]


def sha256_file(path: str | Path) -> str:
    """SHA-256 checksum of a file, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: the numerical packages whose versions a trail records, when the run loaded them
NUMERICAL_PACKAGES = ("numpy", "pandas", "scipy", "highspy", "pulp", "matplotlib")


def versions() -> dict[str, str]:
    """Versions of tabprotect, Python and the numerical packages this process has loaded
    (a package the run did not load took no part in it): a module's ``__version__``
    where it has one, else the package metadata (read once per package and process:
    its scan costs more than a small run)."""
    from tabprotect import __version__
    out = {"tabprotect": __version__, "python": platform.python_version()}
    for name in NUMERICAL_PACKAGES:
        module = sys.modules.get(name)
        if module is None:
            continue
        version = getattr(module, "__version__", None)
        version = version if isinstance(version, str) else _metadata_version(name)
        if version is not None:
            out[name] = version
    return out


@functools.lru_cache(maxsize=None)
def _metadata_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


#: keys whose values are secret: a random method's seed repeats its draws, and with the
#: draws known the published values narrow (a random rounding's uniform for a cell, with
#: the direction it was rounded, bounds the cell's remainder; PRAM's, with the published
#: category, the true one); the operator's terminal shows it, the public outputs do not
SECRET_KEYS = frozenset({"seed", "param_seed"})
WITHHELD = "withheld (secret: it repeats the random draws)"


def without_secrets(obj):
    """``obj`` (dicts and lists) with the value of every :data:`SECRET_KEYS` key withheld.

    >>> without_secrets({"round": {"base": 5, "seed": 7}})["round"]["seed"][:8]
    'withheld'
    """
    if isinstance(obj, dict):
        return {k: WITHHELD if k in SECRET_KEYS and v is not None else without_secrets(v)
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [without_secrets(v) for v in obj]
    return obj


#: the job's [rules] in the trail: with a cell known to be a primary, a rule's parameters
#: bound its value or count (a count of 1 to n-1 under the threshold rule), which the audit
#: models only for a pattern of primaries only (an audit of the rules' statuses). Withheld
#: in every trail, so that withholding says nothing
WITHHELD_RULES = ("withheld (confidential: a rule's parameters bound the value of a cell "
                  "known to be a primary; the report shows them)")


#: a swap's rate and counts (households moved, pairs per level, records at risk before and
#: after): many offices keep the swap rate confidential, since with it an intruder judges
#: how likely a record is still in its true area; summary.json and the trail withhold them
#: unless the job's ``publish_counts`` releases them (the terminal and the report show them)
SWAP_COUNTS = frozenset({"households_moved", "rate", "unmatched_at_risk", "pairs_per_level",
                         "risk", "n_swaps", "n_records_changed"})
WITHHELD_SWAP = ("withheld (confidential: the swap's rate and counts; the report shows "
                 "them; publish_counts = true releases them)")


def public_swap(summary: dict, publish_counts: bool = False,
                keys: frozenset = SWAP_COUNTS) -> dict:
    """A swap's summary as summary.json and the trail give it: the ``keys`` (the rate and
    the counts) withheld unless ``publish_counts``.

    >>> public_swap({"method": "swap", "households": 40, "rate": 0.1})["rate"][:8]
    'withheld'
    """
    if publish_counts:
        return summary
    return {k: WITHHELD_SWAP if k in keys else v for k, v in summary.items()}


def public_parameters(parameters: dict) -> dict:
    """The job as run, as the trail gives it: seeds and the [rules] section withheld, and
    the swap rate of [swap] and [perturb] unless their ``publish_counts``.

    >>> public_parameters({"rules": {"frequency": {"n": 3}}, "protect": {}})["rules"][:8]
    'withheld'
    """
    out = without_secrets(parameters)
    if isinstance(out, dict) and "rules" in out:
        out["rules"] = WITHHELD_RULES
    for name in ("swap", "perturb"):
        section = out.get(name) if isinstance(out, dict) else None
        if isinstance(section, dict) and "rate" in section \
                and not section.get("publish_counts", False):
            out[name] = {**section, "rate": WITHHELD_SWAP}
    return out


#: figures that compare the true values with the published ones: how many cells (or PRAM
#: records) a method changed (none changed is every one exact) and by how much in all, and
#: figures of values that are not published (the per-cell cell key counts an additivity
#: repair replaced); the confidential report and the terminal show them, summary.json and
#: the trail do not
TRUE_VALUE_FIGURES = frozenset({"changed_cells", "cells_changed", "total_change",
                                "n_changed", "additivity_before"})


def without_true_value_figures(obj):
    """``obj`` (dicts and lists) without the :data:`TRUE_VALUE_FIGURES` keys.

    >>> without_true_value_figures({"tables": [{"cells": 9, "cells_changed": 0}]})
    {'tables': [{'cells': 9}]}
    """
    if isinstance(obj, dict):
        return {k: without_true_value_figures(v) for k, v in obj.items()
                if k not in TRUE_VALUE_FIGURES}
    if isinstance(obj, (list, tuple)):
        return [without_true_value_figures(v) for v in obj]
    return obj


WITHHELD_NOTE = "withheld: a note that counts primary cells (the report shows it)"


def public_notes(notes) -> list[str]:
    """``notes`` as the trail gives them: a note that counts primary cells (a
    :class:`~tabprotect.results.PrimaryCountNote`, as its producer marks it) is withheld
    (the terminal and the confidential report show it).

    >>> public_notes([PrimaryCountNote("repair round 1: settled 3 of 4 short primaries"),
    ...               "partitioned"])
    ['withheld: a note that counts primary cells (the report shows it)', 'partitioned']
    """
    return [WITHHELD_NOTE if isinstance(n, PrimaryCountNote) else str(n) for n in notes]


def jsonable(obj):
    """Plain JSON values (numpy scalars and arrays, paths; non-finite numbers -> null)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if np.isfinite(f) else None
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (str, int)) or obj is None:
        return obj
    return str(obj)


@dataclasses.dataclass(frozen=True)
class SummaryBudget:
    """Wall seconds the public summary's checks may take, tied to the run's own time: a
    figure whose check does not finish in them is withheld (never released unchecked)."""

    #: of the run's seconds: writing the summary costs at most about half the run again
    share: float = 0.5
    #: at least this: the checks of an everyday table finish well within it
    least: float = 2.0
    #: at most this, however long the run
    most: float = 60.0

    def seconds(self, run_seconds: float) -> float:
        return min(self.most, max(self.least, self.share * run_seconds))


#: the value figures a summary may release: those of all suppressed cells together (the
#: primary/secondary split stays in the confidential report: where every suppressed cell
#: is a primary, a zero secondary value tells an intruder so)
PUBLIC_FIGURES = ("value_suppressed", "share_value_suppressed")
#: why a pattern whose audit did not pass releases no figure
NOT_PUBLISHED = "the audit did not pass: the pattern is not published"


def _published_letters(run) -> "np.ndarray | None":
    """The status letters of published.csv (X for every suppressed cell), or None where
    the published table has no status column (rounding, cta, cell key)."""
    if run.kind in ("rounding", "adjustment", "cellkey") or run.published is None:
        return None
    return np.where(run.unpublished, SUPPRESSED_LETTER, run.published.status)


def run_summary(run, budget: SummaryBudget = SummaryBudget()) -> dict[str, Any]:
    """What a run may tell outside the confidential report: counts, the verdict, the
    method, the attacker model, times and, under ``figures``, the value figures of the
    pattern that :func:`tabprotect.public_summary.public_summary` releases (each checked
    by the LP audit as one more published equation; the others are listed as withheld,
    among them any whose check does not finish within ``budget``)."""
    status = pattern_status(run) if run.published is not None else run.status
    out: dict[str, Any] = {
        "kind": run.kind, "method": run.method, "attacker": run.attacker,
        "verdict": run.verdict, "cells": int(run.table.n_cells),
    }
    letters = _published_letters(run)
    if letters is not None:
        out["status_counts"] = {s: int((letters == s).sum()) for s in "SXPZ"}
    if run.audit is not None:
        s = run.audit.summary()
        for key in ("mode", "unprotected_primary", "exactly_disclosed", "narrower_than_method",
                    "pinned_small_values", "complete"):
            if key in s:
                out[f"audit_{key}" if key in ("mode", "complete") else key] = s[key]
    for key in ("proven_optimal", "repaired", "additive"):     # no TRUE_VALUE_FIGURES
        if key in run.results and not isinstance(run.results[key], (dict, list)):
            out[key] = run.results[key]
    if run.comparison is not None:
        out["methods"] = [{"label": r["label"], "audit_passed": r.get("audit_passed"),
                           "error": bool(r.get("error"))}
                          for r in run.comparison.to_dict(orient="records")]
    if run.kind == "cellkey":
        out["cellkey"] = without_true_value_figures(run.results.get("cellkey"))
        if isinstance(out["cellkey"], dict) and "swap" in out["cellkey"]:
            publish = (run.parameters or {}).get("swap", {}).get("publish_counts", False)
            out["cellkey"]["swap"] = public_swap(out["cellkey"]["swap"], publish)
    if run.kind in ("suppression", "audit", "compare") and run.published is not None \
            and run.passed is not True:
        # the checks compare with the published table, and a failed pattern is not
        # published: its figures would be all an intruder has (one suppressed cell's value)
        out["figures"] = {"withheld": {name: NOT_PUBLISHED for name in PUBLIC_FIGURES}}
    elif run.kind in ("suppression", "audit", "compare") and run.published is not None:
        from tabprotect.public_summary import public_summary, standard_figures
        limit = budget.seconds(sum(run.timings.values()))
        shared = {k: v for k, v in standard_figures(run.published, status).items()
                  if k in PUBLIC_FIGURES}
        figures = public_summary(run.published, status, shared, time_limit=limit)
        out["figures"] = {k: v for k, v in figures.items()
                          if k not in ("cells", "primary", "secondary", "suppressed")}
    out["seconds"] = round(sum(run.timings.values()), 3)
    return jsonable(without_secrets(out))


def audit_trail(run, outputs: dict[str, Path], summary: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """The record of a run: inputs and outputs with checksums, the job as run, software
    versions, timings and the public summary (never a cell value). ``summary``: the run's
    :func:`run_summary` when the caller has it already (its figures cost LP solves)."""
    if summary is None:
        summary = run_summary(run)
    return trail_record(run.title, run.inputs, run.parameters, outputs, summary,
                        timings=run.timings, notes=run.notes)


def _file_entry(path: Path, public: bool = False) -> dict[str, Any]:
    if not public:
        return {"file": path.name, "confidential": True}
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def trail_record(title: str, inputs, parameters: dict, outputs: dict[str, Path],
                 summary: dict, *, timings: dict | None = None,
                 notes: list | None = None) -> dict[str, Any]:
    """A trail: inputs and outputs (file name; size and SHA-256 of the public outputs,
    :data:`PUBLIC_OUTPUTS`), parameters, versions, timings, the summary and notes."""
    return jsonable({
        "title": title,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "inputs": [_file_entry(p) for p in map(Path, inputs) if p.is_file()],
        "parameters": public_parameters(parameters),
        "timings_seconds": timings or {},
        "outputs": {k: _file_entry(p, k in PUBLIC_OUTPUTS) for k, p in outputs.items()},
        "summary": without_secrets(summary),
        "notes": public_notes(notes or []),
    })


def published_frame(run) -> "pd.DataFrame | None":
    """The publishable table: codes, value (blank when unpublished), freq, status."""
    columns = published_columns(run)
    return None if columns is None else columns.to_pandas()


def published_columns(run, show_primaries: bool = False) -> Columns | None:
    """:func:`published_frame` as :class:`~tabprotect.model.columns.Columns` (written);
    suppressed cells have the status :data:`SUPPRESSED_LETTER` unless ``show_primaries``
    (the pattern of a failed audit, never published)."""
    if run.kind in ("rounding", "adjustment"):
        frame = run.table.to_columns(())
        frame["value"] = np.where(published_mask(run), np.asarray(run.rounded), np.nan)
        return frame
    if run.published is None:
        return None
    table = run.published
    hidden = run.unpublished
    frame = table.to_columns(("value", "freq", "status"), confidential=True)
    frame["value"] = np.where(hidden, np.nan, table.value)
    frame["freq"] = np.where(hidden, np.nan, table.freq)
    if not show_primaries:
        frame["status"] = np.where(hidden, SUPPRESSED_LETTER, table.status)
    if np.isnan(table.freq[~hidden]).all():
        frame = frame.drop(["freq"])
    return frame


def published_mask(run) -> np.ndarray:
    """The cells whose value published.csv gives: those the audit saw published (a
    rounding audited with ``published = "margins"``: the margins only; suppression: the
    cells not suppressed; a run without a published pattern, such as primary rules
    alone: every cell, since it suppresses none)."""
    if run.kind in ("suppression", "audit", "compare") and run.published is not None:
        return ~np.asarray(run.unpublished, bool)
    seen = getattr(run.audit, "is_published", None)
    if run.kind in ("rounding", "adjustment", "audit-rounded") and seen is not None:
        return np.asarray(seen, bool)
    return np.ones(run.table.n_cells, bool)


def pattern_status(run) -> np.ndarray:
    """The status letters of the published pattern: a cell the audit took as unpublished
    without a suppression status (``[audit] published = "margins"``) counts as suppressed
    (M), so that the public figures are checked against what is published."""
    status = run.status
    hidden = np.asarray(run.unpublished, bool) & ~is_suppressed(status)
    return np.where(hidden, "M", status) if hidden.any() else status


def _frames(run, audit_all_cells: bool, audit_flagged_only: bool) -> dict[str, Any]:
    """The tables to write by output key (:class:`Columns`; a DataFrame where a part of
    the run holds one: cell key runs, comparisons)."""
    frames: dict[str, Any] = {}
    if run.kind == "cellkey":
        from tabprotect.census import published_frames
        frames["published"], frames["cells"] = published_frames(run.census)
        if run.census.swap is not None or run.census.keys_added:
            frames["perturbed"] = run.census.data
        return frames
    if run.rules is not None:
        frames["primary"] = run.rules.to_columns()
    publishable = run.passed in (True, None)
    pub = published_columns(run, show_primaries=not publishable)
    if pub is not None:
        frames["published" if publishable else "unsafe"] = pub
    if run.kind in ("rounding", "adjustment"):
        cells = run.table.to_columns(("value", "freq", "status") if run.kind == "adjustment"
                                     else ("value", "freq"), confidential=True)
        cells["published"] = np.asarray(run.rounded)
        frames["cells"] = cells
    elif run.published is not None:
        frames["cells"] = run.published.to_columns(("value", "freq", "status"),
                                                   confidential=True)
    if run.audit is not None and (run.kind in ("rounding", "audit-rounded", "adjustment")
                                  or hasattr(run.audit, "range_lower")):   # a rounded table's
        frames["audit"] = run.audit.to_columns(table=run.table,
                                               only_flagged=audit_flagged_only)
    elif run.audit is not None:
        table = run.published if run.published is not None else run.table
        audit = run.audit.to_columns(table=table)
        audit["status"] = table.status           # a confidential file: the letters U and M
        frames["audit"] = audit if audit_all_cells else audit.rows(run.audit.unpublished)
    if run.comparison is not None:
        frames["comparison"] = run.comparison
    return frames


def write_outputs(run, folder: str | Path, *, report: bool = False,
                  audit_all_cells: bool = False, audit_flagged_only: bool = False
                  ) -> dict[str, Path]:
    """Write a run's outputs into ``folder`` (see the module doc); returns key -> path
    (also put in ``run.outputs``)."""
    frames = _frames(run, audit_all_cells, audit_flagged_only)
    texts = {}
    if report:
        from tabprotect.report import render_html
        texts["report"] = render_html(run)
    summary = run_summary(run)
    texts["summary"] = json.dumps(summary, indent=2)
    if run.kind == "cellkey":
        from tabprotect.cellkey import ptable_text
        texts["ptable"] = ptable_text(run.census.tables[0].ptable)
    final = write_files(folder, frames, texts,
                        lambda staged: audit_trail(run, staged, summary), inputs=run.inputs)
    run.outputs.update(final)
    return final


def write_files(folder: str | Path, frames: dict[str, Any], texts: dict[str, str],
                trail, *, inputs=()) -> dict[str, Path]:
    """Write ``frames`` and ``texts`` (keys of :data:`OUTPUT_FILES`) into a temporary
    folder, clear ``folder`` of a previous run's outputs, rename the new files into place
    and write the trail -- ``trail(staged_paths)`` -- last."""
    folder = Path(folder)
    _check_not_inputs(inputs, folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tabprotect-", dir=folder))
    except OSError as exc:      # a file of that name, a read-only or full disk
        raise InputError(f"{folder}: cannot write the output folder there "
                         f"({exc.strerror or type(exc).__name__}); choose another (-o)") from None
    try:
        staged: dict[str, Path] = {}
        for key, frame in frames.items():
            staged[key] = write_frame(frame, tmp / OUTPUT_FILES[key][0])
        for key, text in texts.items():
            staged[key] = tmp / OUTPUT_FILES[key][0]
            staged[key].write_text(text, encoding="utf-8")
        record = trail(staged)
        _clear(folder)
        final = {key: folder / path.name for key, path in staged.items()}
        for key, path in staged.items():
            os.replace(path, final[key])
        trail_path = folder / OUTPUT_FILES["trail"][0]
        tmp_trail = tmp / trail_path.name
        tmp_trail.write_text(json.dumps(record, indent=2), encoding="utf-8")
        os.replace(tmp_trail, trail_path)
        final["trail"] = trail_path
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _check_not_inputs(inputs, folder: Path) -> None:
    """An output may never replace an input of the run."""
    names = {name for name, _ in OUTPUT_FILES.values()} | set(_OLD_NAMES)
    for path in map(Path, inputs):
        if path.name in names and path.resolve().parent == folder.resolve():
            raise InputError(f"{path.name}: the output folder holds this input file, which "
                             f"an output would replace; choose another output folder (-o)")


def _clear(folder: Path) -> None:
    """Remove a previous run's outputs, the trail (the completion mark) first."""
    names = [OUTPUT_FILES["trail"][0]] + [name for name, _ in OUTPUT_FILES.values()] \
        + list(_OLD_NAMES)
    for name in names:
        path = folder / name
        if path.is_file() or path.is_symlink():
            path.unlink()

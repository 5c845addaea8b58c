"""``tabprotect risk JOB.toml`` and ``tabprotect perturb JOB.toml``: microdata disclosure
risk and perturbation (PRAM, invariant PRAM, swapping).  Job format: docs/microdata.md."""
from __future__ import annotations

import argparse
import json
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

RISK_EXAMPLES = """  tabprotect risk job.toml                   per-record risk -> <output.dir>/risk.csv
  tabprotect risk job.toml -o results        another output folder
"""
PERTURB_EXAMPLES = """  tabprotect perturb job.toml                perturbed file -> <output.dir>/perturbed.csv
  tabprotect perturb job.toml --seed 7       override [perturb] seed
"""


#: the risk's counts of the confidential microdata: the records that are sample uniques,
#: that violate k-anonymity, that lie above the risk threshold; with them an intruder
#: knows how many records his key values can single out, so summary.json and the trail
#: withhold them unless the job's ``[risk] publish_counts`` releases them (the terminal
#: shows them)
RISK_COUNTS = frozenset({"n_sample_uniques", "k_anonymity_violations", "n_above_threshold"})
WITHHELD_RISK = ("withheld (confidential: the microdata's counts of records at risk; the "
                 "terminal shows them; publish_counts = true releases them)")


def public_risk(summary: dict, publish_counts: bool = False) -> dict:
    """A risk summary as summary.json and the trail give it: the :data:`RISK_COUNTS`, at
    its top level and in its ``individual`` and ``loglinear`` parts, withheld unless
    ``publish_counts``.

    >>> public_risk({"n_records": 9, "n_sample_uniques": 4})["n_sample_uniques"][:8]
    'withheld'
    """
    if publish_counts:
        return summary
    return {k: WITHHELD_RISK if k in RISK_COUNTS else
            public_risk(v) if isinstance(v, dict) else v for k, v in summary.items()}


def _input_error():
    from tabprotect.errors import InputError
    return InputError


def _load(path: str | Path):
    """The job, checked against the schema (docs/jobs.md)."""
    from tabprotect.io.job import load_job
    return load_job(path)


def _read(path: Path) -> pd.DataFrame:
    import pandas as pd
    InputError = _input_error()
    if not path.exists():
        raise InputError(f"{path}: microdata file not found")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(path)
        frame = pd.read_csv(path)
    except ImportError:
        raise InputError(f"{path.name}: reading Parquet needs pyarrow: pip install "
                         f"'tabprotect[files]'") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"{path.name}: cannot read ({exc})") from None
    return frame


def _write(job, args, frames: dict, summary: dict) -> dict:
    """Write the outputs (names of docs/jobs.md) into the output folder, trail last; a
    swap's counts, and its risk after (computed from its matrix, which gives the rate),
    withheld from the summary unless ``[perturb] publish_counts``."""
    from tabprotect.io.results import (public_swap, trail_record, without_secrets,
                                       without_true_value_figures, write_files)
    folder = job.output_folder(getattr(args, "output", None))
    public = without_true_value_figures(without_secrets(_jsonable(summary)))
    if public.get("method") == "swap":
        public = public_swap(public, job.section("perturb").get("publish_counts", False))
    text = json.dumps(public, indent=2, default=str)
    return write_files(folder, frames, {"summary": text},
                       lambda staged: trail_record(job.label, job.input_files(), job.spec,
                                                   staged, public),
                       inputs=job.input_files())


@contextmanager
def _row_errors(job, md: dict):
    """A method's ValueError as one InputError line: a bad row named by the microdata
    file's line (the frame is the file as read, row for row)."""
    from tabprotect.microdata import RowError
    InputError = _input_error()
    try:
        yield
    except InputError:
        raise
    except RowError as exc:
        raise InputError(f"{job.label}: {exc.in_file(Path(md['file']).name)}") from None
    except ValueError as exc:
        raise InputError(f"{job.label}: {exc}") from None


def _microdata(job):
    InputError = _input_error()
    md = job.section("microdata")
    if "file" not in md:
        raise InputError(f"{job.label}: [microdata] needs 'file'")
    data = _read(job.resolve(md["file"]))
    keys = md.get("keys")
    if not isinstance(keys, list) or not keys:
        raise InputError(f"{job.label}: [microdata] needs 'keys', a list of column names")
    for col in keys + [c for c in (md.get("weight"), md.get("household")) if c]:
        if col not in data.columns:
            from tabprotect.errors import column_names
            raise InputError(f"{job.label}: column {col!r} not in {md['file']} "
                             f"({column_names(data.columns)})")
    return md, data, keys


def _sampling_fraction(md: dict, data: pd.DataFrame):
    import pandas as pd
    pi = md.get("sampling_fraction")
    if pi is None and md.get("weight"):
        w = pd.to_numeric(data[md["weight"]], errors="coerce")
        pi = float(len(data) / w.sum())
    return pi


def _jsonable(d):
    import numpy as np
    if isinstance(d, dict):
        return {str(k): _jsonable(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [_jsonable(v) for v in d]
    if isinstance(d, (np.floating, np.integer)):
        return d.item()
    return d


def _risk_frame(data, md, keys, opts):
    import numpy as np
    import pandas as pd
    from tabprotect.microdata import individual_risk, key_frequencies, loglinear_risk
    summary: dict = {"n_records": len(data), "keys": keys}
    freq = key_frequencies(data, keys, weights=md.get("weight"),
                           missing_matches=bool(opts.get("missing_matches", False)))
    k = int(opts.get("k", 3))
    summary.update({"n_combinations": len(freq.combinations), "n_sample_uniques": freq.n_sample_uniques,
                    "k": k, "k_anonymity_violations": freq.k_anonymity_violations(k)})
    rec = pd.DataFrame({"row": np.arange(len(data)), "fk": freq.fk, "Fk": freq.Fk})
    if opts.get("individual", True):
        ir = individual_risk(freq, method=opts.get("method", "approx"),
                             household=None if not md.get("household") else data[md["household"]].to_numpy())
        rec["risk"] = ir.risk
        if ir.household is not None:
            rec["household_risk"] = ir.household
        s = ir.summary()
        thr = float(opts.get("threshold", 0.1))
        s["threshold"], s["n_above_threshold"] = thr, ir.n_above(thr)
        summary["individual"] = s
    if opts.get("loglinear", False):
        pi = _sampling_fraction(md, data)
        if pi is None:
            raise _input_error()("log-linear risk needs [microdata] sampling_fraction (or a weight)")
        ll = loglinear_risk(data, keys, pi, model=opts.get("model", "main"), pi_key=md.get("pi_key"),
                            diagnostics=None)
        rec["pr_population_unique"] = ll.pr_unique
        rec["expected_inverse"] = ll.e_inv
        summary["loglinear"] = ll.summary()
    return rec, summary


def add_risk_arguments(p: argparse.ArgumentParser) -> None:
    from tabprotect.commands.common import add_job_arguments
    add_job_arguments(p, "TOML job file with [microdata] and [risk]")


def run_risk(args) -> int:
    InputError = _input_error()
    job = _load(args.job)
    md, data, keys = _microdata(job)
    with _row_errors(job, md):
        rec, summary = _risk_frame(data, md, keys, job.section("risk"))
    files = _write(job, args, {"risk": rec}, public_risk(
        summary, job.section("risk").get("publish_counts", False)))
    print(f"records: {summary['n_records']}   combinations: {summary['n_combinations']}   "
          f"sample uniques: {summary['n_sample_uniques']}   "
          f"k={summary['k']} violations: {summary['k_anonymity_violations']}")
    if "individual" in summary:
        s = summary["individual"]
        print(f"individual risk ({s['method']}): expected re-identifications "
              f"{s['expected_reidentifications']:.3f}   global risk {s['global_risk']:.5f}   "
              f"records above {s['threshold']}: {s['n_above_threshold']}")
    if "loglinear" in summary:
        s = summary["loglinear"]
        print(f"log-linear risk ({s['method']}): tau1 {s['tau1']:.3f}   tau2 {s['tau2']:.3f}")
    print(f"per-record risk written to {files['risk']}; summary {files['summary']}")
    return 0


def _matrices(label: str, matrix: dict, variables: list) -> dict:
    """``[perturb] matrix`` (``{variable = {true = {released = probability}}}``) as one
    frame per variable, rows the true categories and columns the released ones in the
    same order; a matrix of another shape, a released category that is no true one, an
    entry missing or not a number is one :class:`InputError` line naming it."""
    import pandas as pd
    InputError = _input_error()
    out = {}
    for var, rows in matrix.items():
        where = f"{label} [perturb] matrix.{var}"
        if var not in variables:
            raise InputError(f"{where}: '{var}' is not one of [perturb] variables")
        if not isinstance(rows, dict) or not rows \
                or not all(isinstance(r, dict) for r in rows.values()):
            raise InputError(f"{where}: give {{true = {{released = probability}}}} tables")
        cats = list(rows)
        for true, row in rows.items():
            strange = [c for c in row if c not in rows]
            if strange:
                raise InputError(f"{where}.{true}: released category '{strange[0]}' is not "
                                 f"a true category of the matrix")
            missing = [c for c in cats if c not in row]
            if missing:
                raise InputError(f"{where}.{true}: no probability for '{missing[0]}' (give "
                                 f"every entry, 0 included)")
            bad = [c for c, p in row.items()
                   if isinstance(p, bool) or not isinstance(p, (int, float))]
            if bad:
                raise InputError(f"{where}.{true}.{bad[0]}: not a number")
        out[var] = pd.DataFrame([[float(rows[t][r]) for r in cats] for t in cats],
                                index=cats, columns=cats)
    return out


def _perturb(data, md, keys, opts, seed, label: str = "job"):
    import pandas as pd
    from tabprotect.microdata import individual_risk, invariant_pram, misclassification_risk, pram, swap
    InputError = _input_error()
    method = opts.get("method")
    if method in ("pram", "invariant_pram"):
        variables = opts.get("variables")
        if not variables:
            raise InputError("[perturb] needs 'variables' for PRAM")
        P = _matrices(label, opts["matrix"], variables) if "matrix" in opts else None
        kw = dict(P=P, d=opts.get("d", 0.8), unperturbed=opts.get("unperturbed", ()),
                  spread=opts.get("spread", "equal"), strata=opts.get("strata"), seed=seed)
        res = (pram(data, variables, **kw) if method == "pram"
               else invariant_pram(data, variables, a=float(opts.get("a", 1.0)), **kw))
        rows = []
        for (var, s), m in res.matrices.items():
            for t in m.index:
                for r in m.columns:
                    rows.append({"variable": var, "stratum": s, "true": t, "released": r,
                                 "probability": float(m.loc[t, r])})
        mats = pd.DataFrame(rows)
        info = {"method": method, "seed": seed, "n_changed": res.n_changed}
        M = res if res.strata is None else None
    elif method == "swap":
        var = opts.get("variable") or (opts.get("variables") or [None])[0]
        if not var:
            raise InputError("[perturb] needs 'variable' for swapping")
        risk = None
        if opts.get("targeted", False):
            risk = individual_risk(data, keys, weights=md.get("weight")).risk
        res = swap(data, var, control=opts.get("control"), rate=float(opts.get("rate", 0.05)),
                   risk=risk, seed=seed)
        mats = res.P.stack().rename("probability").reset_index()
        mats.insert(0, "variable", var)
        info = {"method": "swap", "seed": seed, "n_swaps": res.n_swaps,
                "n_records_changed": res.n_records_changed, "targeted": res.targeted}
        M = res
    else:
        raise InputError(f"[perturb] method must be 'pram', 'invariant_pram' or 'swap', not {method!r}")
    pi = _sampling_fraction(md, data)
    if pi is not None and M is not None:
        mr = misclassification_risk(res.data, keys, M, pi, original=data, pi_key=md.get("pi_key"))
        info["risk"] = mr.summary()
    return res.data, mats, info


def add_perturb_arguments(p: argparse.ArgumentParser) -> None:
    from tabprotect.commands.common import add_job_arguments
    add_job_arguments(p, "TOML job file with [microdata] and [perturb]")
    p.add_argument("--seed", type=int, default=None, help="random seed (overrides [perturb] seed)")


def run_perturb(args) -> int:
    InputError = _input_error()
    job = _load(args.job)
    opts = job.section("perturb")
    if not opts:
        raise InputError(f"{job.label}: no [perturb] section")
    seed = args.seed if getattr(args, "seed", None) is not None else opts.get("seed")
    if seed is None:
        # drawn and printed, as random rounding's: the user can repeat the run with it
        import numpy as np
        seed = int(np.random.SeedSequence().entropy % (2**63))
    md, data, keys = _microdata(job)
    with _row_errors(job, md):
        pert, mats, info = _perturb(data, md, keys, opts, seed, job.label)
    files = _write(job, args, {"perturbed": pert, "matrices": mats}, info)
    print(f"{info['method']}: seed {seed}; "
          + (f"{info['n_swaps']} swaps" if "n_swaps" in info else f"records changed {info['n_changed']}"))
    if "risk" in info:
        r = info["risk"]
        print(f"risk (tau2) before {r['tau2_original']:.3f}   after, ignoring misclassification "
              f"{r['tau2_naive']:.3f}   after, with misclassification {r['tau2_misclassified']:.3f}")
    print(f"perturbed data written to {files['perturbed']}; matrices (rows = true) "
          f"{files['matrices']}; summary {files['summary']}")
    return 0


COMMANDS = {
    "risk": (add_risk_arguments, run_risk,
             "microdata disclosure risk: key frequencies, individual and log-linear risk", RISK_EXAMPLES),
    "perturb": (add_perturb_arguments, run_perturb,
                "perturb microdata (PRAM, invariant PRAM, swapping) and report the risk after",
                PERTURB_EXAMPLES),
}

"""HTML report and JSON audit trail: opened, parsed and checked."""
import base64
import json
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from tabprotect.audit import audit
from tabprotect.cli import main
from tabprotect.errors import InputError
from tabprotect.infoloss import info_loss
from tabprotect.model import Hierarchy, Table
from tabprotect.io.results import sha256_file, write_outputs
from tabprotect.pipeline import Run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class ReportParser(HTMLParser):
    """Collects the tables (id -> rows of cell texts) and images of a report."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[str] = []
        self.headings: list[str] = []
        self._table = None
        self._row = None
        self._cell = None
        self._heading = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = attrs.get("id", f"table{len(self.tables)}")
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "img":
            self.images.append(attrs["src"])
        elif tag in ("h1", "h2"):
            self._heading = []

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag in ("h1", "h2") and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._heading is not None:
            self._heading.append(data)


def parse(path) -> ReportParser:
    p = ReportParser()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def suppressed_table() -> Table:
    """ORACLES A1 with distinctive (confidential) values in the suppressed block."""
    rows = Hierarchy.flat(["1", "2", "3"], total="T")
    cols = Hierarchy.flat(["1", "2"], total="T")
    x11, x12, x21, x22 = 4111.25, 3222.5, 2333.75, 1444.125
    r1, r2, r3 = x11 + x12, x21 + x22, 3000.0 + 3000.0
    value = [r1 + r2 + r3, x11 + x21 + 3000, x12 + x22 + 3000, r1, x11, x12, r2, x21, x22,
             r3, 3000, 3000]
    t = Table.from_arrays({"r": rows, "c": cols}, value, [20, 11, 9, 9, 5, 4, 4, 3, 1, 7, 3, 4])
    st = t.status.copy()
    st[[t.cell("1", "1"), t.cell("2", "2")]] = "U"
    st[[t.cell("1", "2"), t.cell("2", "1")]] = "M"
    upl = np.where(st == "U", 0.1 * t.value, 0.0)
    return t.replace(status=st, upl=upl, lpl=upl)


def test_report_contains_tables_and_images(tmp_path):
    t = suppressed_table()
    res = audit(t)
    inp = tmp_path / "cells.csv"
    t.to_frame().to_csv(inp, index=False)
    run = Run(t, published=t, audit=res, inputs=[inp])
    with pytest.raises(InputError, match="output folder holds this input file"):
        write_outputs(run, tmp_path)         # cells.csv would replace the input
    inp = inp.rename(tmp_path / "input.csv")
    run = Run(t, title="A1 block", published=t, audit=res, inputs=[inp],
              info=info_loss(t, t), parameters={"protect": {"method": "manual"}},
              timings={"audit": 0.01})
    files = write_outputs(run, tmp_path, report=True)
    html_path, json_path = files["report"], files["trail"]
    rep = parse(html_path)
    for section in ("Summary", "Published table", "Audit", "Information loss", "Plots"):
        assert section in rep.headings
    # summary says the audit passed
    summary = {r[0]: r[1] for r in rep.tables["summary"]}
    assert summary["verdict"] == "PASSED"
    # published table: a cross table whose suppressed cells show no value
    pub = rep.tables["published"]
    assert pub[0] == ["r \\ c", "T", "1", "2"]
    row1 = next(r for r in pub if r[0].strip() == "1")
    assert row1[2] == "\u00d7" and row1[3] == "\u00d7" and row1[1] == "7,333.75"
    # audit table: one row per suppressed cell, with the LP intervals
    audit_rows = rep.tables["audit"]
    header = audit_rows[0]
    assert len(audit_rows) - 1 == 4
    lower = header.index("lower")
    cell11 = next(r for r in audit_rows[1:] if r[0] == "1" and r[1] == "1")
    # at the table's precision (values with up to three decimals), no float noise
    assert float(cell11[lower].replace(",", "")) == pytest.approx(res.lower[t.cell("1", "1")])
    assert len(cell11[lower].partition(".")[2]) <= 3
    # information loss: the number of suppressed cells
    loss = {r[0]: r[1] for r in rep.tables["infoloss"][1:]}
    assert loss["suppressed"] == "4"
    assert rep.tables["infoloss-levels"]
    # images: embedded PNGs (loss by level, protection per primary, interval widths)
    assert len(rep.images) == 3
    for src in rep.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG_MAGIC
    # the JSON trail: checksums, versions, parameters, results
    trail = json.loads(json_path.read_text())
    assert trail["inputs"][0] == {"file": inp.name, "confidential": True}
    assert {"tabprotect", "numpy", "highspy"} <= set(trail["versions"])
    assert trail["parameters"]["protect"]["method"] == "manual"
    assert trail["summary"]["verdict"] == "PASSED"
    assert trail["summary"]["status_counts"]["X"] == len(audit_rows) - 1
    assert trail["outputs"]["published"]["sha256"] == sha256_file(files["published"])
    # ... and no confidential cell value
    text = json_path.read_text()
    for v in ("4111.25", "3222.5", "2333.75", "1444.125"):
        assert v not in text


def test_failed_audit_is_flagged(tmp_path):
    t = suppressed_table()
    st = t.status.copy()
    st[t.cell("1", "2")] = "S"   # publish a secondary: X11 = row total - X12 is disclosed
    t2 = t.replace(status=st)
    run = Run(t2, published=t2, audit=audit(t2), info=info_loss(t, t2))
    files = write_outputs(run, tmp_path / "bad", report=True)
    html_path, json_path = files["report"], files["trail"]
    rep = parse(html_path)
    assert {r[0]: r[1] for r in rep.tables["summary"]}["verdict"] == "FAILED"
    assert "Published table" not in rep.headings       # a failed run publishes nothing
    prot = rep.tables["audit"][0].index("protected")
    assert rep.tables["audit"][1][prot] == "no"   # unprotected cells listed first
    assert json.loads(json_path.read_text())["summary"]["verdict"] == "FAILED"
    assert "published" not in files and files["unsafe"].name == "UNSAFE-not-for-publication.csv"


def test_rounding_and_ru_map_report(tmp_path):
    rows = Hierarchy.flat(["A", "B", "C"], total="Total")
    cols = Hierarchy.flat(["M", "F"], total="Total")
    t = Table.from_arrays({"row": rows, "sex": cols},
                          [39, 16, 23, 1, 1, 0, 6, 3, 3, 32, 12, 20], kind="frequency")
    # a zero-restricted controlled rounding to base 5 (ORACLES A4)
    rounded = np.array([40, 15, 25, 0, 0, 0, 5, 0, 5, 35, 15, 20], dtype=float)
    ru = pd.DataFrame({"label": ["original", "pram d=0.8"], "method": ["original", "pram"],
                       "hellinger": [0.0, 1.5], "tau2_misclassified": [12.0, 4.0]})
    run = Run(t, kind="rounding", rounded=rounded, ru_map=ru,
              info=info_loss(t, rounded))
    html_path = write_outputs(run, tmp_path, report=True)["report"]
    rep = parse(html_path)
    pub = rep.tables["published"]
    # published values are the rounded ones
    assert pub[1][1:] == [f"{v:,.0f}" for v in rounded[:3]]
    loss = {r[0]: r[1] for r in rep.tables["infoloss"][1:]}
    assert "hellinger" in loss and "rcv" in loss
    assert "ru-map" in rep.tables
    assert len(rep.images) == 2   # loss by level + R-U map (no audit)


def test_report_command_on_bundled_job(tmp_path, capsys):
    from importlib import resources
    job = resources.files("tabprotect") / "data" / "demo_audit" / "job.toml"
    code = main(["report", str(job), "--output", str(tmp_path), "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "audit: PASSED" in out
    rep = parse(tmp_path / "report.html")
    assert {"summary", "published", "audit", "infoloss"} <= set(rep.tables)
    audit_csv = pd.read_csv(tmp_path / "audit.csv")
    published = pd.read_csv(tmp_path / "published.csv")
    # suppressed values are blank in the published file
    hidden = published["status"] == "X"
    assert hidden.any() and published.loc[hidden, "value"].isna().all()
    assert published.loc[~hidden, "value"].notna().all()
    assert audit_csv["protected"].all()


def test_report_command_needs_something_to_report(tmp_path, capsys):
    cells = tmp_path / "cells.csv"
    cells.write_text("r,value\na,1\nb,2\n")
    job = tmp_path / "job.toml"
    job.write_text('[input]\ncells = "cells.csv"\ndimensions = ["r"]\ncompute_totals = true\n')
    assert main(["report", str(job), "--quiet"]) == 2
    assert "nothing to audit" in capsys.readouterr().err


def test_plots_leave_matplotlib_unloaded_the_backend_and_pyplot_alone():
    # importing the package loads neither matplotlib (the first plot does) nor pytest (not
    # a runtime dependency); the report draws on its own Agg canvas, so a session's
    # backend choice and its open pyplot figures are untouched
    code = (
        "import sys, tabprotect, tabprotect.report, tabprotect.microdata, tabprotect.cli\n"
        "print('matplotlib' in sys.modules, 'pytest' in sys.modules)\n"
        "import matplotlib; matplotlib.use('svg'); import matplotlib.pyplot as plt\n"
        "import pandas as pd\n"
        "from tabprotect.report_plots import plot_loss_by_method\n"
        "png = plot_loss_by_method(pd.DataFrame({'label': ['a', 'b'],"
        " 'suppressed': [3, 4]}))\n"
        "import base64; assert base64.b64decode(png)[:4] == b'\\x89PNG'\n"
        "print(matplotlib.get_backend(), len(plt.get_fignums()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False", "svg", "0"]


# ---------------------------------------------------------------- what a reader sees
def _png_pixels(src: str) -> np.ndarray:
    """The RGB pixels of an embedded PNG (decoded by matplotlib's PNG reader)."""
    from io import BytesIO

    from matplotlib.image import imread
    data = base64.b64decode(src.split(",", 1)[1])
    assert data[:8] == PNG_MAGIC
    return imread(BytesIO(data), format="png")[..., :3]


def _gauss_run():
    from tabprotect.model import synthetic
    from tabprotect.secondary import protect
    t = synthetic.preset("2d-small", seed=1)
    res = protect(t, method="gauss", singleton=False)
    pattern = res.confidential_table
    return t, Run(t, title="2d-small", kind="suppression", method="gauss",
                  attacker="outside intruder", published=pattern, audit=res.audit,
                  info=info_loss(t, pattern), results=res.summary(), timings={"protect": 1.0})


def test_report_reads_at_a_glance(tmp_path):
    """Verdict banner with the attacker model and what the audit proves; an exactness
    column; no duplicated summary rows; percentages; plots that are not empty; a layout
    that cannot overflow the page (every table scrolls inside its own box)."""
    t, run = _gauss_run()
    text = write_outputs(run, tmp_path, report=True)["report"].read_text(encoding="utf-8")
    rep = parse(tmp_path / "report.html")
    # the banner
    assert '<div id="verdict" class="verdict pass">' in text
    assert "outside intruder" in text and "Exact intervals" in text
    # summary: one row per label, fractions as percentages
    labels = [r[0] for r in rep.tables["summary"]]
    assert len(labels) == len(set(labels))
    summary = {r[0]: r[1] for r in rep.tables["summary"]}
    assert summary["verdict"] == "PASSED" and summary["% of value suppressed"].endswith(" %")
    # the audit table says how exact each interval is
    head = rep.tables["audit"][0]
    for col in ("lower", "upper", "interval", "required lower", "width, % of value",
                "protected"):
        assert col in head
    exactness = {r[head.index("interval")] for r in rep.tables["audit"][1:]}
    assert exactness == {"exact"}                     # intervals mode
    assert all(r[head.index("width, % of value")].endswith("%")
               for r in rep.tables["audit"][1:] if r[head.index("width, % of value")])
    # plots: three PNGs of readable size, each with coloured marks (an empty plot has
    # only grey axes and black text)
    assert len(rep.images) == 3
    for src in rep.images:
        px = _png_pixels(src)
        assert px.shape[0] >= 300 and px.shape[1] >= 600
        coloured = (px.max(axis=2) - px.min(axis=2)) > 0.15   # not grey, white or black
        assert coloured.sum() > 200, "a plot without data"
        assert len(np.unique((px * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 16
    # layout: a phone viewport, every table in a scrolling box, nothing wider than the page
    assert "name='viewport'" in text and "img{max-width:100%" in text
    assert text.count("<table") == text.count('<div class="scroll"><table')
    import re
    inline = re.findall(r'style="([^"]*)"', text)
    assert inline and not any("width" in style for style in inline)
    assert "<img width" not in text


def test_verdict_mode_marks_bounds_and_an_incomplete_audit_is_not_proven(tmp_path):
    from dataclasses import replace
    t, run = _gauss_run()
    run.audit = audit(run.published, singleton=False, mode="verdict")
    rep_html = tmp_path / "v"
    files = write_outputs(run, rep_html, report=True)
    rep = parse(files["report"])
    head = rep.tables["audit"][0]
    shown = [r[head.index("interval")] for r in rep.tables["audit"][1:]]
    exact = (run.audit.exact_lower & run.audit.exact_upper)[run.audit.unpublished]
    assert sorted(shown) == sorted("exact" if e else "bound" for e in exact)
    assert "Verdict mode" in files["report"].read_text(encoding="utf-8")
    # an audit stopped by its time limit proves nothing: NOT PROVEN, nothing published
    cut = np.zeros(t.n_cells, bool)
    cut[np.flatnonzero(run.audit.unpublished)[0]] = True
    run.audit = replace(run.audit, incomplete=cut)
    from tabprotect.report import render_html, run_verdict
    assert run_verdict(run) == "NOT PROVEN"
    page = render_html(run)
    assert "class=\"verdict unproven\"" in page and '<table id="published"' not in page


def test_failed_comparison_says_failed_and_publishes_nothing(tmp_path):
    t, run = _gauss_run()
    st = run.published.status.copy()
    st[np.flatnonzero(st == "M")] = "S"              # no secondaries: primaries exposed
    bad = run.published.replace(status=st)
    comparison = pd.DataFrame({
        "label": ["gauss, no secondaries", "hypercube, no repair"],
        "method": ["gauss", "hypercube"], "audit_passed": [False, False],
        "secondary": [0.0, 3.0], "share_value": [4.2, 9.9], "seconds": [0.5, 0.7],
        "primary_unprotected": [5.0, 2.0], "exactly_disclosed": [3.0, 1.0],
        "error": [None, "x" * 500]})
    failed = Run(t, title="compare", kind="compare", method="gauss, no secondaries",
                 published=bad, audit=audit(bad, singleton=False), comparison=comparison,
                 attacker="outside intruder", notes=["no method passed the audit"])
    files = write_outputs(failed, tmp_path, report=True)
    rep = parse(files["report"])
    page = files["report"].read_text(encoding="utf-8")
    assert '<div id="verdict" class="verdict fail">' in page
    assert "No method passed the audit" in page
    assert "Published table" not in rep.headings and "published" not in rep.tables
    # compact comparison rows: one per method, the verdict in words, long text cut
    rows = rep.tables["comparison"]
    assert len(rows) == 3 and rows[1][rows[0].index("audit")] == "FAILED"
    assert max(len(c) for r in rows for c in r) <= 120
    assert "published" not in files


@pytest.mark.parametrize("x, text", [(2e-15, "2e-15"), (1.5e20, "1.5e+20"),
                                     (-3.5e-7, "-3.5e-07"), (1234.5, "1,234.5")])
def test_report_numbers_in_exponent_form_are_shown_as_such(x, text):
    from tabprotect.report import _fmt
    assert _fmt(x) == text

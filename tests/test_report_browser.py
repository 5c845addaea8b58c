"""The report in a real browser: headless Chromium renders it at a desktop width and at a
phone width; the page must not overflow sideways (wide tables scroll in their own boxes),
every plot must decode and fit the viewport, and the verdict banner must show.

Needs a Chromium binary (Debian: ``apt-get install chromium``); ``.ci/run`` installs it
before the slow step. Without one the test fails and says so: it is never skipped.
"""
import json
import re
import shutil
import subprocess
from io import BytesIO

import numpy as np
import pytest

from tabprotect.infoloss import info_loss
from tabprotect.io.results import write_outputs
from tabprotect.model import synthetic
from tabprotect.pipeline import Run
from tabprotect.secondary import protect

pytestmark = pytest.mark.slow

# Appended to a copy of the report: after load, write the page's width, the viewport's and
# each image's decoded width and right edge into the DOM, which --dump-dom then prints.
LAYOUT_PROBE = """<script>window.addEventListener('load', function () {
  var d = document.documentElement;
  var out = {scrollWidth: d.scrollWidth, innerWidth: window.innerWidth,
             images: [].slice.call(document.images).map(function (i) {
               return [i.naturalWidth, i.getBoundingClientRect().right]; })};
  var p = document.createElement('pre'); p.id = 'layout-probe';
  p.textContent = JSON.stringify(out); document.body.appendChild(p);
});</script>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no Chromium binary on PATH: install it (Debian: apt-get install chromium)")


def _browser(*args: str) -> str:
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    t = synthetic.preset("2d-small", seed=1)
    res = protect(t, method="gauss", singleton=False)
    pattern = res.confidential_table
    run = Run(t, title="2d-small", kind="suppression", method="gauss",
              attacker="outside intruder", published=pattern, audit=res.audit,
              info=info_loss(t, pattern), results=res.summary(), timings={"protect": 1.0})
    return write_outputs(run, folder, report=True)["report"]


@pytest.mark.parametrize("width", [1400, 390])
def test_layout_fits_the_viewport(report, width):
    probe = report.with_name(f"probe-{width}.html")
    text = report.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    dom = _browser(f"--window-size={width},900", "--virtual-time-budget=5000",
                   "--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="layout-probe">(.*?)</pre>', dom)
    assert found, "the page did not finish loading"
    layout = json.loads(found.group(1).replace("&quot;", '"'))
    assert layout["scrollWidth"] <= layout["innerWidth"], layout
    assert len(layout["images"]) == 3
    for natural, right in layout["images"]:
        assert natural > 0, "a plot that does not decode"
        assert right <= layout["innerWidth"] + 1, layout


def test_screenshot_shows_the_verdict_banner(report):
    from matplotlib.image import imread
    shot = report.with_name("shot.png")
    _browser("--window-size=1400,1200", f"--screenshot={shot}", report.as_uri())
    px = imread(BytesIO(shot.read_bytes()), format="png")[..., :3]
    assert px.shape[:2] == (1200, 1400)
    assert px.std() > 0.05, "a blank page"
    top = px[:400]
    green = (top[..., 1] > top[..., 0] + 0.05) & (top[..., 1] > top[..., 2] + 0.02)
    assert green.sum() > 5000, "no PASSED banner near the top of the page"

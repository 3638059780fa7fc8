"""The classroom site (scripts/site.sh): EWIF's page formulas against the library, the pages' sources, and
(full tier) the whole site built and opened in headless Chromium with the network off."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from csd_lib.price.ewif import ewif_sd, ewif_vc, expected_tokens_sd, phi

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import browser_check  # noqa: E402
import site_pages  # noqa: E402
import slides  # noqa: E402

POINTS = [(0.8, 4, 0.05), (0.3, 1, 0.5), (0.95, 20, 0.001), (1.0, 5, 0.1), (0.6, 12, 1.0)]
VC_POINTS = [(0.8, 0.5, 10, 3, 0.05, 0.0), (0.9, 0.7, 4, 1, 0.2, 0.01), (1.0, 0.6, 10, 2, 0.05, 0.0),
             (0.5, 0.98, 10, 20, 0.001, 0.0), (0.7, 0.0, 3, 5, 0.3, 0.1)]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_page_ewif_formulas_equal_the_library():
    """site/static/ewif.js, run by node, gives csd_lib.price.ewif's numbers (the explorer's EWIF curves)."""
    script = ("const e = require(process.argv[1]); const a = JSON.parse(process.argv[2]);"
              "console.log(JSON.stringify({sd: a.sd.map(p => e.ewifSd(...p)), vc: a.vc.map(p => e.ewifVc(...p)),"
              " tok: a.sd.map(p => e.expectedTokensSd(p[0], p[1])), phi: a.sd.map(p => e.phi(p[0], p[1], p[2]))}))")
    out = subprocess.run(["node", "-e", script, str(ROOT / "site" / "static" / "ewif.js"),
                          json.dumps({"sd": POINTS, "vc": VC_POINTS})], capture_output=True, text=True, check=True)
    js = json.loads(out.stdout)
    assert js["sd"] == pytest.approx([ewif_sd(*p) for p in POINTS], rel=1e-12)
    assert js["vc"] == pytest.approx([ewif_vc(*p) for p in VC_POINTS], rel=1e-12)
    assert js["tok"] == pytest.approx([expected_tokens_sd(a, k) for a, k, _ in POINTS], rel=1e-12)
    assert js["phi"] == pytest.approx([phi(a, k, x) for a, k, x in POINTS], rel=1e-12)


def test_every_notebook_states_what_it_teaches():
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        meta = site_pages.notebook_meta(nb, float("nan"))
        assert len(meta["goals"]) >= 2, f"{nb.name}: no 'What you will learn' bullets found"
        assert meta["read_min"] >= 1 and not meta["title"][:2].isdigit()


def test_learning_goals_join_wrapped_bullets():
    cell = "# T\n\n**What you will learn**\n\n* one\n  wrapped;\n* two\n\nWords after.\n* not a goal"
    assert site_pages.learning_goals(cell) == ["one wrapped;", "two"]
    assert site_pages.learning_goals("# T\nno goals") == []


def test_slides_follow_the_instructor_guide():
    text = (ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8")
    rows = slides.class_rows(text)
    assert rows[0]["minutes"].startswith("0-") and rows[-1]["minutes"].endswith("-50")
    shows = slides.should_show(text)
    assert set(shows) >= {f"{i:02d}" for i in range(9)}
    with pytest.raises(ValueError):
        slides.section(text, "No such section")


def test_launch_links_point_at_the_repository():
    links = site_pages.launch_links("notebooks/00_start_here.ipynb")
    assert set(links) == {"Open in Colab", "Launch Binder", "Source"}
    assert all("notebooks/00_start_here.ipynb" in u for u in links.values())
    assert links["Launch Binder"].startswith("https://mybinder.org/v2/gh/")


def test_links_between_notebooks_point_at_their_pages():
    """A notebook's link to another (the appendix) opens that notebook's page, its anchor kept; one left out of
    a partial build opens its source."""
    body = '<a href="09_appendix_x.ipynb#part">a</a> <a href="01_a.ipynb">b</a> <a href="https://x/02_b.ipynb">c</a>'
    out = site_pages.notebook_links(body, {"09_appendix_x.ipynb": "09_appendix_x.html"})
    assert '<a href="09_appendix_x.html#part">a</a>' in out
    assert f'<a href="{site_pages.launch_links("notebooks/01_a.ipynb")["Source"]}">b</a>' in out
    assert '<a href="https://x/02_b.ipynb">c</a>' in out


def test_browser_check_renders_executed_notebooks_and_refuses_a_stale_copy(tmp_path):
    """browser_check --executed: a notebook the site build executed is rendered without running it, its plotly
    output drawn by plotly.js inlined in the page; a copy whose code differs, or none, is a CheckFailed."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output
    fig = {"data": [{"type": "bar", "y": [1, 2]}], "layout": {"title": {"text": "two bars"}}}
    ran = new_notebook(cells=[new_code_cell("fig.show()", outputs=[
        new_output("display_data", data={"application/vnd.plotly.v1+json": fig, "text/plain": "Figure"})])])
    source, executed = tmp_path / "src" / "01_x.ipynb", tmp_path / "executed" / "01_x.ipynb"
    for path, nb in ((source, new_notebook(cells=[new_code_cell("fig.show()")])), (executed, ran)):
        path.parent.mkdir()
        nbformat.write(nb, str(path))
    text = browser_check.render_executed(source, executed.parent, tmp_path / "out").read_text(encoding="utf-8")
    assert re.search(r"plotly\.js v\d", text) and "Plotly.newPlot" in text and "two bars" in text
    ran.cells[0].source = "fig.show()  # edited after the build"
    nbformat.write(ran, str(executed))
    with pytest.raises(browser_check.CheckFailed, match="its code differs"):
        browser_check.render_executed(source, executed.parent, tmp_path / "out")
    figureless = new_notebook(cells=[new_code_cell("print(1)", outputs=[new_output("stream", text="1\n")])])
    for path in (source, executed):
        nbformat.write(figureless, str(path))
    text = browser_check.render_executed(source, executed.parent, tmp_path / "out").read_text(encoding="utf-8")
    assert "Plotly.newPlot" not in text and "plotly.js v" not in text  # step 4 reads it as a page without figures
    with pytest.raises(browser_check.CheckFailed, match="holds no 01_x.ipynb"):
        browser_check.render_executed(source, tmp_path / "src" / "none", tmp_path / "out")


BUILT_SITE = "CSD_BUILT_SITE"  # scripts/test.sh --full builds the site once, names it here, and checks it below


def test_the_full_tier_builds_the_site_once_for_both_checks():
    """scripts/test.sh --full: one site build keeps its executed notebooks; the site test reads the site from
    CSD_BUILT_SITE and the browser check's figures read the executed notebooks (no second execution)."""
    text = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert text.count("python scripts/site.py") == 1 and '--keep "$BUILT/executed"' in text
    assert f'export {BUILT_SITE}="$BUILT/site"' in text
    assert 'browser_check.py --executed "$BUILT/executed"' in text


@pytest.mark.slow
def test_site_builds_and_every_page_works_offline(tmp_path):
    """Full tier: `bash scripts/site.sh OUT` (every notebook executed once, the explorer's whole grid), then every
    page in headless Chromium with the network off (scripts/site_check.py), and one recorded explorer run
    against a fresh engine run. Where CSD_BUILT_SITE names a site that scripts/test.sh --full built (its notebooks
    also serve the browser check), that site is checked instead of building another. It prints its time (the
    full tier's --durations lists it too): 963 s on 2026-12-07 on the 2-core machine under a load average of
    10-15 (the build 842 s of it)."""
    import time

    from csd_lib import generate, load_family
    from csd_lib.families.tasks import load_task
    from csd_lib.teach.explorer_data import Grid, setting_key
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("no chromium (CI installs it; apt-get install chromium)")
    out, t0 = tmp_path / "site", time.time()
    if os.environ.get(BUILT_SITE):
        out = Path(os.environ[BUILT_SITE])
        assert (out / "site.json").is_file(), f"{BUILT_SITE}={out} is not a site built by scripts/site.sh"
        print(f"site built by scripts/test.sh: {out}")
    else:
        subprocess.run(["bash", str(ROOT / "scripts" / "site.sh"), str(out)], check=True, cwd=ROOT)
        print(f"site built in {time.time() - t0:.0f} s")
    summary = json.loads((out / "site.json").read_text())
    assert len(summary["figures"]) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    assert summary["site_bytes"] < 30e6
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "site_check.py"), str(out), "--chromium", chromium],
                           capture_output=True, text=True)
    print(check.stdout[-4000:])
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
    raw = (out / "assets" / "explorer-data.js").read_text()
    data = json.loads(raw[raw.index("{"):raw.rindex("}") + 1])
    fam = load_family("tiny-t5")
    k = Grid().ks(fam.default_k)[-1]
    prompt = load_task(fam.task, "test", n=Grid().n_prompts, seed=data["seed"])[2].prompt
    assert prompt == data["prompts"][2]["prompt"]
    g = generate(fam, prompt, "csd", k=k, lenience=3.0, mag_lenience=True, max_new_tokens=data["max_new_tokens"])
    rec = data["settings"][setting_key("csd", k, 3.0, True)][2]
    names = [lv["name"] for lv in data["levels"]]
    assert [names[int(c)] for c in rec["prov"]] == g.provenance and rec["calls"] == g.stats.calls
    assert rec["swi_model_size"] == pytest.approx(g.stats.swi_model_size, abs=1e-4)
    print(f"site test done in {time.time() - t0:.0f} s")

"""Build the classroom site: every notebook executed and rendered, the explorer, the slides, the guide.

    bash scripts/site.sh OUT                         # what the README says (sets up .venv first)
    python scripts/site.py OUT [--notebooks 00,05] [--reuse DIR] [--grid small] [--jobs 2]

Writes a static site to OUT that makes no request outside itself (open ``OUT/index.html`` from the
file system): ``index.html`` (the path through the workbook), one page per notebook with its outputs
(nbconvert with the ``site/templates/csd`` template: plotly.js, MathJax and the styles are files in
``OUT/assets``, never a CDN), ``explorer.html`` (engine runs recorded by
:mod:`csd_lib.teach.explorer_data`, replayed by ``site/static/explorer.js``), ``slides.html`` (the
instructor guide's 50-minute class as a reveal.js deck with speaker notes), ``instructor.html`` and
``figures.html`` (the README's figures).

The notebooks run on the default family (tiny-t5) in a temporary folder, ``--jobs`` at a time, while this
process records the explorer's engine runs on one thread beside them (``--reuse DIR``: take executed
notebooks from DIR instead, e.g. a folder written by ``--keep DIR``).
reveal.js and MathJax come from npm, installed once into ``.cache/site-npm`` (git-ignored) at the
versions of ``site/package-lock.json``; after that the build needs no network.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import site_pages  # noqa: E402  scripts/site_pages.py: the pages that are not notebooks

SITE = ROOT / "site"
NPM_DIR = ROOT / ".cache" / "site-npm"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_BADGE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\(([^)]*)\)")


def log(msg: str) -> None:
    print(f"[site] {msg}", file=sys.stderr, flush=True)


# -- vendored scripts --------------------------------------------------------------------

def npm_modules() -> Path:
    """node_modules with reveal.js and MathJax at the locked versions (installed once, then offline)."""
    mods = NPM_DIR / "node_modules"
    lock = (SITE / "package-lock.json").read_text(encoding="utf-8")
    if (NPM_DIR / "package-lock.json").is_file() and (NPM_DIR / "package-lock.json").read_text() == lock \
            and (mods / "reveal.js").is_dir() and (mods / "mathjax").is_dir():
        return mods
    if not shutil.which("npm"):
        raise SystemExit(f"site: reveal.js and MathJax are not in {NPM_DIR} and npm is missing; install "
                         f"Node.js (npm) once, online, then the build runs offline")
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(SITE / name, NPM_DIR / name)
    log(f"installing reveal.js and MathJax into {NPM_DIR} (once)")
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=NPM_DIR, check=True)
    return mods


def copy_assets(out: Path) -> None:
    """plotly.js (from the installed plotly), MathJax, reveal.js and the site's own styles and scripts."""
    import plotly
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", assets / "plotly.min.js")
    mods = npm_modules()
    mj = mods / "mathjax" / "es5"
    (assets / "mathjax").mkdir(exist_ok=True)
    shutil.copy(mj / "tex-svg.js", assets / "mathjax" / "tex-svg.js")
    shutil.copytree(mj / "input" / "tex" / "extensions", assets / "mathjax" / "input" / "tex" / "extensions",
                    dirs_exist_ok=True)  # loaded on demand by MathJax's autoload
    rv = mods / "reveal.js"
    (assets / "reveal" / "theme").mkdir(parents=True, exist_ok=True)
    for f in ("reveal.js", "reveal.css", "reset.css", "theme/white.css"):
        shutil.copy(rv / "dist" / f, assets / "reveal" / f)
    shutil.copytree(rv / "dist" / "theme" / "fonts" / "source-sans-pro",
                    assets / "reveal" / "theme" / "fonts" / "source-sans-pro", dirs_exist_ok=True)
    shutil.copy(rv / "plugin" / "notes" / "notes.js", assets / "reveal" / "notes.js")
    for name, src in (("LICENSE-reveal.js.txt", rv / "LICENSE"), ("LICENSE-mathjax.txt", mods / "mathjax" / "LICENSE")):
        shutil.copy(src, assets / name)
    for f in (SITE / "static").iterdir():
        shutil.copy(f, assets / f.name)


# -- executing the notebooks -------------------------------------------------------------

def child_env() -> dict:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               CSD_PLOTLY_RENDERER="plotly_mimetype", PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
    env.pop("CSD_FAMILY", None)  # the site shows the default family
    return env


def execute_one(nb: Path, dest: Path, timeout: int) -> tuple[Path, float]:
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                           f"--ExecutePreprocessor.timeout={timeout}", "--output-dir", str(dest), str(nb)],
                          env=child_env(), cwd=nb.parent, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"site: {nb.name} failed to execute:\n{proc.stderr[-3000:]}")
    took = time.time() - t0
    log(f"executed {nb.name} in {took:.0f} s")
    return dest / nb.name, took


def executed(nbs: list[Path], reuse: Path | None, dest: Path, jobs: int, timeout: int) -> dict[str, tuple[Path, float]]:
    """{notebook name: (executed copy, seconds)}: from ``reuse`` when given, else run ``jobs`` at a time."""
    if reuse is not None:
        missing = [nb.name for nb in nbs if not (reuse / nb.name).is_file()]
        if missing:
            raise SystemExit(f"site: --reuse {reuse} lacks {', '.join(missing)}")
        return {nb.name: (reuse / nb.name, float("nan")) for nb in nbs}
    dest.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(lambda nb: execute_one(nb, dest, timeout), nbs))
    return {nb.name: r for nb, r in zip(nbs, done)}


# -- rendering a notebook ----------------------------------------------------------------

def plotly_html(fig: dict, n: int) -> str:
    """A div and the Plotly.newPlot call that draws ``fig`` (a plotly mime bundle) into it."""
    div = f"csd-fig-{n}"
    spec = json.dumps({"data": fig.get("data", []), "layout": fig.get("layout", {})}).replace("</", "<\\/")
    return (f'<div id="{div}" class="csd-figure"></div><script>(function(){{var f={spec};'
            f'Plotly.newPlot("{div}",f.data,f.layout,{{responsive:true,displaylogo:false}});}})();</script>')


WIDGET_NOTE = ('<div class="csd-widget-note">A live widget stood here: it needs a running kernel. Open the notebook '
               'on Colab or Binder (buttons above), or use the <a href="explorer.html">explorer</a>, which replays '
               'recorded engine runs.</div>')


def site_cells(nb) -> int:
    """Make ``nb`` self-contained: plotly outputs become HTML drawn by the local plotly.js, widget outputs a
    note, the Colab badge a plain link (its image is remote). Returns the number of figures."""
    n_fig = 0
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _BADGE.sub(r"[Open in Colab](\1)", cell.source)
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if PLOTLY_MIME in data:
                n_fig += 1
                out["data"] = {"text/html": plotly_html(data[PLOTLY_MIME], n_fig)}
            elif WIDGET_MIME in data:
                out["data"] = {"text/html": WIDGET_NOTE}
    return n_fig


def render_notebook(path: Path, header: str, footer: str) -> tuple[str, int]:
    """The notebook page's HTML and its figure count."""
    import nbformat
    from nbconvert import HTMLExporter
    nb = nbformat.read(str(path), as_version=4)
    n_fig = site_cells(nb)
    exporter = HTMLExporter(template_name="csd", extra_template_basedirs=[str(SITE / "templates")])
    body, _ = exporter.from_notebook_node(nb, resources={"csd": {"header": header, "footer": footer}})
    return body, n_fig


# -- the whole site ----------------------------------------------------------------------

def build(out: Path, nbs: list[Path], reuse: Path | None, jobs: int, timeout: int, grid: str,
          keep: Path | None = None) -> dict:
    """Write the site to ``out``; a summary (pages, figures per page, sizes, seconds)."""
    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    tmp = Path(tempfile.mkdtemp(prefix="csd-site-"))
    try:
        with ThreadPoolExecutor(max_workers=1) as beside:  # the explorer's runs (one core) beside the notebooks
            explorer = beside.submit(site_pages.record_explorer, grid)
            runs = executed(nbs, reuse, tmp / "executed", jobs, timeout)
            t_exec = time.time() - t0
        explorer_data = explorer.result()
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for path, _ in runs.values():
                shutil.copy(path, keep / path.name)
        metas = [site_pages.notebook_meta(nb, runs[nb.name][1]) for nb in nbs]
        figures = {}
        for meta in metas:
            header, footer = site_pages.chrome(meta["page"], meta, metas)
            page, figures[meta["page"]] = render_notebook(runs[meta["name"]][0], header, footer)
            page = site_pages.notebook_links(page, {m["name"]: m["page"] for m in metas})
            (out / meta["page"]).write_text(page, encoding="utf-8")
            log(f"wrote {meta['page']} (figures: {figures[meta['page']]})")
        data_bytes = site_pages.write_explorer(out, metas, explorer_data)
        site_pages.write_static_pages(out, metas, {m["page"]: runs[m["name"]][0] for m in metas})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    summary = {"pages": sorted(p.name for p in out.glob("*.html")), "figures": figures,
               "explorer_data_bytes": data_bytes, "site_bytes": size,
               "execute_s": round(t_exec, 1), "total_s": round(time.time() - t0, 1)}
    (out / "site.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder to write the site to (created; files in it are replaced)")
    ap.add_argument("--notebooks", default="", help="only these notebooks, by number: e.g. 00,05 (default: all)")
    ap.add_argument("--reuse", type=Path, default=None, help="take executed notebooks from this folder")
    ap.add_argument("--keep", type=Path, default=None, help="also save the executed notebooks here (for --reuse)")
    ap.add_argument("--jobs", type=int, default=2, help="notebooks executed at once (default 2)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per notebook cell")
    ap.add_argument("--grid", choices=("full", "small"), default="full",
                    help="the explorer's grid (small: a few settings, for tests)")
    args = ap.parse_args(argv)
    wanted = {n.strip() for n in args.notebooks.split(",") if n.strip()}
    nbs = [nb for nb in sorted((ROOT / "notebooks").glob("*.ipynb")) if not wanted or nb.name[:2] in wanted]
    if not nbs:
        print(f"error: no notebook matches --notebooks {args.notebooks}", file=sys.stderr)
        return 2
    if args.out.is_dir() and any(args.out.iterdir()) and not (args.out / "site.json").is_file():
        print(f"error: {args.out} holds files that are not a site built here; name a new or empty folder",
              file=sys.stderr)
        return 2
    summary = build(args.out, nbs, args.reuse, max(1, args.jobs), args.timeout, args.grid, args.keep)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The site's pages that are not notebooks (scripts/site.py builds the site): the index, the explorer, the
slides, the instructor guide and the figures, plus the navigation and launch buttons every page carries."""
from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import colab  # scripts/colab.py: REPO_URL and BRANCH

ROOT = Path(__file__).resolve().parent.parent
WORDS_PER_MINUTE = 200       # prose read
CODE_LINES_PER_MINUTE = 15   # code read, not typed
NOTE = ("This page replays engine runs recorded when the site was built (csd_lib.teach.explorer_data): "
        "no model runs in your browser. EWIF's curves are formulas, computed in the page.")


def md(text: str) -> str:
    """Markdown to HTML (nbconvert's mistune renderer, with tables)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    return markdown2html_mistune(text)


# -- what each notebook teaches ------------------------------------------------------------

def learning_goals(first_cell: str) -> list[str]:
    """The bullets under "What you will learn" in a notebook's first cell."""
    lines = first_cell.splitlines()
    start = next((i for i, ln in enumerate(lines) if "what you will learn" in ln.lower()), None)
    if start is None:
        return []
    goals: list[str] = []
    for ln in lines[start + 1:]:
        if ln.startswith(("* ", "- ")):
            goals.append(ln[2:].strip())
        elif ln.startswith("  ") and goals:
            goals[-1] += " " + ln.strip()
        elif goals and (not ln.strip() or ln.startswith("#")):
            break
    return goals


def notebook_meta(path: Path, exec_s: float) -> dict:
    """Name, page, number, title, learning goals and minutes to read of one notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb["cells"]
    first = "".join(cells[0]["source"])
    title = next((ln[2:] for ln in first.splitlines() if ln.startswith("# ")), path.stem)
    prose = sum(len("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")
    code = sum(len("".join(c["source"]).splitlines()) for c in cells if c["cell_type"] == "code")
    return {"name": path.name, "page": path.stem + ".html", "num": path.name[:2],
            "title": re.sub(r"^\d\d\s*·\s*", "", title), "goals": learning_goals(first),
            "read_min": max(1, round(prose / WORDS_PER_MINUTE + code / CODE_LINES_PER_MINUTE)),
            "exec_s": exec_s}


def launch_links(path: str) -> dict[str, str]:
    """Colab, Binder and source links of a repository file (``notebooks/00_start_here.ipynb``)."""
    url, branch = colab.get_constants((ROOT / "scripts" / "colab.py").read_text(encoding="utf-8"))
    owner_repo = url.removeprefix("https://github.com/")
    links = {"Source": f"{url}/blob/{branch}/{path}"}
    if path.endswith(".ipynb"):
        links = {"Open in Colab": f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/{path}",
                 "Launch Binder": f"https://mybinder.org/v2/gh/{owner_repo}/{branch}?labpath={path}", **links}
    return links


# -- page chrome -------------------------------------------------------------------------------

def nav(current: str, metas: list[dict]) -> str:
    items = [("index.html", "Home")] + [(m["page"], m["num"]) for m in metas] + [
        ("explorer.html", "Explorer"), ("slides.html", "Slides"), ("instructor.html", "Instructor guide"),
        ("figures.html", "Figures")]
    links = "".join(f'<a href="{p}"{" class=current" if p == current else ""} '
                    f'title="{html.escape(next((m["title"] for m in metas if m["page"] == p), label))}">'
                    f'{html.escape(label)}</a>' for p, label in items)
    return f'<nav class="csd-nav">{links}</nav>'


def chrome(current: str, meta: dict | None, metas: list[dict], source: str | None = None) -> tuple[str, str]:
    """The header (navigation, launch buttons) and footer of a page."""
    path = f"notebooks/{meta['name']}" if meta else source
    buttons = "".join(f'<a class="csd-button" href="{html.escape(u)}" rel="noopener">{html.escape(t)}</a>'
                      for t, u in launch_links(path).items()) if path else ""
    head = f'<header class="csd-header">{nav(current, metas)}<div class="csd-launch">{buttons}</div></header>'
    prev_next = ""
    if meta:
        i = [m["page"] for m in metas].index(meta["page"])
        prev = f'<a href="{metas[i - 1]["page"]}">&larr; {html.escape(metas[i - 1]["title"])}</a>' if i else ""
        nxt = (f'<a href="{metas[i + 1]["page"]}">{html.escape(metas[i + 1]["title"])} &rarr;</a>'
               if i + 1 < len(metas) else '<a href="explorer.html">The explorer &rarr;</a>')
        prev_next = f'<div class="csd-prevnext">{prev}<span></span>{nxt}</div>'
    foot = (f'<footer class="csd-footer">{prev_next}<p>CS Drafting workbook, built from the repository by '
            f'<code>bash scripts/site.sh</code> on the default family (tiny-t5).</p></footer>')
    return head, foot


def page(title: str, body: str, current: str, metas: list[dict], source: str | None = None, head: str = "",
         math: bool = False) -> str:
    """A whole page in the site's style."""
    top, foot = chrome(current, None, metas, source)
    mj = ('<script>window.MathJax = {tex: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]]}};</script>'
          '<script src="assets/mathjax/tex-svg.js"></script>') if math else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{html.escape(title)}</title>'
            f'<link rel="stylesheet" href="assets/site.css">{mj}{head}</head>'
            f'<body class="csd-page">{top}<main class="csd-main">{body}</main>{foot}</body></html>\n')


# -- index, guide, figures ---------------------------------------------------------------------

def index_body(metas: list[dict]) -> str:
    rows = []
    for m in metas:
        goals = "".join(f"<li>{md(g).strip().removeprefix('<p>').removesuffix('</p>')}</li>" for g in m["goals"])
        goals = goals.replace('href="#', f'href="{m["page"]}#')  # a goal's link into its notebook
        ran = f", executed in {m['exec_s']:.0f} s for this build" if m["exec_s"] == m["exec_s"] else ""
        rows.append(f'<li class="csd-step"><a href="{m["page"]}"><b>{m["num"]} · {html.escape(m["title"])}</b></a>'
                    f'<span class="csd-time">about {m["read_min"]} min to read{ran}</span>'
                    f'<ul class="csd-goals">{goals}</ul></li>')
    return ("<h1>Cascade Speculative Drafting: the workbook</h1>"
            "<p>Every notebook of the workbook, executed on the default family (<code>tiny-t5</code>) with its "
            "outputs and figures. Read them in order: each builds on the one before. Nothing here needs an "
            "install, a kernel or a network; to run a notebook yourself, use its Colab or Binder button.</p>"
            '<p class="csd-extras"><a class="csd-button" href="explorer.html">The explorer</a> real engine runs '
            'replayed: K, lenience, the MaG rule, the method; EWIF computed live. '
            '<a class="csd-button" href="slides.html">The slides</a> the 50-minute class. '
            '<a class="csd-button" href="instructor.html">Instructor guide</a> '
            '<a class="csd-button" href="figures.html">Figures</a></p>'
            f'<h2>The path through the workbook</h2><ol class="csd-path">{"".join(rows)}</ol>')


def local_links(text: str, metas: list[dict]) -> str:
    """Links of a rendered docs/ page: notebooks to their pages, other repository files to their source."""
    pages = {f"../notebooks/{m['name']}": m["page"] for m in metas}

    def fix(m):
        target = m.group(1)
        if target in pages:
            return f'href="{pages[target]}"'
        if target.startswith("../") or (not re.match(r"[a-z]+:|#", target)):
            rel = Path("docs", target).as_posix()
            rel = re.sub(r"^docs/\.\./", "", rel)
            return f'href="{launch_links(rel)["Source"]}"'
        return m.group(0)
    return re.sub(r'href="([^"]+)"', fix, text)


def figure_captions() -> dict[str, str]:
    """README's alt text of each docs/ image it shows."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return {Path(p).name: alt for alt, p in re.findall(r"!\[([^\]]*)\]\((docs/[^)\s]+\.png)\)", readme)}


def figures_body(out: Path) -> str:
    caps = figure_captions()
    (out / "figures").mkdir(exist_ok=True)
    items = []
    for png in sorted((ROOT / "docs").glob("*.png"), key=lambda p: (p.name not in caps, p.name)):
        shutil.copy(png, out / "figures" / png.name)
        cap = caps.get(png.name, png.stem.replace("-", " ").replace("_", " "))
        items.append(f'<figure class="csd-fig"><img src="figures/{png.name}" alt="{html.escape(cap)}" loading="lazy">'
                     f'<figcaption>{html.escape(cap)} <code>docs/{png.name}</code></figcaption></figure>')
    return ("<h1>Figures</h1><p>The README's figures and the benchmark and cost pictures of <code>docs/</code>, "
            "as committed.</p>" + "".join(items))


def write_static_pages(out: Path, metas: list[dict], executed: dict[str, Path]) -> None:
    """index.html, instructor.html, figures.html and slides.html."""
    import slides
    (out / "index.html").write_text(page("CS Drafting workbook", index_body(metas), "index.html", metas,
                                         source="README.md", math=True), encoding="utf-8")
    guide = local_links(md((ROOT / "docs" / "INSTRUCTOR.md").read_text(encoding="utf-8")), metas)
    (out / "instructor.html").write_text(page("Instructor guide", guide, "instructor.html", metas,
                                              source="docs/INSTRUCTOR.md"), encoding="utf-8")
    (out / "figures.html").write_text(page("Figures", figures_body(out), "figures.html", metas, source="docs"),
                                      encoding="utf-8")
    (out / "slides.html").write_text(slides.deck(out, metas, executed), encoding="utf-8")


# -- the explorer --------------------------------------------------------------------------

def notebook_links(body: str, built: dict[str, str]) -> str:
    """Links between notebooks (``href="09_x.ipynb#part"``) point at their pages (``built``: notebook file ->
    page); a notebook left out of this build links to its source."""
    def to(m) -> str:
        name, part = m.group(1), m.group(2) or ""
        target = built.get(name) or launch_links(f"notebooks/{name}")["Source"]
        return f'href="{target}{part}"'
    return re.sub(r'href="(\d\d_\w+\.ipynb)(#[^"]*)?"', to, body)


def record_explorer(grid: str) -> dict:
    """The explorer's engine runs over the grid ('full' or 'small'; csd_lib.teach.explorer_data), on one torch
    thread, so that it can run beside the notebooks' kernels."""
    import sys

    import torch
    from csd_lib.teach import explorer_data as ed
    torch.set_num_threads(1)  # the tiny models run fastest on one thread (as in the notebooks and tests)
    g = ed.Grid() if grid == "full" else ed.SMALL_GRID
    return ed.explorer_grid("tiny-t5", g, progress=lambda i, n: print(
        f"[site] explorer: {i}/{n} settings recorded", file=sys.stderr, flush=True) if i % 5 == 0 or i == n else None)


def write_explorer(out: Path, metas: list[dict], data: dict) -> int:
    """Write the recorded grid (:func:`record_explorer`) as assets/explorer-data.js and the page; the data's size
    in bytes."""
    from csd_lib.teach import explorer_data as ed
    size = ed.write_explorer_data(out / "assets" / "explorer-data.js", data)
    body = (ROOT / "site" / "explorer.html").read_text(encoding="utf-8")
    body = body.replace("{{NOTE}}", html.escape(NOTE)).replace("{{SIZE}}", f"{size / 1024:.0f} KB")
    built = {m["page"] for m in metas}  # a notebook left out of this build: link to its source
    body = re.sub(r'href="((\d\d_\w+)\.html)"', lambda m: m.group(0) if m.group(1) in built else
                  f'href="{launch_links(f"notebooks/{m.group(2)}.ipynb")["Source"]}"', body)
    head = '<script src="assets/plotly.min.js"></script><script src="assets/explorer-data.js"></script>'
    tail = '<script src="assets/ewif.js"></script><script src="assets/explorer.js"></script>'
    (out / "explorer.html").write_text(page("Explorer", body + tail, "explorer.html", metas, source="site/explorer.html",
                                            head=head), encoding="utf-8")
    return size

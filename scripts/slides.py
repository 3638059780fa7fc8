"""The 50-minute class of docs/INSTRUCTOR.md as a reveal.js deck (scripts/site.py writes it as slides.html).

One slide per row of the guide's class table: the row's time and task, a figure or trace from the site (a
notebook's first figure, a README picture or a trace replayed from the explorer's recorded runs) and speaker
notes made of the row's "what to do" and the guide's "What each notebook should show" for that notebook
(press S for the speaker view).
"""
from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "INSTRUCTOR.md"
PLOTLY_MIME = "application/vnd.plotly.v1+json"


def section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a Markdown text."""
    m = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        raise ValueError(f"{GUIDE.name} has no '## {heading}' section")
    return m.group(1)


def class_rows(text: str) -> list[dict]:
    """The rows of the 50-minute class table: minutes, notebook and what to do."""
    rows = []
    for ln in section(text, "A 50-minute class").splitlines():
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if len(cells) == 3 and re.match(r"\d+-\d+", cells[0]):
            rows.append({"minutes": cells[0], "notebook": cells[1], "todo": cells[2]})
    if not rows:
        raise ValueError(f"no rows in the 50-minute class table of {GUIDE.name}")
    return rows


def should_show(text: str) -> dict[str, str]:
    """{notebook number: its bullet of "What each notebook should show"}."""
    out = {}
    for m in re.finditer(r"^- \*\*(\d\d) [^*]*\*\*(.*?)(?=^- \*\*|\Z)", section(text, "What each notebook should show"),
                         re.M | re.S):
        out[m.group(1)] = " ".join(m.group(2).split())
    return out


def first_figure(executed: Path | None) -> dict | None:
    """The first plotly figure of an executed notebook (its data and layout), or None."""
    if executed is None or not executed.is_file():
        return None
    nb = json.loads(executed.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            fig = out.get("data", {}).get(PLOTLY_MIME)
            if fig:
                return {"data": fig.get("data", []), "layout": fig.get("layout", {})}
    return None


def trace_from_explorer(out: Path, key: str, prompt: int = 0) -> str:
    """A recorded run of the explorer drawn as coloured tokens (the explorer's own spans and colours)."""
    raw = (out / "assets" / "explorer-data.js").read_text(encoding="utf-8")
    data = json.loads(raw[raw.index("{"):raw.rindex("}") + 1])
    key = key if key in data["settings"] else next(k for k in data["settings"] if k.startswith(key.split("|")[0]))
    run, toks = data["settings"][key][prompt], data["prompts"][prompt]["tokens"]
    spans = "".join(f'<span class="csd-tok" data-level="{html.escape(lv["name"])}" style="{lv["css"]}">'
                    f'{html.escape(t)}</span>' for t, lv in ((t, data["levels"][int(c)]) for t, c in zip(toks, run["prov"])))
    used = sorted({int(c) for c in run["prov"]})
    legend = " ".join(f'<span class="csd-tok" style="{data["levels"][i]["css"]}">{data["levels"][i]["name"]}</span>'
                      for i in used)
    return (f'<div class="csd-trace" style="font-size:0.55em;text-align:left">{spans}</div>'
            f'<div class="csd-legend" style="font-size:0.5em">{legend} &middot; {run["target_calls"]} target calls '
            f'for {len(toks)} tokens (recorded run <code>{html.escape(key)}</code>)</div>')


def visual(row: dict, out: Path, executed: dict[str, Path], n: int) -> str:
    """The figure of one slide (see the module docstring)."""
    nb = row["notebook"].lower()
    pictures = {"tree": "cascade_tree.png", "the trace": "trace.png", "paper": "bench-tiny-t5-synth-gsm8k.png"}
    for word, png in pictures.items():
        if word in nb and (ROOT / "docs" / png).is_file():
            (out / "figures").mkdir(exist_ok=True)
            shutil.copy(ROOT / "docs" / png, out / "figures" / png)
            return f'<img class="csd-slide-img" src="figures/{png}" alt="{html.escape(png)}">'
    if "by hand" in nb:
        return trace_from_explorer(out, "sd")
    num = nb[:2]
    fig = first_figure(next((p for page, p in executed.items() if page.startswith(num)), None)) if num.isdigit() else None
    if fig:
        fig["layout"].update(width=960, height=470, margin={"l": 60, "r": 20, "t": 60, "b": 50})
        spec = json.dumps(fig).replace("</", "<\\/")
        return f'<div class="csd-slide-fig" id="slide-fig-{n}" data-fig="{html.escape(spec)}"></div>'
    return trace_from_explorer(out, "csd|4,5,1|l5|mag-strict")


def slide(row: dict, out: Path, executed: dict[str, Path], shows: dict[str, str], n: int) -> str:
    from site_pages import md
    num = row["notebook"][:2]
    page = next((p for p in executed if p.startswith(num)), None) if num.isdigit() else None
    link = f' <a href="{page}" style="font-size:0.5em">(the page)</a>' if page else ""
    notes = md(f"**{row['minutes']} min, {row['notebook']}.** {row['todo']}" +
               (f"\n\n*What notebook {num} should show:* {shows[num]}" if num in shows else ""))
    return (f'<section><h3>{html.escape(row["minutes"])} min &middot; {html.escape(row["notebook"])}{link}</h3>'
            f'{visual(row, out, executed, n)}<div class="csd-slide-todo">{md(row["todo"])}</div>'
            f'<aside class="notes">{notes}</aside></section>')


DRAW = """<script>
Reveal.initialize({hash: true, width: 1280, height: 720, margin: 0.04, plugins: [RevealNotes]});
function csdDraw() { document.querySelectorAll('.present .csd-slide-fig:not([data-drawn])').forEach(function (d) {
  var f = JSON.parse(d.dataset.fig); d.dataset.drawn = '1';
  Plotly.newPlot(d, f.data, f.layout, {displaylogo: false, staticPlot: false}); }); }
Reveal.on('ready', csdDraw); Reveal.on('slidechanged', csdDraw);
</script>"""


def deck(out: Path, metas: list[dict], executed: dict[str, Path]) -> str:
    """slides.html: a title slide, one slide per row of the class table, the homework."""
    text = GUIDE.read_text(encoding="utf-8")
    from site_pages import md
    shows = should_show(text)
    rows = class_rows(text)
    intro = section(text, "A 50-minute class").split("|")[0].strip()
    homework = re.search(r"^Homework:.*$", section(text, "A 50-minute class"), re.M)
    slides = [f'<section><h2>Cascade Speculative Drafting</h2><p>a 50-minute class</p>'
              f'<p style="font-size:0.6em"><a href="index.html">the workbook</a> &middot; '
              f'<a href="explorer.html">the explorer</a> &middot; press S for speaker notes</p>'
              f'<aside class="notes">{md(intro)}</aside></section>']
    slides += [slide(r, out, executed, shows, i) for i, r in enumerate(rows)]
    if homework:
        slides.append(f'<section><h3>Homework</h3>{md(homework.group(0))}</section>')
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>CS Drafting: the 50-minute class</title>'
            '<link rel="stylesheet" href="assets/reveal/reset.css"><link rel="stylesheet" href="assets/reveal/reveal.css">'
            '<link rel="stylesheet" href="assets/reveal/theme/white.css"><link rel="stylesheet" href="assets/site.css">'
            '<style>.reveal .csd-slide-img{max-height:440px} .reveal .csd-slide-todo{font-size:0.5em;text-align:left}'
            '.reveal h3{font-size:1.1em}</style>'
            '<script src="assets/plotly.min.js"></script></head><body><div class="reveal"><div class="slides">'
            + "".join(slides) + '</div></div><script src="assets/reveal/reveal.js"></script>'
            '<script src="assets/reveal/notes.js"></script>' + DRAW + '</body></html>\n')

"""The live panel: edit K, lenience, temperature, method and prompt; every change reruns generation.

The panel is made of plain ipywidgets (HTML, IntText, sliders), so it renders in JupyterLab 4,
classic Notebook and Colab. The trace sits in an ``HTML`` widget with class
``csd-trace-view`` (its content has class ``csd-trace``), the stats in one with class
``csd-stats``, errors in one with class ``csd-error``.
"""
from __future__ import annotations

import html

from .cascade import METHODS, generate
from .viz import stats_html, trace_html

DEFAULT_PROMPT = ("Reason the math question below step by step. Question: Mia has 4 apples. She buys 3 "
                  "bags with 5 apples in each. How many apples does Mia have now?.\n Answer: ")


def _default_prompt(fam) -> str:
    """The first test prompt of the family's task, else a fixed GSM8K-style prompt."""
    from .tasks import TASKS, load_task
    if getattr(fam, "task", None) in TASKS:
        exs = load_task(fam.task, "test", 1)
        if exs:
            return exs[0].prompt
    return DEFAULT_PROMPT


def k_labels(fam) -> tuple[list[str], list[str]]:
    """Row labels (the reviewer of each row of K) and column labels (the drafters, MaG last)."""
    cols = [d.name for d in fam.drafters] + ["mag"]
    rows = ["target"] + cols[:-1]
    return rows, cols


def live_panel(fam, prompt: str | None = None, method: str = "csd", max_new_tokens: int = 64):
    """An ipywidgets VBox that reruns ``generate`` on every change and shows trace and stats.

    The returned box has attributes ``controls`` (dict of widgets), ``k_cells`` (the K
    grid, rows x cols), ``trace``, ``stats``, ``error`` (HTML widgets), ``update()`` and
    ``runs`` (how many generations ran), so a notebook can drive it in code.
    """
    import ipywidgets as w
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    rows, cols = k_labels(fam)
    n = len(cols)
    k0 = fam.default_k
    prompt_w = w.Textarea(value=prompt if prompt is not None else _default_prompt(fam), rows=4,
                          description="prompt", continuous_update=False, layout=w.Layout(width="98%"))
    method_w = w.Dropdown(options=list(METHODS), value=method, description="method")
    len_w = w.FloatSlider(value=float(fam.default_lenience), min=1.0, max=10.0, step=0.5, description="lenience",
                          continuous_update=False, readout_format=".1f", style={"description_width": "initial"})
    temp_w = w.FloatSlider(value=0.0, min=0.0, max=2.0, step=0.1, description="temperature",
                           continuous_update=False, readout_format=".1f", style={"description_width": "initial"})
    seed_w = w.IntText(value=0, description="seed", layout=w.Layout(width="180px"))
    mnt_w = w.BoundedIntText(value=max_new_tokens, min=1, max=1024, description="max new",
                             layout=w.Layout(width="180px"))
    len_w.add_class("csd-lenience")
    temp_w.add_class("csd-temperature")
    method_w.add_class("csd-method")
    # K editor: one IntText per entry; entries below the diagonal are ignored by Algorithm 1
    cells = []
    grid_items = [w.HTML("<b>K</b>")] + [w.HTML(f"<b>{html.escape(c)}</b>") for c in cols]
    for i in range(n):
        grid_items.append(w.HTML(f"<b>{html.escape(rows[i])}</b> reviews"))
        row = []
        for j in range(n):
            cell = w.IntText(value=int(k0[i][j]), layout=w.Layout(width="70px"), disabled=j < i)
            cell.add_class(f"csd-k-{i}-{j}")
            row.append(cell)
            grid_items.append(cell)
        cells.append(row)
    k_grid = w.GridBox(grid_items, layout=w.Layout(grid_template_columns=f"130px repeat({n}, 80px)",
                                                   grid_gap="2px 6px"))
    k_note = w.HTML("<small>K holds increments: row <i>r</i> lets each drafter (column) draft until the "
                    "block reaches the running sum of the row up to its column. Entries below the "
                    "diagonal are ignored. K and lenience apply to method <code>csd</code>.</small>")
    error = w.HTML("")
    error.add_class("csd-error")
    trace = w.HTML("")
    trace.add_class("csd-trace-view")
    stats = w.HTML("")
    stats.add_class("csd-stats")
    status = w.HTML("")
    ar_cache: dict = {}

    def read_k():
        return [[c.value for c in row] for row in cells]

    def config_line(m, k, lam, temp, seed):
        parts = [f"method {m}"]
        if m == "csd":
            parts += [f"K {k}", f"lenience {lam:g}"]
        parts.append("greedy" if temp == 0 else f"temperature {temp:g}, seed {seed}")
        return ", ".join(parts)

    def update(change=None):
        m, temp, seed, mnt, text = method_w.value, temp_w.value, seed_w.value, mnt_w.value, prompt_w.value
        k, lam = read_k(), len_w.value
        status.value = "<i>running...</i>"
        try:
            kw = dict(k=k, lenience=lam) if m == "csd" else {}
            g = generate(fam, text, m, temperature=temp, seed=seed, max_new_tokens=mnt, **kw)
            key = (text, mnt)
            if key not in ar_cache:
                ar_cache[key] = g if (m == "ar" and temp == 0) else generate(fam, text, "ar", max_new_tokens=mnt)
        except ValueError as e:
            error.value = (f'<div style="color:#b00020;border:1px solid #b00020;padding:4px">'
                           f'<b>ValueError:</b> {html.escape(str(e))}</div>')
            status.value = ""
            return
        box.runs += 1
        error.value = ""
        cfg = config_line(m, k, lam, temp, seed)
        trace.value = trace_html(g, fam.tokenizer, title=f"{cfg}: {g.stats.n_tokens} tokens, "
                                 f"{g.stats.calls.get(g.stats.target, 0)} target calls")
        stats.value = (f'<div class="csd-stats-config" style="font-size:0.85em;color:#444">{html.escape(cfg)}'
                       f' (run {box.runs})</div>' + stats_html(g, ar_cache[key]))
        box.last = g
        status.value = ""

    controls = dict(prompt=prompt_w, method=method_w, lenience=len_w, temperature=temp_w, seed=seed_w,
                    max_new_tokens=mnt_w)
    box = w.VBox([prompt_w, w.HBox([method_w, seed_w, mnt_w]), w.HBox([len_w, temp_w]), k_grid, k_note,
                  status, error, trace, stats], layout=w.Layout(width="100%"))
    box.add_class("csd-live-panel")
    box.controls, box.k_cells, box.trace, box.stats, box.error = controls, cells, trace, stats, error
    box.update, box.runs, box.last = update, 0, None
    for wd in [*controls.values(), *(c for row in cells for c in row)]:
        wd.observe(update, names="value")
    update()
    return box

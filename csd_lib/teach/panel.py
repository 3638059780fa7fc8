"""The live panel: edit K, lenience, decoding, method and prompt; every change reruns generation.

The panel is made of plain ipywidgets (HTML, Text, sliders, Output), so it renders in
JupyterLab 4, classic Notebook and Colab. The trace sits in an ``HTML`` widget with class
``csd-trace-view`` (its content has class ``csd-trace``), the stats in one with class
``csd-stats``, what the last change did in ``csd-diff``, the per-pair acceptance of this
run beside the previous one in ``csd-pairs``, errors in ``csd-error`` and the picture of
Algorithm 1 for the current K in the ``Output`` widget ``csd-tree``. A round stepper (slider
``csd-round-slider``, buttons ``csd-round-prev``/``csd-round-next``, readout ``csd-round-label``)
shows one target round of the current generation unrolled (``viz.round_figure``) in the
``Output`` widget ``csd-rounds``.

K cells are ``Text`` widgets, not ``IntText``: the browser side of ``IntText`` drops what
does not parse as an integer (letters vanish, 1.5 becomes 1) before Python sees it, so a
wrong entry could not be reported. Here every entry goes to ``plan.validate_k``,
which rejects letters, fractions and negative numbers with the same message.
"""
from __future__ import annotations

import functools
import html
import re

from ..engine.cascade import generate
from ..engine.plan import METHODS, validate_k
from ..families.tasks import TASKS, load_task
from ..viz import cascade_tree_figure, round_figure, show_in_output, stats_html, trace_html

DEFAULT_PROMPT = ("Reason the math question below step by step. Question: Mia has 4 apples. She buys 3 "
                  "bags with 5 apples in each. How many apples does Mia have now?.\n Answer: ")

# The temperature the "sample" mode starts at. The tiny models are so sure of their
# greedy token that temperature 1.0 reproduced the greedy text for 5 seeds out of 5; at
# this temperature 5 of 5 seeds give text different from greedy on the default prompt
# of tiny-t5 and tiny-llama (measured for the panel's 64 new tokens).
SAMPLE_TEMPERATURE = 2.0


@functools.cache
def _k_cell_class():
    """A Text widget class for one K entry; numbers assigned from code become their text."""
    import ipywidgets as w  # notebook-only: imported when a panel is built
    from traitlets import Unicode  # notebook-only: imported when a panel is built

    class NumberText(Unicode):
        def validate(self, obj, value):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)
            return super().validate(obj, value)

    class KCell(w.Text):
        value = NumberText(help="K entry").tag(sync=True)

    return KCell


def _default_prompt(fam) -> str:
    """The first test prompt of the family's task, else a fixed GSM8K-style prompt."""
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


def parse_k(texts: list[list[str]]) -> list[list[int]]:
    """K from the text of the editor's cells; letters, fractions and negatives raise ValueError.

    Entries below the diagonal are ignored by Algorithm 1 and read as 0 when left empty.
    """
    n = len(texts)
    k = []
    for i, row in enumerate(texts):
        out = []
        for j, t in enumerate(row):
            s = str(t).strip()
            if j < i and s == "":
                out.append(0)
            elif re.fullmatch(r"[+-]?\d+", s):
                out.append(int(s))
            else:
                try:
                    out.append(float(s))  # 1.5: rejected by validate_k as "not an integer"
                except ValueError:
                    out.append(s)         # letters: rejected by validate_k as "not an integer"
        k.append(out)
    return validate_k(k, n)


def pair_acceptance(g) -> dict[str, tuple[int, int]]:
    """``{"reviewer<-proposer": (accepted, reached)}`` over all positions of one generation."""
    return {key: (sum(ps.accepted), sum(ps.reached)) for key, ps in sorted(g.stats.acceptance.items())}


def run_diff(cur, prev=None, ar=None) -> dict:
    """What separates ``cur`` from the previous run and from greedy AR, as counts.

    Returns ``tokens_changed`` (positions whose token differs from ``prev``, plus the
    length difference), ``level_changed`` (same token at the same position, proposed by
    another level), ``calls_changed`` (models whose forward-call count moved),
    ``vs_ar`` (positions that differ from greedy AR, plus the length difference) and
    ``only_timing`` (nothing but the wall time moved). Counts are None without a reference.
    """
    def differ(a, b):
        return sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))

    out = dict(tokens_changed=None, level_changed=None, calls_changed=None, vs_ar=None, only_timing=False)
    if ar is not None:
        out["vs_ar"] = differ(cur.token_ids, ar.token_ids)
    if prev is not None:
        out["tokens_changed"] = differ(cur.token_ids, prev.token_ids)
        out["level_changed"] = sum(1 for a, b, pa, pb in zip(cur.token_ids, prev.token_ids, cur.provenance,
                                                             prev.provenance) if a == b and pa != pb)
        names = set(cur.stats.calls) | set(prev.stats.calls)
        out["calls_changed"] = {m: (prev.stats.calls.get(m, 0), cur.stats.calls.get(m, 0)) for m in sorted(names)
                                if prev.stats.calls.get(m, 0) != cur.stats.calls.get(m, 0)}
        out["only_timing"] = (out["tokens_changed"] == 0 and out["level_changed"] == 0
                              and not out["calls_changed"])
    return out


def _settings_changed(prev_cfg: dict | None, cfg: dict) -> list[str]:
    if prev_cfg is None:
        return []
    return [f"{k} {prev_cfg[k]} \u2192 {cfg[k]}" for k in cfg if prev_cfg.get(k) != cfg[k]]


def diff_html(cur, prev=None, ar=None, changed: list[str] | None = None) -> str:
    """The "what changed" readout (class ``csd-diff``) for one run against the previous one."""
    d = run_diff(cur, prev, ar)
    lines = []
    if d["vs_ar"] is not None:
        lines.append(f"tokens different from greedy AR: <b>{d['vs_ar']}</b> of {len(cur.token_ids)}")
    if prev is None:
        lines.append("first run: change a setting to compare")
    else:
        what = ", ".join(changed or []) or "nothing (rerun)"
        lines.insert(0, f"changed: {html.escape(what)}")
        lines.append(f"tokens changed since the previous run: <b>{d['tokens_changed']}</b>; "
                     f"tokens that changed level: <b>{d['level_changed']}</b>")
        if d["calls_changed"]:
            lines.append("forward calls: " + ", ".join(f"{m} {a} \u2192 {b}" for m, a, b in
                                                      ((m, *v) for m, v in d["calls_changed"].items())))
        else:
            lines.append("forward calls: unchanged")
        t0, t1 = prev.stats.wall_time * 1000, cur.stats.wall_time * 1000
        if d["only_timing"]:
            lines.append(f'<span class="csd-diff-noise"><b>This change altered no token, no level and no call '
                         f'count</b>: only the wall time moved ({t0:.0f} \u2192 {t1:.0f} ms), and that is timing '
                         f'noise, not an effect of the change.</span>')
        else:
            lines.append(f"wall time {t0:.0f} \u2192 {t1:.0f} ms")
    body = "".join(f"<div>{x}</div>" for x in lines)
    return f'<div class="csd-diff-box" style="font-size:0.9em;border-left:3px solid #0072b2;padding-left:6px">{body}</div>'


def pairs_html(cur, prev=None) -> str:
    """Per-pair acceptance of this run beside the previous run's (table class ``csd-pairs-table``)."""
    a, b = pair_acceptance(cur), pair_acceptance(prev) if prev is not None else {}

    def cell(v):
        return f"{v[0]}/{v[1]} = {v[0] / v[1]:.2f}" if v and v[1] else "-"

    head = "<tr><th style='text-align:left'>review pair</th><th>this run</th><th>previous run</th></tr>"
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{cell(a.get(k))}</td><td>{cell(b.get(k))}</td></tr>"
                   for k in sorted(set(a) | set(b)))
    return (f'<table class="csd-pairs-table" style="font-size:0.85em"><caption style="text-align:left">'
            f'accepted / reached drafts per review pair</caption>{head}{rows}</table>')


def live_panel(fam, prompt: str | None = None, method: str = "csd", max_new_tokens: int = 64):
    """An ipywidgets VBox that reruns ``generate`` on every change and shows trace, stats and why.

    The returned box has attributes ``controls`` (dict of widgets), ``k_cells`` (the K
    grid of Text widgets, rows x cols), ``trace``, ``stats``, ``diff``, ``pairs``,
    ``error`` (HTML widgets), ``tree`` (Output) and ``tree_figure`` (the Algorithm-1
    figure for the current K), ``update()``, ``runs`` (how many generations ran) and
    ``last``/``previous`` (the last two generations), so a notebook can drive it in code.
    The round stepper is ``round_slider`` (1 to ``n_rounds``, the target rounds of ``last``),
    ``round_prev``/``round_next`` (buttons), ``round_label`` and ``rounds`` (Output) showing
    ``round_figure`` (the figure of round ``round_slider.value``). It starts on the first
    round in which the target rejected a drafted token and keeps its round, clamped, on reruns.
    """
    import ipywidgets as w  # notebook-only: imported when a panel is built
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
    mode_w = w.ToggleButtons(options=["greedy", "sample"], value="greedy", description="decoding",
                             style={"description_width": "initial", "button_width": "80px"})
    temp_w = w.FloatSlider(value=SAMPLE_TEMPERATURE, min=0.1, max=4.0, step=0.1, description="temperature",
                           continuous_update=False, readout_format=".1f", disabled=True,
                           style={"description_width": "initial"})
    seed_w = w.IntText(value=0, description="seed", layout=w.Layout(width="180px"))
    mnt_w = w.BoundedIntText(value=max_new_tokens, min=1, max=1024, description="max new",
                             layout=w.Layout(width="180px"))
    len_w.add_class("csd-lenience")
    temp_w.add_class("csd-temperature")
    mode_w.add_class("csd-decoding")
    method_w.add_class("csd-method")
    # K editor: one Text per entry; entries below the diagonal are ignored by Algorithm 1
    cells = []
    grid_items = [w.HTML("<b>K</b>")] + [w.HTML(f"<b>{html.escape(c)}</b>") for c in cols]
    for i in range(n):
        grid_items.append(w.HTML(f"<b>{html.escape(rows[i])}</b> reviews"))
        row = []
        for j in range(n):
            cell = _k_cell_class()(value=str(int(k0[i][j])), layout=w.Layout(width="70px"), disabled=j < i,
                           continuous_update=False)
            cell.add_class(f"csd-k-{i}-{j}")
            row.append(cell)
            grid_items.append(cell)
        cells.append(row)
    k_grid = w.GridBox(grid_items, layout=w.Layout(grid_template_columns=f"130px repeat({n}, 80px)",
                                                   grid_gap="2px 6px"))
    k_note = w.HTML("<small>K holds increments: row <i>r</i> lets each drafter (column) draft until the "
                    "block reaches the running sum of the row up to its column. Entries below the "
                    "diagonal are ignored. K and lenience apply to method <code>csd</code>; the picture "
                    "below redraws when K or lenience changes.</small>")
    error, trace, stats, diff, pairs, status = (w.HTML("") for _ in range(6))
    for wd, cls in ((error, "csd-error"), (trace, "csd-trace-view"), (stats, "csd-stats"), (diff, "csd-diff"),
                    (pairs, "csd-pairs")):
        wd.add_class(cls)
    tree = w.Output()
    tree.add_class("csd-tree")
    # one target round unrolled: step through the rounds of the current generation
    round_slider = w.IntSlider(value=1, min=1, max=1, description="round", continuous_update=False)
    round_prev = w.Button(description="\u25c0 prev", tooltip="previous target round", layout=w.Layout(width="90px"))
    round_next = w.Button(description="next \u25b6", tooltip="next target round", layout=w.Layout(width="90px"))
    round_label = w.HTML("")
    rounds = w.Output()
    for wd, cls in ((round_slider, "csd-round-slider"), (round_prev, "csd-round-prev"),
                    (round_next, "csd-round-next"), (round_label, "csd-round-label"), (rounds, "csd-rounds")):
        wd.add_class(cls)
    ar_cache: dict = {}

    def config(k, lam, temp, seed):
        m = method_w.value
        cfg = dict(method=m)
        if m == "csd":
            cfg.update(K=k, lenience=lam)
        cfg["decoding"] = "greedy" if temp == 0 else f"temperature {temp:g}, seed {seed}"
        cfg["max_new_tokens"] = mnt_w.value
        return cfg

    def show_error(e: ValueError):
        error.value = (f'<div style="color:#b00020;border:1px solid #b00020;padding:4px">'
                       f'<b>ValueError:</b> {html.escape(str(e))}</div>')
        status.value = ""

    def redraw_tree(k, lam):
        fig = cascade_tree_figure(k, cols, lenience=lam, target=fam.target.name)
        box.tree_figure = fig
        show_in_output(tree, fig)

    def show_round(change=None):
        """Draw round ``round_slider.value`` of the last generation (once per generation and round)."""
        r = round_slider.value
        if box.round_key == (box.runs, r):
            return
        box.round_key = (box.runs, r)
        fig = round_figure(box.last, fam.tokenizer, r - 1)
        box.round_figure = fig
        round_label.value = f"target round <b>{r}</b> of {box.n_rounds}"
        round_prev.disabled, round_next.disabled = r <= 1, r >= box.n_rounds
        show_in_output(rounds, fig)

    def new_rounds(g):
        """Fit the stepper to generation ``g``: its number of target rounds, the round kept (clamped)."""
        tops = [e for e in g.events if e.depth == 0]
        box.n_rounds = len(tops)
        if box.runs == 1:  # first run: the first round in which the target rejected a drafted token
            r = next((i for i, e in enumerate(tops) if e.n_accepted < len(e.tokens)), 0) + 1
        else:
            r = min(round_slider.value, len(tops))
        round_slider.max = max(round_slider.max, len(tops))  # never below the value while it moves
        round_slider.value = r   # draws (observer) when the round moved
        round_slider.max = len(tops)
        show_round()             # draws when only the generation changed

    def step(delta):
        round_slider.value = min(max(round_slider.value + delta, 1), box.n_rounds)

    def update(change=None):
        temp_w.disabled = mode_w.value == "greedy"
        temp = 0.0 if mode_w.value == "greedy" else temp_w.value
        seed, mnt, text, lam = seed_w.value, mnt_w.value, prompt_w.value, len_w.value
        status.value = "<i>running...</i>"
        try:
            k = parse_k([[c.value for c in row] for row in cells])
            if box.tree_key != (k, lam):
                redraw_tree(k, lam)
                box.tree_key = (k, lam)
            m = method_w.value
            kw = dict(k=k, lenience=lam) if m == "csd" else {}
            g = generate(fam, text, m, temperature=temp, seed=seed, max_new_tokens=mnt, **kw)
            key = (text, mnt)
            if key not in ar_cache:
                ar_cache[key] = g if (m == "ar" and temp == 0) else generate(fam, text, "ar", max_new_tokens=mnt)
        except ValueError as e:
            show_error(e)
            return
        box.runs += 1
        error.value = ""
        cfg = config(k, lam, temp, seed)
        line = ", ".join(f"{a} {b}" for a, b in cfg.items())
        trace.value = trace_html(g, fam.tokenizer, title=f"{line}: {g.stats.n_tokens} tokens, "
                                 f"{g.stats.calls.get(g.stats.target, 0)} target calls")
        stats.value = (f'<div class="csd-stats-config" style="font-size:0.85em;color:#444">{html.escape(line)}'
                       f' (run {box.runs})</div>' + stats_html(g, ar_cache[key]))
        box.previous, box.last = box.last, g
        diff.value = diff_html(g, box.previous, ar_cache[key], _settings_changed(box.last_cfg, cfg))
        pairs.value = pairs_html(g, box.previous)
        box.last_cfg = cfg
        new_rounds(g)
        status.value = ""

    controls = dict(prompt=prompt_w, method=method_w, lenience=len_w, decoding=mode_w, temperature=temp_w,
                    seed=seed_w, max_new_tokens=mnt_w)
    round_note = w.HTML("<small>One target round unrolled: every review of Algorithm 1 that led to the "
                        "target's review, from the bottom up (MaG proposes, the drafters review, the target "
                        "reviews); each row says the lenience it applied.</small>")
    box = w.VBox([prompt_w, w.HBox([method_w, seed_w, mnt_w]), w.HBox([len_w, mode_w, temp_w]), k_grid, k_note,
                  status, error, trace, w.HBox([stats, w.VBox([diff, pairs])]),
                  w.HBox([round_prev, round_slider, round_next, round_label]), round_note, rounds, tree],
                 layout=w.Layout(width="100%"))
    box.add_class("csd-live-panel")
    box.controls, box.k_cells, box.trace, box.stats, box.error = controls, cells, trace, stats, error
    box.diff, box.pairs, box.tree = diff, pairs, tree
    box.update, box.runs, box.last, box.previous, box.last_cfg = update, 0, None, None, None
    box.tree_figure, box.tree_key = None, None
    box.round_slider, box.round_prev, box.round_next, box.round_label, box.rounds = (round_slider, round_prev,
                                                                                     round_next, round_label, rounds)
    box.round_figure, box.round_key, box.n_rounds = None, None, 0
    round_slider.observe(show_round, names="value")
    round_prev.on_click(lambda _: step(-1))
    round_next.on_click(lambda _: step(1))
    for wd in [*controls.values(), *(c for row in cells for c in row)]:
        wd.observe(update, names="value")
    update()
    return box

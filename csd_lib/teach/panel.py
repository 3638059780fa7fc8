"""The live panel: edit K, lenience, the MaG rule, decoding, method and prompt; every change reruns generation.

The panel is made of plain ipywidgets (HTML, Text, sliders, Output), so it renders in
JupyterLab 4, classic Notebook and Colab. The trace sits in an ``HTML`` widget with class
``csd-trace-view`` (its content has class ``csd-trace``), the stats in one with class
``csd-stats``, what the last change did in ``csd-diff``, the per-pair acceptance of this
run beside the previous one in ``csd-pairs``, errors in ``csd-error`` and the picture of
Algorithm 1 for the current K in the ``Output`` widget ``csd-tree``. A round stepper (slider
``csd-round-slider``, buttons ``csd-round-prev``/``csd-round-next``, readout ``csd-round-label``)
shows one target round of the current generation unrolled (``viz.round_figure``) in the
``Output`` widget ``csd-rounds``. On a decoder-only family the method list ends with ``csd-tree`` (the
cascade's chain plus its drafters' second choices, verified as one token tree); on a T5 family the
readout ``csd-method-note`` says why it is absent.

The batch size (``csd-batch-size``, default 1: one prompt, as the panel always ran) runs that many prompts at once
(:func:`csd_lib.engine.batch.generate_batch`; :func:`batch_prompts` says which). Above 1 a row picker (Dropdown
``csd-row-picker``, hidden at batch size 1) chooses the row that the trace, the stats, the readouts and the round
stepper show; picking a row reruns nothing.

K cells are ``Text`` widgets, not ``IntText``: the browser side of ``IntText`` drops what
does not parse as an integer (letters vanish, 1.5 becomes 1) before Python sees it, so a
wrong entry could not be reported. Here every entry goes to ``plan.validate_k``,
which rejects letters, fractions and negative numbers with the same message.
"""
from __future__ import annotations

import functools
import html
import re

from ..engine.batch import generate_batch
from ..engine.cascade import generate
from ..engine.methods import CSD_TREE, REFERENCE, find, get
from ..engine.plan import MAG_LENIENCE, METHODS, validate_k
from ..report.trees import takes_trees
from ..families.tasks import TASKS, load_task
from ..viz import batch_row, cascade_tree_figure, round_figure, row_label, show_in_output, stats_html, trace_html

DEFAULT_PROMPT = ("Reason the math question below step by step. Question: Mia has 4 apples. She buys 3 "
                  "bags with 5 apples in each. How many apples does Mia have now?.\n Answer: ")

# The most rows the panel's batch-size control offers.
MAX_BATCH = 8

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


def batch_prompts(fam, prompt: str, n: int) -> list[str]:
    """The ``n`` prompts of a batch: the panel's prompt first, then the family task's held-out test prompts (mixed
    lengths); for a family without a task, the panel's prompt cut word by word from its end."""
    others = [e.prompt for e in load_task(fam.task, "test", n) if e.prompt != prompt] \
        if n > 1 and getattr(fam, "task", None) in TASKS else []
    words = prompt.split()
    while len(others) < n - 1:
        others.append(" ".join(words[:max(len(words) - 1 - len(others) % max(len(words) - 1, 1), 1)]))
    return [prompt] + others[:n - 1]


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


def panel_methods(fam) -> list[str]:
    """The panel's methods for ``fam``: the linear ones, and ``csd-tree`` where the target takes a token tree."""
    return list(METHODS) + ([CSD_TREE.name] if takes_trees(fam) else [])


def method_note(fam) -> str:
    """Why ``csd-tree`` is missing from the panel's methods ('' when it is there)."""
    if takes_trees(fam):
        return ""
    return (f"<small>No <code>csd-tree</code>: family {html.escape(fam.name)} has an encoder-decoder (T5) target, "
            f"whose relative position bias cannot score a token tree in one call (notebook 08).</small>")


def pair_acceptance(g) -> dict[str, tuple[int, int]]:
    """``{"reviewer<-proposer": (accepted, reached)}`` over all positions of one generation."""
    return {key: (sum(ps.accepted), sum(ps.reached)) for key, ps in sorted(g.stats.acceptance.items())}


def run_diff(cur, prev=None, ar=None) -> dict:
    """What separates ``cur`` from the previous run and from greedy AR, as counts.

    Returns ``tokens_changed`` (positions whose token differs from ``prev``, plus the
    length difference), ``level_changed`` (same token at the same position, proposed by
    another level), ``calls_changed`` (models whose forward-call count moved),
    ``vs_ar`` (positions that differ from greedy AR, plus the length difference) and
    ``only_timing`` (nothing but the wall time moved, at one batch size: a row's time counts its batch's calls). Counts are None without a reference.
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
                              and not out["calls_changed"] and cur.plan.batch_size == prev.plan.batch_size)
    return out


def _settings_changed(prev_cfg: dict | None, cfg: dict) -> list[str]:
    if prev_cfg is None:
        return []
    prev_cfg, cfg = {"batch_size": 1, **prev_cfg}, {"batch_size": 1, **cfg}  # a run's config names batch sizes > 1
    return [f"{k} {prev_cfg.get(k)} \u2192 {cfg[k]}" for k in cfg if prev_cfg.get(k) != cfg[k]]


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


class LivePanel:
    """The live panel: ipywidgets that rerun ``generate`` on every change and show trace, stats and why.

    Displayed as its ``box`` (a VBox of class ``csd-live-panel``). A notebook can drive it in code:
    ``controls`` (dict of widgets: prompt, method, lenience, mag_lenience, decoding, temperature, seed,
    max_new_tokens), ``k_cells`` (the K grid of Text widgets, rows x cols), ``trace``, ``stats``,
    ``diff``, ``pairs``, ``error`` (HTML widgets), ``tree`` (Output) and ``tree_figure`` (the
    Algorithm-1 figure for the current K), :meth:`update`, ``runs`` (how many generations ran) and
    ``last``/``previous`` (the last two generations). The round stepper is ``round_slider`` (1 to
    ``n_rounds``, the target rounds of ``last``), ``round_prev``/``round_next`` (buttons),
    ``round_label`` and ``rounds`` (Output) showing ``round_figure`` (the figure of round
    ``round_slider.value``). It starts on the first round in which the target rejected a drafted
    token and keeps its round, clamped, on reruns. ``mag_lenience`` is the plan's MaG rule (csd, csd-tree):
    off, lenience applies between neural drafters only (the paper's); on, to MaG's tokens too.
    ``controls["batch_size"]`` runs ``batch`` (one generation per prompt of ``prompts``); ``row_picker`` (or
    :meth:`pick_row`) chooses ``row``, the row shown: ``last`` is ``batch[row]`` and ``previous`` the same row of
    the run before.
    """

    def __init__(self, fam, prompt: str | None = None, method: str = "csd", max_new_tokens: int = 64):
        import ipywidgets as w  # notebook-only: imported when a panel is built
        if method not in panel_methods(fam):
            raise ValueError(f"unknown method {method!r} for family {fam.name!r}; use one of "
                             f"{', '.join(panel_methods(fam))}" + (f" ({method} needs a decoder-only target)"
                                                                   if find(method) and find(method).is_tree else ""))
        self.fam = fam
        self.runs, self.last, self.previous, self.last_cfg = 0, None, None, None
        self.tree_figure, self.tree_key = None, None
        self.round_figure, self.round_key, self.n_rounds = None, None, 0
        self.batch, self.prev_batch, self.prompts, self.row, self.changed = [], [], [], 0, []
        self._ar_cache: dict = {}
        self.controls = dict(prompt=self._prompt_control(w, prompt), method=self._method_control(w, method),
                             lenience=self._lenience_control(w), mag_lenience=self._mag_rule_control(w),
                             decoding=self._decoding_control(w), temperature=self._temperature_control(w),
                             seed=w.IntText(value=0, description="seed", layout=w.Layout(width="180px")),
                             max_new_tokens=w.BoundedIntText(value=max_new_tokens, min=1, max=1024,
                                                             description="max new", layout=w.Layout(width="180px")),
                             batch_size=self._batch_control(w))
        k_grid = self._k_editor(w)
        self._readouts(w)
        self._round_stepper(w)
        self._row_control(w)
        self.box = self._layout(w, k_grid)
        for wd in [*self.controls.values(), *(c for row in self.k_cells for c in row)]:
            wd.observe(self.update, names="value")
        self.update()

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)

    # -- one method per control ------------------------------------------------------------

    def _prompt_control(self, w, prompt):
        return w.Textarea(value=prompt if prompt is not None else _default_prompt(self.fam), rows=4,
                          description="prompt", continuous_update=False, layout=w.Layout(width="98%"))

    def _method_control(self, w, method):
        wd = w.Dropdown(options=panel_methods(self.fam), value=method, description="method")
        wd.add_class("csd-method")
        self.method_note = w.HTML(method_note(self.fam))
        self.method_note.add_class("csd-method-note")
        return wd

    def _lenience_control(self, w):
        wd = w.FloatSlider(value=float(self.fam.default_lenience), min=1.0, max=10.0, step=0.5,
                           description="lenience", continuous_update=False, readout_format=".1f",
                           style={"description_width": "initial"})
        wd.add_class("csd-lenience")
        return wd

    def _mag_rule_control(self, w):
        """The MaG rule: whether lenience applies to MaG's tokens too (the plan's ``mag_lenience``)."""
        wd = w.Checkbox(value=MAG_LENIENCE, description="lenience on MaG's tokens (csd, csd-tree)", indent=False)
        wd.add_class("csd-mag-lenience")
        return wd

    def _decoding_control(self, w):
        wd = w.ToggleButtons(options=["greedy", "sample"], value="greedy", description="decoding",
                             style={"description_width": "initial", "button_width": "80px"})
        wd.add_class("csd-decoding")
        return wd

    def _temperature_control(self, w):
        wd = w.FloatSlider(value=SAMPLE_TEMPERATURE, min=0.1, max=4.0, step=0.1, description="temperature",
                           continuous_update=False, readout_format=".1f", disabled=True,
                           style={"description_width": "initial"})
        wd.add_class("csd-temperature")
        return wd

    def _batch_control(self, w):
        wd = w.BoundedIntText(value=1, min=1, max=MAX_BATCH, description="batch size", layout=w.Layout(width="180px"),
                              style={"description_width": "initial"})
        wd.add_class("csd-batch-size")
        return wd

    def _row_control(self, w):
        """The row picker: which row of a batch the readouts show (hidden at batch size 1)."""
        self.row_picker = w.Dropdown(options=[("row 0", 0)], value=0, description="row",
                                     layout=w.Layout(width="98%", display="none"))
        self.row_picker.add_class("csd-row-picker")
        self._fitting = False
        self.row_picker.observe(self._row_changed, names="value")

    def _k_editor(self, w):
        """One Text per K entry (``k_cells``); entries below the diagonal are ignored by Algorithm 1."""
        rows, self._cols = k_labels(self.fam)
        n, k0 = len(self._cols), self.fam.default_k
        self.k_cells = []
        items = [w.HTML("<b>K</b>")] + [w.HTML(f"<b>{html.escape(c)}</b>") for c in self._cols]
        for i in range(n):
            items.append(w.HTML(f"<b>{html.escape(rows[i])}</b> reviews"))
            row = []
            for j in range(n):
                cell = _k_cell_class()(value=str(int(k0[i][j])), layout=w.Layout(width="70px"), disabled=j < i,
                                       continuous_update=False)
                cell.add_class(f"csd-k-{i}-{j}")
                row.append(cell)
            items += row
            self.k_cells.append(row)
        return w.GridBox(items, layout=w.Layout(grid_template_columns=f"130px repeat({n}, 80px)",
                                                grid_gap="2px 6px"))

    def _readouts(self, w):
        self.error, self.trace, self.stats, self.diff, self.pairs, self.status = (w.HTML("") for _ in range(6))
        for wd, cls in ((self.error, "csd-error"), (self.trace, "csd-trace-view"), (self.stats, "csd-stats"),
                        (self.diff, "csd-diff"), (self.pairs, "csd-pairs")):
            wd.add_class(cls)
        self.tree = w.Output()
        self.tree.add_class("csd-tree")

    def _round_stepper(self, w):
        """One target round unrolled: step through the rounds of the current generation."""
        self.round_slider = w.IntSlider(value=1, min=1, max=1, description="round", continuous_update=False)
        self.round_prev = w.Button(description="\u25c0 prev", tooltip="previous target round",
                                   layout=w.Layout(width="90px"))
        self.round_next = w.Button(description="next \u25b6", tooltip="next target round",
                                   layout=w.Layout(width="90px"))
        self.round_label = w.HTML("")
        self.rounds = w.Output()
        for wd, cls in ((self.round_slider, "csd-round-slider"), (self.round_prev, "csd-round-prev"),
                        (self.round_next, "csd-round-next"), (self.round_label, "csd-round-label"),
                        (self.rounds, "csd-rounds")):
            wd.add_class(cls)
        self.round_slider.observe(self.show_round, names="value")
        self.round_prev.on_click(lambda _: self.step(-1))
        self.round_next.on_click(lambda _: self.step(1))

    def _layout(self, w, k_grid):
        c = self.controls
        k_note = w.HTML("<small>K holds increments: row <i>r</i> lets each drafter (column) draft until the "
                        "block reaches the running sum of the row up to its column. Entries below the "
                        "diagonal are ignored. K, lenience and the MaG rule apply to methods <code>csd</code> and <code>csd-tree</code>; "
                        "the picture below redraws when K or lenience changes.</small>")
        round_note = w.HTML("<small>One target round unrolled: every review of Algorithm 1 that led to the "
                            "target's review, from the bottom up (MaG proposes, the drafters review, the target "
                            "reviews); each row says the lenience it applied.</small>")
        box = w.VBox([c["prompt"], w.HBox([c["method"], c["seed"], c["max_new_tokens"], c["batch_size"]]),
                      self.method_note, w.HBox([c["lenience"], c["mag_lenience"], c["decoding"], c["temperature"]]),
                      k_grid, k_note, self.status, self.error, self.row_picker, self.trace, w.HBox([self.stats, w.VBox([self.diff, self.pairs])]),
                      w.HBox([self.round_prev, self.round_slider, self.round_next, self.round_label]), round_note,
                      self.rounds, self.tree], layout=w.Layout(width="100%"))
        box.add_class("csd-live-panel")
        return box

    # -- what a change does ----------------------------------------------------------------

    def _settings(self) -> dict:
        """The run's settings from the controls (K parsed: a bad entry raises ValueError)."""
        c = self.controls
        greedy = c["decoding"].value == "greedy"
        return dict(method=c["method"].value, k=parse_k([[x.value for x in row] for row in self.k_cells]),
                    lenience=c["lenience"].value, mag_lenience=c["mag_lenience"].value,
                    temperature=0.0 if greedy else c["temperature"].value, seed=c["seed"].value,
                    max_new_tokens=c["max_new_tokens"].value, prompt=c["prompt"].value, batch_size=c["batch_size"].value)

    @staticmethod
    def _config(s: dict) -> dict:
        """What the readouts name of a run's settings (K, lenience and the MaG rule for the cascade methods only)."""
        cfg = dict(method=s["method"])
        if get(s["method"]).lenient:
            cfg.update(K=s["k"], lenience=s["lenience"], mag_lenience=s["mag_lenience"])
        cfg["decoding"] = "greedy" if s["temperature"] == 0 else f"temperature {s['temperature']:g}, seed {s['seed']}"
        cfg["max_new_tokens"] = s["max_new_tokens"]
        if s["batch_size"] > 1:
            cfg["batch_size"] = s["batch_size"]
        return cfg

    def _generate(self, s: dict) -> tuple[list, list[str]]:
        """The runs of settings ``s``, one per prompt of the batch (batch size 1: ``generate`` itself), and the prompts."""
        kw = dict(k=s["k"], lenience=s["lenience"], mag_lenience=s["mag_lenience"]) \
            if get(s["method"]).lenient else {}
        kw.update(temperature=s["temperature"], seed=s["seed"], max_new_tokens=s["max_new_tokens"])
        if s["batch_size"] == 1:
            return [generate(self.fam, s["prompt"], s["method"], **kw)], [s["prompt"]]
        prompts = batch_prompts(self.fam, s["prompt"], s["batch_size"])
        return generate_batch(self.fam, prompts, s["method"], batch_size=s["batch_size"], **kw), prompts

    def _ar(self, g, prompt: str):
        """Greedy AR on ``prompt`` at ``g``'s length (cached; ``g`` itself when it is a batch-1 greedy AR run)."""
        key = (prompt, g.plan.max_new_tokens)
        if key not in self._ar_cache:
            self._ar_cache[key] = g if (g.method == REFERENCE and g.plan.temperature == 0 and g.plan.batch_size == 1) \
                else generate(self.fam, prompt, REFERENCE, max_new_tokens=g.plan.max_new_tokens)
        return self._ar_cache[key]

    def update(self, change=None):
        """Rerun generation with the controls' settings and redraw every readout (a bad setting: the error)."""
        self.controls["temperature"].disabled = self.controls["decoding"].value == "greedy"
        self.status.value = "<i>running...</i>"
        try:
            s = self._settings()
            key = (s["k"], s["lenience"], s["mag_lenience"])
            if self.tree_key != key:
                self.redraw_tree(*key)
                self.tree_key = key
            batch, prompts = self._generate(s)
        except ValueError as e:
            self.show_error(e)
            return
        self.runs += 1
        cfg = self._config(s)
        self.prev_batch, self.batch, self.prompts = self.batch, batch, prompts
        self.changed, self.last_cfg = _settings_changed(self.last_cfg, cfg), cfg
        self._fit_rows()
        self._show()
        self.status.value = ""

    def _show(self):
        """Draw row ``row`` of the current batch: trace, stats, readouts against the same row of the run before,
        and the round stepper on its target rounds."""
        self.error.value = ""
        g, prompt = self.batch[self.row], self.prompts[self.row]
        ar = self._ar(g, prompt)
        line = ", ".join(f"{a} {b}" for a, b in self.last_cfg.items())
        title = f"{line}: {g.stats.n_tokens} tokens, {g.stats.calls.get(g.stats.target, 0)} target calls"
        if len(self.batch) > 1:
            title = f"{row_label(self.batch, self.row, self.prompts, self.fam.tokenizer)}; {title}"
        self.trace.value = trace_html(g, self.fam.tokenizer, title=title,
                                      row=self.row if len(self.batch) > 1 else None)
        self.stats.value = (f'<div class="csd-stats-config" style="font-size:0.85em;color:#444">{html.escape(line)}'
                            f' (run {self.runs})</div>' + stats_html(g, ar))
        self.last = g
        self.previous = self.prev_batch[self.row] if self.row < len(self.prev_batch) else None
        self.diff.value = diff_html(g, self.previous, ar, self.changed)
        self.pairs.value = pairs_html(g, self.previous)
        self._new_rounds(g)

    # -- the row picker --------------------------------------------------------------------

    def _fit_rows(self):
        """Fit the row picker to the current batch: one entry per row, the row kept (clamped); hidden for one row."""
        n = len(self.batch)
        self.row = min(self.row, n - 1)
        self._fitting = True  # the picker's options change: no redraw until the run is shown
        try:
            self.row_picker.options = [(row_label(self.batch, r, self.prompts, self.fam.tokenizer, width=50), r)
                                       for r in range(n)]
            self.row_picker.value = self.row
        finally:
            self._fitting = False
        self.row_picker.layout.display = None if n > 1 else "none"

    def _row_changed(self, change):
        if not self._fitting:
            self.row = change["new"]
            self._show()

    def pick_row(self, row):
        """Show row ``row`` of the current batch (reruns nothing); a row the batch lacks: the error readout."""
        try:
            batch_row(self.batch, row)
        except ValueError as e:
            self.show_error(e)
            return
        self.error.value = ""
        self.row_picker.value = row

    def show_error(self, e: ValueError):
        self.error.value = (f'<div style="color:#b00020;border:1px solid #b00020;padding:4px">'
                            f'<b>ValueError:</b> {html.escape(str(e))}</div>')
        self.status.value = ""

    def redraw_tree(self, k, lenience, mag_lenience):
        self.tree_figure = cascade_tree_figure(k, self._cols, lenience=lenience, mag_lenience=mag_lenience,
                                               target=self.fam.target.name)
        show_in_output(self.tree, self.tree_figure)

    # -- the round stepper -----------------------------------------------------------------

    def show_round(self, change=None):
        """Draw round ``round_slider.value`` of the last generation (once per generation and round)."""
        r = self.round_slider.value
        if self.round_key == (self.runs, self.row, r):
            return
        self.round_key = (self.runs, self.row, r)
        self.round_figure = round_figure(self.last, self.fam.tokenizer, r - 1)
        self.round_label.value = f"target round <b>{r}</b> of {self.n_rounds}"
        self.round_prev.disabled, self.round_next.disabled = r <= 1, r >= self.n_rounds
        show_in_output(self.rounds, self.round_figure)

    def _new_rounds(self, g):
        """Fit the stepper to generation ``g``: its number of target rounds, the round kept (clamped)."""
        tops = [e for e in g.events if e.depth == 0]
        self.n_rounds = len(tops)
        if self.runs == 1:  # first run: the first round in which the target rejected a drafted token
            r = next((i for i, e in enumerate(tops) if e.n_accepted < len(e.tokens)), 0) + 1
        else:
            r = min(self.round_slider.value, len(tops))
        self.round_slider.max = max(self.round_slider.max, len(tops))  # never below the value while it moves
        self.round_slider.value = r   # draws (observer) when the round moved
        self.round_slider.max = len(tops)
        self.show_round()             # draws when only the generation changed

    def step(self, delta: int):
        self.round_slider.value = min(max(self.round_slider.value + delta, 1), self.n_rounds)


def live_panel(fam, prompt: str | None = None, method: str = "csd", max_new_tokens: int = 64) -> LivePanel:
    """A :class:`LivePanel` on ``fam`` (a notebook cell that ends with it displays it)."""
    return LivePanel(fam, prompt, method, max_new_tokens)

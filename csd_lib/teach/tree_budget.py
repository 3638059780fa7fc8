"""Notebook 08's tree budget widget: edit csd-tree's budget (nodes per depth) and branch threshold; every
change reruns the generation and redraws one tree round and its attention mask.

Figures go into ``Output`` widgets through :func:`csd_lib.viz.show_in_output` (one widget state change),
never captured with ``with out:``.
"""
from __future__ import annotations

import html

from ..engine.cascade import generate
from ..engine.plan import BRANCH_BELOW, CSD_TREE
from ..engine.tree import ancestors
from ..report.trees import nodes_per_target_call, pick_tree_round
from ..viz.notebook import show_in_output
from ..viz.tree import token_tree_figure, tree_mask_figure


def parse_budget(text: str) -> list[int]:
    """A budget typed as ``2, 2, 2`` or ``[2, 2, 2]``; what is not a list of integers raises ValueError
    (the plan validates the numbers)."""
    parts = [p.strip() for p in str(text).strip().strip("[]").split(",") if p.strip()]
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"bad tree budget {text!r}: type the most nodes per depth as integers, e.g. 2, 2, 2") from None


class TreeBudget:
    """The widget: ``budget`` (Text), ``branch_below`` (slider), ``stats`` and ``error`` (HTML), ``tree`` and
    ``mask`` (Output) showing ``tree_figure`` and ``mask_figure``; ``runs``, ``last`` (the generation) and
    ``round`` (the :class:`csd_lib.report.trees.TreeRound` drawn). Displayed as its ``box``."""

    def __init__(self, fam, prompt: str, max_new_tokens: int = 48, ar=None):
        import ipywidgets as w  # notebook-only: imported when a widget is built
        self.fam, self.prompt, self.max_new_tokens = fam, prompt, max_new_tokens
        self.ar = ar if ar is not None else generate(fam, prompt, "ar", max_new_tokens=max_new_tokens)
        self.runs, self.last, self.round, self.tree_figure, self.mask_figure = 0, None, None, None, None
        self.budget = w.Text(value=", ".join(map(str, CSD_TREE)), description="tree budget",
                             continuous_update=False, style={"description_width": "initial"})
        self.branch_below = w.FloatSlider(value=BRANCH_BELOW, min=0.0, max=1.0, step=0.05, description="branch below",
                                          continuous_update=False, style={"description_width": "initial"})
        self.stats, self.error = w.HTML(""), w.HTML("")
        self.tree, self.mask = w.Output(), w.Output()
        for wd in (self.budget, self.branch_below):
            wd.observe(self.update, names="value")
        self.box = w.VBox([w.HBox([self.budget, self.branch_below]), self.error, self.stats, self.tree, self.mask])
        self.box.add_class("csd-tree-budget")
        self.update()

    def _repr_mimebundle_(self, **kwargs):
        return self.box._repr_mimebundle_(**kwargs)

    def update(self, change=None):
        """Rerun csd-tree with the widget's settings and redraw (a bad setting: the error, nothing redrawn)."""
        try:
            tree = parse_budget(self.budget.value)
            g = generate(self.fam, self.prompt, "csd-tree", tree=tree, branch_below=self.branch_below.value,
                         max_new_tokens=self.max_new_tokens)
        except ValueError as e:
            self.error.value = f'<div style="color:#b00020"><b>ValueError:</b> {html.escape(str(e))}</div>'
            return
        self.error.value = ""
        self.runs, self.last = self.runs + 1, g
        self.round = r = pick_tree_round(g, self.fam.tokenizer)
        calls = g.stats.calls[g.stats.target]
        same = "yes" if g.token_ids == self.ar.token_ids else "no"
        self.stats.value = (f"budget {list(g.plan.tree)}, branch below {g.plan.branch_below:g}: {g.stats.n_tokens} tokens "
                            f"in {calls} target calls ({g.stats.tokens_per_target_call:.2f} tokens per call, "
                            f"{nodes_per_target_call(g):.2f} nodes per call); identical to AR: <b>{same}</b>; "
                            f"drawn: round {r.index + 1}, {html.escape(r.why)}")
        self.tree_figure = token_tree_figure(r.labels, r.parents, r.proposers, r.accepted,
                                             title=f"Round {r.index + 1}, then the target writes {r.next_label}")
        self.mask_figure = tree_mask_figure(ancestors(r.parents), r.labels)
        show_in_output(self.tree, self.tree_figure)
        show_in_output(self.mask, self.mask_figure)


def tree_budget(fam, prompt: str, max_new_tokens: int = 48, ar=None) -> TreeBudget:
    """A :class:`TreeBudget` on ``fam`` (a notebook cell that ends with it displays it)."""
    return TreeBudget(fam, prompt, max_new_tokens, ar)

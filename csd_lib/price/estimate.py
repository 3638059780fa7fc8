"""What a run will cost, priced before it runs.

A few timed calls of every model (:func:`csd_lib.families.family.probe_calls`: a start, then calls scoring
one token and :data:`~csd_lib.families.family.PROBE_BLOCK` tokens; a hub family on the CPU brings its own
from load, on CPU time read at the machine's load) become a :class:`csd_lib.price.costmodel.CostModel` with
``t(n) = a + b n`` and the starts, or a measured cost model is given. Each method's generation is then priced
with :func:`csd_lib.price.pricing.price_plan` (the chain methods; ``csd-tree`` as its chain) or
:func:`csd_lib.price.pricing.price_tree` (``tree-sd``, ``medusa``), the HF baselines as their twins
(``hf-assisted`` as ``sd``, ``hf-pld`` as ``mag``), on an acceptance that says where it comes from: earlier
runs of the family on the task, none for random weights (a shadow accepts almost no draft), else an
assumption (the paper's profile, as ``predict`` assumes it: :mod:`csd_lib.price.forecast`). The engine's own
time between calls is left out: it matters for the tiny families only.
"""
from __future__ import annotations

import numpy as np

from .. import config
from ..engine.cascade import encode_prompt
from ..families.family import PROBE_BLOCK, probe_calls, probe_cpu
from ..measure.acceptance import acceptance_table, complete_table
from ..measure.bench import method_plan, task_k
from ..measure.records import HF_METHODS, read_records
from .costmodel import CallFit, CostModel
from .ewif import tree_for_widths
from .pricing import price_plan, price_tree

PAPER_AT_30 = 0.1       # docs/REFERENCE.md, "Acceptance profile for predict": the share accepted by position 30
ASSUMED_MAG = 0.3       # not published: MaG's rate for every reviewer (the tuner's fill for unmeasured pairs)
ASSUMED_FIRST = 0.7     # a trained drafter's first position when no run says otherwise (the paper's small, Fig. 2)
PROBE_START = 1.0       # the cache start a probe's cost model prices with: its starts hold the prefill
TWINS = {"hf-assisted": "sd", "hf-pld": "mag"}  # an HF baseline is priced as the method it mirrors
N_SIM = 500  # Monte Carlo generations per price: an estimate, not a forecast


def paper_row(first: float, at30: float = PAPER_AT_30, positions: int = 30) -> list[float]:
    """Conditional per-position rates whose cumulative acceptance falls geometrically from
    ``first`` at position 1 to ``at30`` at position 30 (Fig. 2 plots the cumulative share)."""
    r = (at30 / first) ** (1.0 / (positions - 1))
    return [first] + [r] * (positions - 1)


def probe_cost_model(fam, prompt_ids: list[int] | None = None, prompt_tokens: int | None = None) -> CostModel:
    """A cost model from :class:`csd_lib.families.family.CpuProbe` timings: the family's own probe (a hub family
    on the CPU), else one taken now on ``prompt_ids`` (default: the probe's gsm8k-style prompt). Each call costs
    ``a + b n`` through its one-token and block timings; each model's start (T5's encoder, a decoder's prefill,
    which computes logits for its last row only) is the probe's, scaled to ``prompt_tokens``: price with a cache
    start of 1 (:data:`PROBE_START`), so that a prefill is not priced again as a call."""
    probe = fam.cpu_probe if prompt_ids is None else None
    if probe is None:
        probe = probe_calls(fam.models, prompt_ids) if prompt_ids is not None else \
            probe_cpu(fam.models, fam.tokenizer, fam.prompt_style)
    scale, wall = (prompt_tokens or probe.prompt_tokens) / probe.prompt_tokens, probe.wall_per_second()
    forward, start = {}, {}
    for lm in fam.models:
        step, block = wall * probe.step[lm.name], wall * probe.block[lm.name]
        b = max(0.0, (block - step) / (PROBE_BLOCK - 1))
        forward[lm.name] = CallFit([step - b, b, 0.0, 0.0, 0.0])
        start[lm.name] = max(0.0, wall * probe.start[lm.name] - step) * scale
    busy = f" (CPU time x {wall:.1f}, the machine's load per core)" if probe.clock == "cpu" and wall > 1 else ""
    return CostModel(fam.name, str(fam.target.device), forward, start=start,
                     env={"source": f"a probe of {len(fam.models)} model(s){busy}"})


def run_acceptance(fam, task: str | None = None, records: list[dict] | None = None) -> tuple[dict, str]:
    """({(reviewer, proposer): rates}, where it comes from) for pricing ``fam``'s runs: ``records`` (earlier
    runs) or the committed results of ``fam`` on ``task``, else none accepted for random weights, else assumed."""
    levels = ["target", *[d.name for d in fam.drafters], "mag"]
    pairs = [(r, p) for i, r in enumerate(levels) for p in levels[i + 1:]]
    path = config.RESULTS_DIR / f"{fam.name}-{task}.jsonl"
    if not records and task and path.is_file() and not fam.random_weights:
        records = read_records(path)
    stats = [r["stats"] for r in records or [] if "error" not in r and r["stats"].get("acceptance")]
    if stats:
        return complete_table(acceptance_table(stats, min_reached=1), levels), f"the acceptance of {len(stats)} earlier runs"
    if fam.random_weights:
        return {pair: [0.0] for pair in pairs}, "no draft accepted (random weights)"
    table = {(r, p): [ASSUMED_MAG] if p == "mag" else paper_row(ASSUMED_FIRST) for r, p in pairs}
    return table, (f"an assumed acceptance ({ASSUMED_FIRST} at a draft's first token falling to {PAPER_AT_30} by its "
                   f"30th; MaG {ASSUMED_MAG})")


def _tree_seconds(plan, table: dict, cm: CostModel, tokens: int, cache_start: float) -> float:
    """A tree method's generation: the starts, then one tree a step (:func:`csd_lib.price.pricing.price_tree`)."""
    drafter = plan.drafters[0] if plan.drafters else "mag"  # medusa's heads cost next to nothing, as MaG
    row = table.get(("target", drafter), [0.0])
    rates = [[row[min(d, len(row) - 1)]] for d in range(len(plan.tree))]
    L = cache_start + tokens / 2
    step = price_tree(tree_for_widths(rates, plan.tree), rates, cm, drafter, L)["cost_per_token"]
    starts = sum(cm.start.get(n, 0.0) + (float(cm.forward[n](cache_start, 0)) if cache_start > 1 else 0.0)
                 for n in ["target", *([drafter] if drafter in cm.forward else [])])
    return starts + tokens * step


def method_seconds(fam, methods, max_new_tokens: int, cost_model: CostModel, table: dict, cache_start: float,
                   k=None, lenience=None, sd_k=None, mag_lenience=None) -> dict[str, float]:
    """{method: seconds of one generation of ``max_new_tokens`` tokens} with a bench's settings (its plans:
    :func:`csd_lib.measure.bench.method_plan`), priced on ``cost_model`` and ``table``; a method the family
    cannot run (e.g. a tree method on a T5 target) costs 0: the bench writes its error line at once."""
    out = {}
    for m in dict.fromkeys(methods):
        try:
            plan = method_plan(fam, TWINS.get(m, m), k, lenience, sd_k, mag_lenience)
        except ValueError:
            out[m] = 0.0
            continue
        if plan.tree and plan.method != "csd-tree":
            out[m] = _tree_seconds(plan, table, cost_model, max_new_tokens, cache_start)
        else:
            p = price_plan(plan, table, cost_model, max_new_tokens, cache_start, n_sim=N_SIM)
            out[m] = max_new_tokens / p["tokens_per_s"]
    return out


def bench_prices(fam, examples, methods, max_new_tokens: int, k=None, lenience=None, sd_k=None, mag_lenience=None,
                 cost_model: CostModel | None = None, records: list[dict] | None = None) -> tuple[dict[str, float], str]:
    """({method: predicted seconds of one bench run at ``max_new_tokens``}, how they were priced) for a bench
    of ``examples`` (their mean prompt length); ``records``: the results file's earlier lines, if any."""
    k, sd_k = task_k(fam, examples, k, sd_k)
    lengths = [len(encode_prompt(fam, ex.prompt)) for ex in examples]
    prompt = float(np.mean(lengths)) if lengths else 100.0
    cm = cost_model or probe_cost_model(fam, prompt_tokens=round(prompt))
    table, accepted = run_acceptance(fam, examples[0].task if len(examples) else None, records)
    start = PROBE_START if cost_model is None or fam.target.is_encoder_decoder else prompt
    prices = method_seconds(fam, methods, max_new_tokens, cm, table, start, k, lenience, sd_k, mag_lenience)
    how = "the cost model given" if cost_model is not None else cm.env["source"]
    twins = [m for m in prices if m in HF_METHODS]
    note = (f"priced from {how} and {accepted}" + (f"; {', '.join(twins)} as {', '.join(TWINS[m] for m in twins)}"
                                                   if twins else "") + ", without the engine's time between calls")
    return prices, note


def generation_seconds(fam, prompts: list[str], method: str, max_new_tokens: int, k=None) -> tuple[float, str]:
    """(seconds of one generation by ``method`` of a prompt of ``prompts``' mean length, how it was priced), as
    ``generate(fam, prompt, method, k=k)`` runs it (the tree budget and lenience at their defaults)."""
    lengths = [len(encode_prompt(fam, p)) for p in prompts]
    prompt = sum(lengths) / len(lengths)
    cm = probe_cost_model(fam, prompt_tokens=round(prompt))
    table, accepted = run_acceptance(fam)
    chain_k = k if method in ("csd", "csd-tree") else None
    sd_k = k if method in ("sd", "tree-sd") else None
    one = method_seconds(fam, [method], max_new_tokens, cm, table, PROBE_START, k=chain_k, sd_k=sd_k)[method]
    return one, f"priced from {cm.env['source']} and {accepted}"

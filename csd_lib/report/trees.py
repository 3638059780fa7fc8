"""Notebook 08's pieces: the paper's Table 3, one tree review read from a generation's event log, and
a Table 3-style comparison of the linear and tree methods from committed records or a live run.

A tree round is a target review (``Event.depth == 0``) whose ``parents`` describe the tree the
target scored in one call (csd_lib/engine/tree.py); ``path`` is what it kept.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import config
from ..engine.cascade import generate
from ..engine.generation import Event, Generation
from ..engine.methods import CSD, CSD_TREE, SD
from ..measure.records import as_records, base_method, fastest, read_records, stored
from ..price.predict import round_price
from .bench_stats import pair_ratio, ratios
from .claims import NOT_CHECKED
from .intervals import Difference, paired_difference
from .compare import method_difference
from .summary import summarize

# The paper's Table 3: Vicuna-7B, tokens per second on an A40, (GSM8K, MMLU) (docs/REFERENCE.md).
PAPER_TABLE3 = {"ar": (33.34, 33.11), "sd": (44.31, 43.65), "csd": (56.72, 55.60),
                "medusa": (61.87, 56.19), "csd-tree": (63.81, 63.37)}
# The comparison's methods, linear first; tree-sd (the drafter alone builds the tree) is this workbook's.
TABLE3_METHODS = ("ar", "sd", "csd", "medusa", "csd-tree", "tree-sd")
# The decoder-only embedded family that shows the tree material beside a T5 family.
TREE_SIDE = "tiny-llama"


def paper_table3() -> list[dict]:
    """The paper's Table 3 as rows: tokens/s on GSM8K and MMLU and each one's speedup over AR."""
    ar = PAPER_TABLE3["ar"]
    return [{"method": m, "GSM8K tok/s": g, "MMLU tok/s": u, "GSM8K x AR": g / ar[0], "MMLU x AR": u / ar[1]}
            for m, (g, u) in PAPER_TABLE3.items()]


def takes_trees(fam) -> bool:
    """Whether the family's target can score a token tree in one call (decoder-only targets)."""
    return not fam.target.is_encoder_decoder


def applies_says(fam) -> str:
    """What of the tree methods applies to ``fam``, as a sentence for a notebook."""
    if takes_trees(fam):
        return (f"`{fam.name}` has a decoder-only target: it scores a token tree in one call, so every tree "
                f"method runs on it and the rest of this notebook uses it.")
    return (f"`{fam.name}` has an encoder-decoder (T5) target. T5's decoder adds a relative position bias computed "
            f"from each token's index in the fed sequence, not from position ids, so the siblings of a tree would "
            f"see their ancestors at wrong distances and no attention mask can fix that (docs/REFERENCE.md, tree "
            f"attention); the engine refuses the tree methods on it. The linear methods and the cascade apply as in "
            f"notebooks 00-07; the tree material below runs on the decoder-only `{TREE_SIDE}`, loaded beside it.")


def target_rounds(g: Generation) -> list[Event]:
    """The target's reviews of a generation, in order (one target call each)."""
    return [e for e in g.events if e.depth == 0]


def nodes_per_target_call(g: Generation) -> float:
    """Drafted tokens (tree nodes, or a chain's tokens) the target scored per target call (NaN: no call)."""
    return g.stats.nodes_per_target_call if g.stats.calls.get(g.stats.target, 0) else math.nan


@dataclass
class TreeRound:
    """One target tree review, ready to draw: node labels, parents, who drafted each, the kept path."""
    index: int              # the round among the target's reviews (0-based)
    event: Event
    labels: list[str]
    parents: list[int]
    proposers: list[str]
    accepted: list[int]
    next_label: str         # the target's own token after the path
    why: str                # how the round was picked


def pick_tree_round(g: Generation, tokenizer) -> TreeRound:
    """The first target round whose tree branches and whose target rejected a node, else the first that
    branches, else the first with the most nodes; a ValueError when ``g`` has no tree round."""
    rounds = [(i, e) for i, e in enumerate(target_rounds(g)) if e.parents]
    if not rounds:
        raise ValueError(f"generation of method {g.method!r} has no tree review; run a tree method (csd-tree)")

    def branches(e):
        return any(b > 0 for b in e.branch)

    pick = next(((i, e, "the first round whose tree branches and whose target rejected a node")
                 for i, e in rounds if branches(e) and len(e.path) < len(e.tokens)), None) or \
        next(((i, e, "the first round whose tree branches (no branching round had a rejection)")
              for i, e in rounds if branches(e)), None) or \
        (*max(rounds, key=lambda r: len(r[1].tokens)), "the round with the most nodes (no tree branched)")
    i, e, why = pick
    word = (lambda t: repr(tokenizer.decode([t]))) if tokenizer is not None else str
    return TreeRound(i, e, [word(t) for t in e.tokens], list(e.parents), list(e.proposers), list(e.path),
                     word(e.next_token), why)


def trees_path(family_name: str, task: str) -> Path:
    """Where a committed Table 3 run of ``family_name`` on ``task`` lives."""
    return config.RESULTS_DIR / f"{family_name}-{task}-trees.jsonl"


def live_records(fam, examples, methods, max_new_tokens: int) -> list[dict]:
    """One greedy generation per (example, method) as bench-style records, after one short warm-up run per
    method."""
    for m in methods:  # the first calls of a new shape are slow
        generate(fam, examples[0].prompt, m, max_new_tokens=8)
    out = []
    for i, ex in enumerate(examples):
        for m in methods:
            g = generate(fam, ex.prompt, m, max_new_tokens=max_new_tokens)
            out.append(dict(example=i, method=m, family=fam.name, task=ex.task, max_new_tokens=max_new_tokens,
                            token_ids=g.token_ids, stats=g.stats.to_dict(), plan=g.plan.to_dict(),
                            provenance=g.provenance_counts(), commit_times=g.commit_times))
    return out


def table3_records(fam, examples, methods, max_new_tokens: int, path: Path | None = None) -> tuple[list[dict], str]:
    """The comparison's records and where they came from: the committed file at ``path`` when it exists,
    else a live run of ``methods`` on ``examples`` (:func:`live_records`)."""
    if path is not None and stored(path) is not None:  # the plain file, or its packed copy
        return read_records(path), f"the committed run `{stored(path).name}`"
    return (live_records(fam, examples, methods, max_new_tokens),
            f"a live run on {len(examples)} prompts (no committed `{Path(path).name if path else 'trees'}` file yet)")


def table3_rows(records) -> list[dict]:
    """Per method: tokens/s, the median per-example speedup over AR with its 95% interval, tokens and drafted
    nodes per target call, and mismatches against AR (records: fastest repeat per example)."""
    summary = summarize(records)
    best = fastest(records)
    rows = []
    for m, s in summary.items():
        recs = list(best.get(m, {}).values())
        calls = sum(r.stats["calls"].get("target", 0) for r in recs)
        nodes = [r.stats["nodes"].get(r.stats.get("target", "target"), 0) if "nodes" in r.stats else None
                 for r in recs]  # Stats.nodes: drafted tokens or tree nodes the target scored (None: not recorded)
        lo, hi = s["speedup_walltime_ci95"]
        rows.append({"method": m, "n": s["n"], "tok/s": s["tokens_per_s"], "x AR (median)": s["speedup_walltime_median"],
                     "95% interval": f"[{lo:.2f}, {hi:.2f}]", "tokens / target call": s["mean_tokens_per_target_call"],
                     "nodes / target call": sum(nodes) / calls if calls and None not in nodes else math.nan,
                     "mismatches": s["mismatches"]})
    return rows


def speedup_difference(records, a: str, b: str) -> Difference:
    """Mean over prompts of the per-example walltime speedup over AR, method ``a`` minus method ``b``."""
    ra, rb = ratios(fastest(as_records(records)), a), ratios(fastest(as_records(records)), b)
    common = sorted(set(ra) & set(rb))
    return paired_difference([ra[i] for i in common], [rb[i] for i in common])


def table3_differences(records) -> dict[str, Difference]:
    """The claims of Table 3 on these records: csd-tree against csd and sd, in tokens per target call and in
    walltime speedup over AR (only the pairs whose methods both ran)."""
    ran = {r.method for r in as_records(records) if r.ok}
    out = {}
    tree = CSD_TREE.name
    for b in (CSD.name, SD.name):
        if {tree, b} <= ran:
            out[f"{tree}-vs-{b}-tokens-per-target-call"] = method_difference(records, tree, b)
            out[f"{tree}-vs-{b}-speedup"] = speedup_difference(records, tree, b)
    return out


def table3_says(diffs: dict[str, Difference], family, source: str) -> str:
    """The comparison in words (directions only beyond the 95% interval), with the paper's ordering judged
    on walltime: ``holds``, ``broken``, ``not settled``, or ``not checked: random weights`` (family's weights)."""
    if not diffs:
        return f"On {source} csd-tree did not run beside csd or sd: nothing to compare."
    parts = []
    for b, name in (("csd", "CS Drafting"), ("sd", "SD (the family's k)")):
        tpc, spd = diffs.get(f"csd-tree-vs-{b}-tokens-per-target-call"), diffs.get(f"csd-tree-vs-{b}-speedup")
        if tpc is None:
            continue
        verdict = NOT_CHECKED if family.random_weights else spd.claim(1)
        parts.append(f"Against {name}, CS Drafting + tree gets {tpc.says('more', 'fewer', 'about as many', digits=2)} "
                     f"tokens per target call, and its walltime speedup over AR is "
                     f"{spd.says('higher', 'lower', 'no different beyond the noise', digits=2)}; the paper's ordering "
                     f"(CS Drafting + tree faster) on this run: **{verdict}**.")
    return f"On {source}: " + " ".join(parts)


# The goal of the Table 3 run on the embedded family (median per-example walltime ratio, lower 95% bound).
TREE_GOAL, TREE_GOAL_LO = 1.2, 1.1


def best_sd_label(records) -> str | None:
    """The SD of a run with the highest median per-example speedup over AR, among ``sd`` and ``sd@K`` (SD at another
    draft length in the same run); None when no SD ran."""
    best = fastest(as_records(records))
    sds = [m for m in best if base_method(m) == SD.name]
    med = {m: float(np.median(list(ratios(best, m).values()) or [math.nan])) for m in sds}
    return max(sds, key=lambda m: -math.inf if math.isnan(med[m]) else med[m]) if sds else None


def _sd_k(records, label: str):
    return next((r.plan.k[0][0] for r in as_records(records) if r.method == label and r.plan), "?")


def _sd_name(records, label: str) -> str:
    """'the best SD (k = 2; SD ran at k = 16, 2)'."""
    sds = dict.fromkeys(r.method for r in as_records(records) if base_method(r.method) == SD.name)
    ks = ", ".join(str(_sd_k(records, m)) for m in sds)
    return f"the best SD (k = {_sd_k(records, label)}" + (f"; SD ran at k = {ks})" if len(sds) > 1 else ")")


def table3_goals(records) -> list[tuple[str, str, str, bool | None, str]]:
    """The Table 3 run's goals as (goal, measured, target, met, note) rows, each a median over examples of one
    method's walltime over CS Drafting + tree's with its bootstrap 95% interval: over the best SD
    (:func:`best_sd_label`) at least ``TREE_GOAL`` with the lower bound at least ``TREE_GOAL_LO``; above CS Drafting
    and above Medusa, a direction only beyond the interval (else a tie, not met). A comparison whose method did not
    run says so (met: None)."""
    ran = {r.method for r in as_records(records) if r.ok}
    sd = best_sd_label(records)
    out = []
    for other, name in ((sd, _sd_name(records, sd) if sd else "SD"), ("csd", "CS Drafting"), ("medusa", "Medusa")):
        goal = f"CS Drafting + tree over {name}: median per-example walltime ratio"
        need = f">= {TREE_GOAL}x, lower CI >= {TREE_GOAL_LO}" if other == sd else "> 1x beyond the 95% interval"
        if CSD_TREE.name not in ran or other not in ran:
            missing = "CS Drafting + tree" if CSD_TREE.name not in ran else name.split(" (")[0]
            out.append((goal, "-", need, None, f"{missing} did not run in this file"))
            continue
        r, (lo, hi) = pair_ratio(records, other, "csd-tree")  # other's walltime over csd-tree's
        if other == sd:
            ok, note = r >= TREE_GOAL and lo >= TREE_GOAL_LO, ""
        else:
            ok = lo > 1
            note = "faster" if ok else "slower" if hi < 1 else "tie: the interval holds 1"
        out.append((goal, f"{r:.2f}x [{lo:.2f}–{hi:.2f}]", need, ok, note))
    return out


def table3_limit(records, cost_model, n_sim: int = 2000) -> str:
    """Why CS Drafting + tree misses its goal over the best SD, priced on whole rounds (drafting and the target's
    review) by the cost model on each method's own acceptance (:func:`csd_lib.price.predict.round_price`), beside
    the measured tokens and nodes per target call: a sentence; "" when the goal is met, did not run, or there is
    no cost model."""
    goal = next(iter(table3_goals(records)), None)
    sd = best_sd_label(records)
    if goal is None or goal[3] is not False or cost_model is None or sd is None:
        return ""
    best = fastest(as_records(records))
    rows = {r["method"]: r for r in table3_rows(records)}
    t, s = (round_price(list(best[m].values()), cost_model, n_sim) for m in ("csd-tree", sd))
    mt, ms = rows["csd-tree"], rows[sd]

    def said(p):
        return (f"{1e3 * p['round_s']:.2f} ms (drafting {1e3 * p['draft_s']:.2f} ms, the target's review "
                f"{1e3 * p['verify_s']:.2f} ms) for {p['tokens']:.2f} tokens, {1e3 * p['per_token_s']:.2f} ms a token")
    return (f"by the cost model, on each method's own acceptance, a CS Drafting + tree round costs {said(t)}; a "
            f"round of SD at k = {_sd_k(records, sd)} costs {said(s)}: CS Drafting + tree priced at "
            f"{s['per_token_s'] / t['per_token_s']:.2f}x SD's speed (goal {TREE_GOAL}x). Measured per target call: "
            f"{mt['tokens / target call']:.2f} against {ms['tokens / target call']:.2f} tokens, "
            f"{mt['nodes / target call']:.1f} against {ms['nodes / target call']:.1f} nodes verified.")

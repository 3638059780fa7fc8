"""Algorithm 1 (Cascade Speculative Drafting) and the methods built from it.

Every drafter answers ``propose(ctx, prefix, cap, depth) -> Block``:

- ``MaGLevel``: the statistical bottom, proposes ``n`` tokens with one-hot ``q``;
- ``Level``: a model that reviews what its sub-drafters propose, then returns the
  accepted prefix plus one token of its own. A ``Level`` with no sub-drafters decodes one
  token autoregressively, so ``ar``, ``sd``, ``mag``, ``staged`` and ``csd`` are all
  the same object with different sub-drafters.

K holds increments (docs/REFERENCE.md): the level reviewed with row ``K[i]`` lets sub-drafter
``j`` propose until the draft holds at least ``K[i][i] + ... + K[i][j]`` tokens. The
sub-cascade below drafter ``i`` uses ``K[i+1:, i+1:]``.
"""
from __future__ import annotations

import numpy as np
import torch

from .generation import Generation
from .inputs import check_family, check_prompt, check_prompt_length, check_room
from .levels import Block, Ctx, Drafter, Level, MaGLevel
from .mag import MaG
from .models import LM
from .methods import CASCADE, DRAFTER, HEADS, get
from .plan import MAG, MAG_LENIENCE, METHODS, Plan, make_plan, validate_k
from .policy import DraftLength
from .prompts import prompt_ids
from .stats import Stats
from .tree_methods import CSDTree, MedusaTop, TreeSD, TreeTop

__all__ = ["METHODS", "Ctx", "Block", "Drafter", "MaGLevel", "Level", "build_cascade", "encode_prompt", "generate",
           "row_policies", "run_plan"]


# -- building a cascade from a plan ---------------------------------------------------

def build_cascade(target: LM, drafters: list, k, lenience: float = 1.0, mag_lenience: bool = MAG_LENIENCE,
                  policies: list[DraftLength] | None = None) -> Level:
    """Algorithm 1 as a tree of drafters. ``drafters`` are largest first; MaG may only be last.

    ``mag_lenience=False`` reviews MaG's tokens strictly (the paper, Appendix B): lenience only
    between neural drafters. ``policies``: one draft-length policy per row of K (:func:`row_policies`;
    None: K as given).
    """
    n = len(drafters)
    for i, d in enumerate(drafters):
        if isinstance(d, MaG) and i != n - 1:
            raise ValueError("MaG is the bottom of the cascade: it may only be the last drafter")
    if n == 0:
        return Level(target, [], [], top=True)
    k = validate_k(k, n)
    rows = list(policies) if policies else [None] * n  # rows[r]: the level that reviews with K[r]
    levels: list = [None] * n
    for i in reversed(range(n)):
        d = drafters[i]
        if isinstance(d, MaG):
            levels[i] = MaGLevel(d, target.vocab_size)
        else:
            levels[i] = Level(d, levels[i + 1:], k[i + 1][i + 1:] if i + 1 < n else [], lenience,
                              mag_lenience=mag_lenience, policy=rows[i + 1] if i + 1 < n else None)
    return Level(target, levels, k[0], top=True, policy=rows[0])


def row_policies(plan: Plan) -> list[DraftLength]:
    """The plan's draft-length policy of each K row (row 0: the target's; row ``r``: drafter ``r - 1``'s), with
    that row's running K sums and, for ewif, its sub-drafters' call costs relative to the row's reviewer."""
    out = []
    for r, kind in enumerate(plan.draft_policy):
        own = 1.0 if r == 0 or not plan.draft_costs else plan.draft_costs[r - 1]
        costs = [c / own for c in plan.draft_costs[r:]]
        out.append(DraftLength(kind, np.cumsum(plan.k[r][r:]).tolist(), plan.confidence, costs))
    return out


def build_tree_top(target: LM, plan: Plan, drafters: list, medusa=None) -> TreeTop:
    """The target level of a tree method's ``plan``: ``drafters`` as :func:`build_cascade` takes them,
    ``medusa`` the target's Medusa heads (the :data:`~csd_lib.engine.methods.HEADS` tree only)."""
    tree = get(plan.method).tree
    if tree == HEADS:
        return MedusaTop(target, medusa, plan.tree)
    if tree == DRAFTER:
        return TreeSD(target, [Level(drafters[0], [], [])], plan.tree, plan.branch_below)
    assert tree == CASCADE, tree
    chain = build_cascade(target, drafters, [list(r) for r in plan.k], plan.lenience, plan.mag_lenience)
    mag = next((d for d in drafters if isinstance(d, MaG)), None)
    return CSDTree(target, chain.subs, plan.tree, plan.branch_below, chain.budgets, mag)


def encode_prompt(family, prompt) -> list[int]:
    """Token ids of a prompt given as text (``prompts.prompt_ids``, the family's prompt style) or ids."""
    prompt = check_prompt(prompt, check_family(family).target.vocab_size)
    ids = prompt_ids(family.tokenizer, prompt, family.prompt_style) if isinstance(prompt, str) else prompt
    if not ids:
        raise ValueError("the prompt is empty; pass at least one token")
    return check_prompt_length(ids, [family.target, *family.drafters])


def generate(family, prompt, method: str = "csd", k=None, lenience=None, temperature: float = 0.0,
             seed: int | None = None, max_new_tokens: int = 200, drafter: str | None = None,
             naive: bool = False, mag_lenience: bool | None = None, tree=None,
             branch_below: float | None = None, draft_policy=None, confidence: float | None = None,
             draft_costs=None) -> Generation:
    """Generate with one of ``ar``, ``sd``, ``mag``, ``staged``, ``csd`` or the tree methods ``tree-sd``,
    ``medusa``, ``csd-tree`` (``tree``: the tree budget, nodes per depth; ``branch_below``: where a drafter
    adds its second choice; :func:`csd_lib.engine.plan.make_plan`).

    Greedy when ``temperature == 0``. ``naive=True`` makes upper levels review against
    the drafters' raw distributions instead of the effective ones: a deliberately
    biased variant, kept to show what exactness needs. ``mag_lenience`` (csd only): whether
    lenience also applies to MaG's tokens (None: the default, ``plan.MAG_LENIENCE``). ``draft_policy`` (fixed,
    schedule, confidence or ewif, or one per K row), ``confidence`` and ``draft_costs``: how far each round drafts
    (:mod:`csd_lib.engine.policy`). The settings become a
    :class:`csd_lib.engine.plan.Plan` (:func:`csd_lib.engine.plan.make_plan`), kept in ``Generation.plan``.
    """
    check_family(family)
    plan = make_plan(family, method, k, lenience, drafter, temperature, max_new_tokens, seed, naive, mag_lenience,
                     tree=tree, branch_below=branch_below, draft_policy=draft_policy, confidence=confidence,
                     draft_costs=draft_costs)
    ids = encode_prompt(family, prompt)
    return run_plan(family, plan, ids)


def run_plan(family, plan: Plan, ids: list[int]) -> Generation:
    """Algorithm 1 on prompt token ids ``ids`` as ``plan`` says."""
    target, max_new_tokens = family.target, plan.max_new_tokens
    check_room(target, ids, max_new_tokens)
    by_name = {d.name: d for d in family.drafters}
    drafters = [family.mag if name == MAG else by_name[name] for name in plan.drafters]
    method = get(plan.method, engine=True)
    if method.is_tree:
        top = build_tree_top(target, plan, drafters, getattr(family, "medusa", None))
    else:
        top = build_cascade(target, drafters, [list(r) for r in plan.k], plan.lenience, plan.mag_lenience,
                            row_policies(plan))
    gen = None
    if plan.temperature > 0:
        gen = torch.Generator(device="cpu")  # samples do not depend on the device
        gen.manual_seed(plan.seed) if plan.seed is not None else gen.seed()
    eos = target.eos_token_id
    eos = eos[0] if isinstance(eos, (list, tuple)) else eos
    ctx = Ctx(ids, plan.temperature == 0, plan.temperature, gen, eos, plan.naive,
              branch_below=plan.branch_below if method.tree == CASCADE else 0.0)
    levels = _levels(top)
    lms = [lv.lm for lv in levels]
    clock = target.meter.clock  # the models' own clock (wall by default): forward and total times agree
    t0 = clock()
    for lv in levels:
        lv.start(ids)
    out: list[int] = []
    prov: list[str] = []
    times: list[float] = []  # commit time of each output token, on the same clock as ``wall``
    branch: list[int] = []
    while len(out) < max_new_tokens:
        blk = top.propose(ctx, out, max_new_tokens - len(out))
        out += blk.tokens
        prov += blk.provenance
        times += [clock() - t0] * len(blk.tokens)
        branch += blk.branch or [0] * len(blk.tokens)
        if blk.eos:
            break
    wall = clock() - t0
    for lm in lms:
        lm.release()
    assert len(out) <= max_new_tokens and (eos not in out[:-1])
    stats = Stats(len(out), wall, {lm.name: lm.meter.calls for lm in lms},
                  {lm.name: lm.meter.time for lm in lms}, {lm.name: lm.n_params for lm in lms},
                  ctx.acceptance, target=target.name, previous_work_costs=dict(family.previous_work.costs),
                  nodes={lm.name: lm.meter.nodes for lm in lms})
    if MAG in plan.drafters:
        stats.calls[MAG] = ctx.mag_calls
        stats.params[MAG] = 0
    text = family.tokenizer.decode(out, skip_special_tokens=True) if family.tokenizer is not None else ""
    return Generation(text, out, prov, ctx.events, stats, plan.method, plan, commit_times=times, branch=branch)


def _levels(top: Level) -> list[Level]:
    """Every model level in a cascade tree, each once, target first."""
    seen: list[Level] = []
    stack = [top]
    while stack:
        lv = stack.pop(0)
        if isinstance(lv, Level) and all(lv is not s for s in seen):
            if any(lv.lm is s.lm for s in seen):
                raise ValueError(f"model '{lv.lm.name}' appears twice in the cascade; give each level "
                                 f"its own LM adapter (they may share weights)")
            seen.append(lv)
            stack.extend(lv.subs)
    return seen

"""One typed plan of a generation: method, drafters, K, lenience, MaG's block and the run settings.

A :class:`Plan` is built once (:func:`make_plan` from a family and the user's arguments, or
:meth:`Plan.sd` / :meth:`Plan.csd` / ... without a family, for theory), then read by the
engine (:func:`csd_lib.engine.cascade.generate`), stored in :class:`csd_lib.engine.generation.Generation` and in
benchmark records as is, and priced by :func:`csd_lib.price.ewif.predict_speedup`. The validators of
every user-facing setting live here too, so that bad input fails before anything loads.

K holds increments (docs/REFERENCE.md): row ``i`` is used when ``drafters[i:]`` draft for the
level above; MaG, when present, is the last drafter and proposes ``mag_block`` tokens per call.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from .methods import ALL, CASCADE, DRAFTER, HEADS, REFERENCE, get, names
from .policy import CONFIDENCE, FIXED, POLICIES

METHODS = names(engine=True, default=True, tree=False)  # linear drafts: every family runs them
TREE_METHODS = names(tree=True)                           # token trees, decoder-only targets (engine/tree.py)
ENGINE_METHODS = METHODS + TREE_METHODS

# MaG's name as a drafter in a plan (the last drafter when present) and as a proposer of tokens.
MAG = "mag"

# A tree method's drafters add a second choice at a node where their first has probability below this.
BRANCH_BELOW = 0.8
# Tree budget (nodes per depth) of tree-sd, as (width,) * SD's k, and of csd-tree (branches at these
# depths; the cascade's main chain goes on below them, one node per depth).
TREE_WIDTH = 2
CSD_TREE = (2, 2, 2)

# Most tokens MaG proposes per call in the official code (docs/REFERENCE.md): MaG's default block.
MAG_BLOCK = 10
# Whether a lenient review applies l to MaG's tokens too. False is the paper's rule (Appendix B:
# lenience only between neural drafters); docs/REFERENCE.md gives the measured difference.
MAG_LENIENCE = False


# -- validators ------------------------------------------------------------------------

def _is_number(x) -> bool:
    return not isinstance(x, (bool, np.bool_)) and isinstance(x, (int, float, np.integer, np.floating))


def check_lenience(lenience) -> float:
    """A finite number >= 1, as a float."""
    if not _is_number(lenience) or not np.isfinite(lenience) or lenience < 1:
        raise ValueError(f"lenience must be a finite number >= 1 (1 = strict review), got {lenience!r}")
    return float(lenience)


def check_temperature(temperature) -> float:
    """A finite number >= 0 (0 = greedy), as a float."""
    if not _is_number(temperature) or not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {temperature!r}")
    return float(temperature)


def check_seed(seed) -> int | None:
    """None (a fresh random seed) or an integer in [0, 2**64)."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 64:
        raise ValueError(f"seed must be an integer in [0, 2**64) or None (a fresh random seed), got {seed!r}")
    return int(seed)


def check_max_new_tokens(max_new_tokens) -> int:
    """An integer >= 1."""
    if isinstance(max_new_tokens, (bool, np.bool_)) or not isinstance(max_new_tokens, (int, np.integer)) \
            or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    return int(max_new_tokens)


def check_batch_size(batch_size) -> int:
    """An integer >= 1: the most prompts generated at once (csd_lib.engine.batch)."""
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size (prompts generated at once) must be an integer >= 1, got {batch_size!r}")
    return int(batch_size)


def check_method(method) -> str:
    """A method name the engine runs (:mod:`csd_lib.engine.methods`)."""
    get(method, engine=True)
    return method


def check_tree_budget(tree, method: str) -> tuple[int, ...]:
    """A tree budget: nodes per depth, a non-empty list of integers >= 1 (tree methods only)."""
    if not get(method).is_tree:
        if tree not in (None, (), []):
            raise ValueError(f"a tree budget (got tree={tree!r}) is for the tree methods "
                             f"{', '.join(names(tree=True))}; method {method!r} drafts a chain: leave it unset")
        return ()
    given = tree
    if isinstance(tree, str):
        try:
            tree = json.loads(tree)
        except json.JSONDecodeError:
            tree = None
    if isinstance(tree, (int, np.integer)) and not isinstance(tree, bool):
        tree = [tree]
    if not isinstance(tree, (list, tuple)) or not tree or any(
            isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1 for v in tree):
        raise ValueError(f"bad tree budget {given!r}: the tree budget is the most nodes per depth, a non-empty "
                         f"list of integers >= 1, e.g. [2, 2, 1] (two nodes at depths 1 and 2, one at depth 3)")
    return tuple(int(v) for v in tree)



def check_branch_below(x) -> float:
    """A probability in [0, 1]: a drafter branches where its first choice has less."""
    if not _is_number(x) or not 0 <= x <= 1:
        raise ValueError(f"branch_below must be a probability in [0, 1] (a drafter adds its second choice "
                         f"where its first has less; 0: never), got {x!r}")
    return float(x)


def check_method_lenience(method: str, lenience) -> float | None:
    """Validate a lenience for ``method``: only the lenient methods (csd, csd-tree) have draft-to-draft reviews."""
    m = get(method, engine=True)
    if lenience is None:
        return None
    lam = check_lenience(lenience)
    if not m.lenient and lam != 1:
        raise ValueError(f"method {method!r} reviews without lenience (it has no draft-to-draft review), "
                         f"got lenience={lenience!r}; leave lenience unset, or use method='csd' for lenient "
                         f"draft-to-draft reviews")
    return lam


def check_mag_lenience(mag_lenience) -> bool:
    """A bool: True applies lenience to MaG's tokens too, False reviews them strictly (the paper)."""
    if not isinstance(mag_lenience, (bool, np.bool_)):
        raise ValueError(f"mag_lenience must be True (lenience on MaG's tokens too) or False (MaG's tokens "
                         f"reviewed strictly, the paper's rule), got {mag_lenience!r}")
    return bool(mag_lenience)


def check_naive(naive) -> bool:
    """A bool: True reviews against the drafters' raw distributions (the biased variant)."""
    if not isinstance(naive, (bool, np.bool_)):
        raise ValueError(f"naive must be True (review against raw drafter distributions, the biased variant) "
                         f"or False (exact), got {naive!r}")
    return bool(naive)


def check_draft_policy(policy, method: str, rows: int | None = None) -> tuple[str, ...]:
    """A draft-length policy (:mod:`csd_lib.engine.policy`): one name for every level, or one per K row (row 0:
    the target's review); as one name per row when ``rows`` is given, else as given."""
    names_ = [policy] if isinstance(policy, str) else list(policy) if isinstance(policy, (list, tuple)) else None
    if names_ == [] and rows == 0:  # a plan without drafters has no K row
        return ()
    if not names_ or any(not isinstance(p, str) or p not in POLICIES for p in names_):
        raise ValueError(f"bad draft policy {policy!r}: give one of {', '.join(POLICIES)} (every level), or a list "
                         f"of them, one per row of K (the target's review first)")
    m = get(method, engine=True)
    if any(p != FIXED for p in names_) and (m.is_tree or not m.takes_k):
        why = "reviews a token tree whose budget is set per depth (docs/REFERENCE.md)" if m.is_tree else "drafts nothing"
        raise ValueError(f"method {method!r} {why}: it takes only the draft policy {FIXED!r}, got {policy!r}")
    if "confidence" in names_ and m.neural == 0:
        raise ValueError(f"the confidence policy stops a neural drafter's block; method {method!r} drafts with MaG "
                         f"alone, which has no probabilities: use fixed, schedule or ewif")
    if rows is None:
        return tuple(names_)
    if len(names_) not in (1, rows):
        raise ValueError(f"a draft policy per level needs {rows} names, one per row of K (the target's review "
                         f"first), or one for every level; got {len(names_)}: {policy!r}")
    return tuple(names_) * (rows if len(names_) == 1 else 1)


def check_confidence(x) -> float:
    """A probability in [0, 1]: the confidence policy ends a draft after a block whose top-1 is below it."""
    if not _is_number(x) or not 0 <= x <= 1:
        raise ValueError(f"confidence must be a probability in [0, 1] (a draft ends after a drafter's token whose "
                         f"top-1 probability is below it; default {CONFIDENCE}), got {x!r}")
    return float(x)


def check_draft_costs(costs, drafters) -> tuple[float, ...]:
    """The ewif policy's cost of one call of each drafter relative to one target call: > 0 (MaG's >= 0)."""
    ok = isinstance(costs, (list, tuple)) and len(costs) == len(drafters) and all(
        _is_number(c) and np.isfinite(c) and (c >= 0 if d == MAG else c > 0) for c, d in zip(costs, drafters))
    if not ok:
        raise ValueError(f"draft_costs (the ewif policy's cost of one call of each drafter, one target call being "
                         f"1) must hold one finite number per drafter {list(drafters)}, > 0 (MaG's >= 0), got {costs!r}")
    return tuple(float(c) for c in costs)


def check_method_args(method: str, k=None, lenience=None, drafter: str | None = None, mag_lenience=None) -> None:
    """The checks that need no family: a known method, and only the settings that method uses."""
    check_method_lenience(method, lenience)
    m = get(method)
    if mag_lenience is not None:
        check_mag_lenience(mag_lenience)
        if not m.lenient:
            raise ValueError(f"mag_lenience={mag_lenience!r} sets lenience on MaG's tokens inside a lenient "
                             f"cascade; method {method!r} has no lenient review: leave it unset, or use "
                             f"method='csd'")
    if not m.takes_k and k is not None:
        why = "takes no k: its tree budget (tree) sets its draft" if m.is_tree else "drafts nothing, so it takes no k"
        raise ValueError(f"method {method!r} {why} (got k={k!r}); leave k unset")
    if drafter is not None and not m.takes_drafter:
        raise ValueError(f"drafter={drafter!r} picks SD's one drafter; method {method!r} takes no drafter: "
                         f"leave it unset, or use method='sd'")


def validate_k(k, n: int, what: str = "K") -> list[list[int]]:
    """Check that K is an n x n matrix of non-negative integers; return it as lists."""
    hint = (f"{what} must be a {n}x{n} matrix of non-negative integers, one row and column per "
            f"drafter (largest first, MaG last), e.g. {_example_k(n)}")
    if isinstance(k, str):
        try:
            k = json.loads(k)
        except json.JSONDecodeError as e:
            raise ValueError(f"{what} is not valid JSON ({e}); {hint}") from None
    if isinstance(k, np.ndarray):
        k = k.tolist()
    if not isinstance(k, (list, tuple)) or len(k) != n or any(
            not isinstance(row, (list, tuple)) or len(row) != n for row in k):
        raise ValueError(f"bad {what} {k!r}: {hint}")
    out = []
    for row in k:
        for v in row:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"bad {what} entry {v!r} (not an integer): {hint}")
            if v < 0:
                raise ValueError(f"bad {what} entry {v} (negative): {hint}")
        out.append([int(v) for v in row])
    return out


def _example_k(n: int) -> str:
    return str([[5 if i == j == 0 else (MAG_BLOCK if j == n - 1 else int(j >= i)) for j in range(n)]
                for i in range(n)])


def _as_k(k, default, n: int) -> list[list[int]]:
    """A single budget may be given as an int or as [[k]]."""
    if k is None:
        k = default
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        k = [[int(k)]]
    return validate_k(k, n)


# -- the plan ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """What one generation runs: Algorithm 1's drafters (names, largest first, ``"mag"`` last when
    present), K, lenience and MaG's block, plus the run settings."""
    method: str
    drafters: tuple[str, ...] = ()
    k: tuple[tuple[int, ...], ...] = ()
    lenience: float = 1.0
    mag_block: int | None = None     # tokens MaG proposes per call (the family's ``mag.n``); None: no MaG
    temperature: float = 0.0
    max_new_tokens: int = 200
    seed: int | None = None
    naive: bool = False              # review against raw drafter distributions (the biased variant)
    family: str = ""
    mag_lenience: bool = MAG_LENIENCE  # lenience applies to MaG's tokens too (False: strict, the paper)
    tree: tuple[int, ...] = ()       # tree methods: most nodes per depth (the tree budget)
    branch_below: float = BRANCH_BELOW  # tree methods: a drafter branches where its first choice has less
    draft_policy: str | tuple[str, ...] = FIXED  # per K row (csd_lib.engine.policy): how far each round drafts
    confidence: float = CONFIDENCE   # the confidence policy's top-1 threshold
    draft_costs: tuple[float, ...] = ()  # ewif: one call of each drafter relative to one target call
    batch_size: int = 1              # prompts generated at once (csd_lib.engine.batch); 1: one at a time

    def __post_init__(self):
        check_method(self.method)
        self._check_policy()
        object.__setattr__(self, "tree", check_tree_budget(self.tree, self.method))
        object.__setattr__(self, "branch_below", check_branch_below(self.branch_below))
        drafters = tuple(str(d) for d in self.drafters)
        if MAG in drafters[:-1]:
            raise ValueError("MaG is the bottom of the cascade: it may only be the last drafter")
        k = validate_k(list(self.k), len(drafters)) if drafters else []
        block = self.mag_block
        if MAG in drafters:
            if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
                raise ValueError(f"mag_block (tokens MaG proposes per call) must be an integer >= 1, got {block!r}")
            block = int(block)
        object.__setattr__(self, "drafters", drafters)
        object.__setattr__(self, "k", tuple(tuple(row) for row in k))
        object.__setattr__(self, "mag_block", block if MAG in drafters else None)
        object.__setattr__(self, "lenience", check_lenience(self.lenience))
        object.__setattr__(self, "temperature", check_temperature(self.temperature))
        object.__setattr__(self, "max_new_tokens", check_max_new_tokens(self.max_new_tokens))
        object.__setattr__(self, "seed", check_seed(self.seed))
        object.__setattr__(self, "mag_lenience", check_mag_lenience(self.mag_lenience))
        object.__setattr__(self, "naive", check_naive(self.naive))
        object.__setattr__(self, "batch_size", check_batch_size(self.batch_size))

    def _check_policy(self) -> None:
        """Normalise the draft-length settings: one policy name per K row; costs only with ewif."""
        policy = check_draft_policy(self.draft_policy, self.method, len(self.drafters))
        object.__setattr__(self, "draft_policy", policy)
        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        if "ewif" in policy:
            object.__setattr__(self, "draft_costs", check_draft_costs(self.draft_costs, self.drafters))
        elif self.draft_costs not in ((), []):
            raise ValueError(f"draft_costs price the ewif policy's draft lengths; draft_policy {list(policy)} has "
                             f"no ewif level: leave them unset")
        else:
            object.__setattr__(self, "draft_costs", ())

    # constructors without a family (theory) ---------------------------------------------

    @classmethod
    def ar(cls, **run) -> "Plan":
        return cls("ar", **run)

    @classmethod
    def sd(cls, k: int, drafter: str = "small", **run) -> "Plan":
        """``drafter`` decodes ``k`` tokens autoregressively (one call each) for the target."""
        return cls("sd", (drafter,), ((int(k),),), **run)

    @classmethod
    def mag(cls, k: int = MAG_BLOCK, mag_block: int = MAG_BLOCK, **run) -> "Plan":
        """MaG alone drafts for the target: ``k`` tokens per review, ``mag_block`` per MaG call."""
        return cls("mag", (MAG,), ((int(k),),), mag_block=mag_block, **run)

    @classmethod
    def staged(cls, drafters, k, **run) -> "Plan":
        """Two neural drafters, the second decoding for the first: ``k`` is 2x2 or ``[k1, k2]``
        (``[[k1, 0], [0, k2]]``: the first drafts ``k1`` for the target, the second ``k2`` for it)."""
        if len(k) == 2 and all(_is_number(v) for v in k):
            k = [[k[0], 0], [0, k[1]]]
        return cls("staged", tuple(drafters), k, **run)

    @classmethod
    def csd(cls, drafters, k, lenience: float = 1.0, mag_block: int | None = MAG_BLOCK,
            mag_lenience: bool = MAG_LENIENCE, **run) -> "Plan":
        """The full cascade: ``drafters`` largest first (``"mag"`` last, proposing ``mag_block``)."""
        return cls("csd", tuple(drafters), k, lenience, mag_block, mag_lenience=mag_lenience, **run)

    # views ----------------------------------------------------------------------------------

    @property
    def K(self) -> np.ndarray:
        """K as an (n, n) integer array."""
        n = len(self.drafters)
        return np.asarray(self.k, dtype=int).reshape(n, n)

    @property
    def bottom_block(self) -> int:
        """Tokens the bottom drafter proposes per call: MaG's block, or 1 for a neural model."""
        return self.mag_block if self.drafters and self.drafters[-1] == MAG else 1

    @property
    def neural(self) -> list[str]:
        return [d for d in self.drafters if d != MAG]

    def with_k(self, k) -> "Plan":
        """The same plan with another K (an int for one drafter)."""
        return replace(self, k=_as_k(k, None, len(self.drafters)))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["drafters"] = list(self.drafters)
        d["k"] = [list(row) for row in self.k]
        d["tree"] = list(self.tree)
        d["draft_policy"] = list(self.draft_policy)
        d["draft_costs"] = list(self.draft_costs)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        """A plan from :meth:`to_dict` (read back from JSON: lists, ``k`` None for ar); other keys are ignored."""
        kw = {f.name: d[f.name] for f in fields(cls) if f.name in d}
        return cls(**{**kw, "drafters": tuple(kw.get("drafters") or ()), "k": kw.get("k") or (),
                      "tree": tuple(kw.get("tree") or ()), "draft_policy": kw.get("draft_policy") or FIXED,
                      "draft_costs": tuple(kw.get("draft_costs") or ())})


def make_plan(family, method: str, k=None, lenience=None, drafter: str | None = None, temperature: float = 0.0,
              max_new_tokens: int = 200, seed: int | None = None, naive: bool = False,
              mag_lenience: bool | None = None, task: str | None = None, tree=None,
              branch_below: float | None = None, draft_policy=None, confidence: float | None = None,
              draft_costs=None) -> Plan:
    """Resolve a method (:mod:`csd_lib.engine.methods`) and the user's settings on ``family`` into a :class:`Plan`.

    ``mag_lenience`` (lenient methods only; None: :data:`MAG_LENIENCE`) applies lenience to MaG's tokens too.
    ``task``: with no ``k``, the method's K for the task (csd ``family.k_for(task)``, sd ``family.sd_k_for(task)``:
    the preset's per-task settings, :class:`csd_lib.families.Family`).

    ``tree`` (tree methods): the tree budget, nodes per depth (None: tree-sd ``TREE_WIDTH`` at each of SD's
    k depths, csd-tree :data:`CSD_TREE`, medusa the nodes per depth of the heads' smallest standard tree);
    ``branch_below`` (tree-sd, csd-tree; None: :data:`BRANCH_BELOW`).

    ``draft_policy`` (None: fixed): one name of :data:`csd_lib.engine.policy.POLICIES` for every level or one per K
    row; ``confidence`` (the confidence policy only; None: its default); ``draft_costs`` (ewif only; None: the
    family's per-call cost table ``previous_work``, :func:`policy_costs`).

    ``family`` needs ``name``, ``drafters`` (objects with ``name``, largest first), ``mag.n``,
    ``sd_k``, ``staged_k``, ``default_k`` and ``default_lenience`` (and ``medusa`` for medusa).
    """
    check_method_args(method, k, lenience, drafter, mag_lenience)
    check_policy_args(method, draft_policy, confidence)
    m = get(method)
    if tree is not None:
        check_tree_budget(tree, method)
    if branch_below is not None and not m.branches:
        raise ValueError(f"branch_below is where {' and '.join(x for x in names() if get(x).branches)}"
                         f" drafters branch; method {method!r} takes none: leave it unset")
    run = dict(temperature=check_temperature(temperature), max_new_tokens=check_max_new_tokens(max_new_tokens),
               seed=check_seed(seed), naive=check_naive(naive), family=family.name)
    if m.is_tree:
        _check_tree_family(family, method, m)
    drafters = _drafters(family, method, m, drafter)
    if k is None and m.takes_k:
        k = m.default_k(family, task)
    kk = (_as_k(k, None, 1) if len(drafters) == 1 else validate_k(k, len(drafters))) if drafters else []
    if m.min_k and kk[0][0] < m.min_k:
        raise ValueError(f"{method.upper()} needs a draft length k >= {m.min_k} (k=0 drafts nothing: that is "
                         f"{REFERENCE!r}), got k={k!r}")
    lam = check_lenience(family.default_lenience if lenience is None else lenience) if m.lenient else 1.0
    plan = dict(method=method, drafters=drafters, k=kk, lenience=lam, mag_block=family.mag.n,
                mag_lenience=MAG_LENIENCE if mag_lenience is None else mag_lenience, **run)
    if m.is_tree:
        plan.update(_tree(family, m, plan, tree, BRANCH_BELOW if branch_below is None else branch_below))
    policy = check_draft_policy(FIXED if draft_policy is None else draft_policy, method, len(drafters))
    if draft_costs is not None or "ewif" in policy:
        plan["draft_costs"] = policy_costs(family, drafters) if draft_costs is None else draft_costs
    return Plan(**plan, draft_policy=policy, confidence=CONFIDENCE if confidence is None else confidence)


def check_policy_args(method: str, draft_policy=None, confidence=None) -> None:
    """The draft-length checks that need no family: known policy names the method takes, and a ``confidence``
    only where a level uses the confidence policy."""
    policy = check_draft_policy(FIXED if draft_policy is None else draft_policy, method)
    if confidence is not None:
        check_confidence(confidence)
        if "confidence" not in policy:
            raise ValueError(f"confidence={confidence!r} is the confidence policy's threshold; draft policy "
                             f"{draft_policy or FIXED!r} uses none: leave it unset, or use draft_policy='confidence'")


def policy_costs(family, drafters) -> tuple[float, ...]:
    """The ewif policy's default costs: each drafter's per-call cost relative to the target in the family's
    ``previous_work`` table (:mod:`csd_lib.families.paper_costs`; MaG's is 0)."""
    costs = family.previous_work.costs
    return tuple(0.0 if d == MAG else float(costs[d]) / float(costs["target"]) for d in drafters)


_COUNT = {2: "two", 3: "three"}


def _drafters(family, method: str, m, drafter: str | None) -> tuple[str, ...]:
    """The drafters ``m`` takes from ``family``, largest first (:attr:`Method.neural`, MaG last)."""
    neural = [d.name for d in family.drafters]
    if not m.needs(family):
        raise ValueError(f"family '{family.name}' has no neural drafter for method {method!r}" if m.neural == 1 else
                         f"method {method!r} needs {_COUNT.get(m.neural, m.neural)} neural drafters; family '{family.name}' has "
                         f"{len(neural)}; use 'sd' or 'csd'")
    if drafter is not None and drafter not in neural:
        raise ValueError(f"unknown drafter {drafter!r}; family '{family.name}' has {sorted(neural)}")
    picked = neural if m.neural == ALL else [drafter] if drafter is not None else neural[:m.neural]
    return (*picked, *([MAG] if m.mag else []))


def _check_tree_family(family, method: str, m) -> None:
    """A tree method needs a decoder-only target (and, for the Medusa heads' tree, the heads)."""
    if getattr(family.target, "is_encoder_decoder", False):
        raise ValueError(f"method {method!r} verifies a token tree, which an encoder-decoder (T5) target cannot "
                         f"score in one call (docs/REFERENCE.md, tree attention); family '{family.name}' has one: "
                         f"use a decoder-only family such as tiny-llama, or a linear method")
    if m.tree == HEADS and getattr(family, "medusa", None) is None:
        raise ValueError(f"family '{family.name}' has no Medusa heads; train them with `python -m csd_lib.zoo "
                         f"medusa --family {family.name}` (data/models/{family.name}-medusa)")


def _tree(family, m, plan: dict, tree, branch_below: float) -> dict:
    """The tree settings of a tree method's plan, grown from its chain ``plan`` (:attr:`Method.tree`)."""
    if m.tree == HEADS:
        heads = family.medusa
        tree = medusa_budget(heads.trees[min(heads.trees)]) if tree is None else tree
        if len(check_tree_budget(tree, m.name)) > heads.n_heads:
            raise ValueError(f"a tree budget {list(tree)} is {len(tree)} deep but the Medusa heads predict "
                             f"{heads.n_heads} tokens ahead; give at most {heads.n_heads} depths")
        return {"tree": tree}
    if m.tree == DRAFTER:
        tree = (TREE_WIDTH,) * plan["k"][0][0] if tree is None else check_tree_budget(tree, m.name)
        return {"tree": tree, "k": ((len(tree),),), "branch_below": branch_below}  # k: the depth
    assert m.tree == CASCADE, m.tree
    return {"tree": CSD_TREE if tree is None else tree, "branch_below": branch_below}


def medusa_budget(paths) -> tuple[int, ...]:
    """Nodes per depth of a Medusa rank tree (paths of ranks)."""
    depth = max(len(p) for p in paths)
    return tuple(sum(len(p) == d for p in paths) for d in range(1, depth + 1))


def vertical_k(k: int, levels: int, mag_block: int) -> list[list[int]]:
    """K of the vertical cascade only (paper Table 2 "base + MaG"): the largest drafter proposes
    ``k`` tokens, every middle drafter gets no budget, MaG drafts ``mag_block`` (its block) for each."""
    return [[k if j == 0 else 0 for j in range(levels - 1)] + [mag_block]] + \
        [[0] * (levels - 1) + [mag_block] for _ in range(levels - 1)]

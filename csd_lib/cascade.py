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

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .inputs import check_family, check_prompt
from .mag import MaG
from .models import LM, check_vocab
from .review import effective_q, probs, review
from .tasks import prompt_ids
from .trace import TARGET_BONUS, TARGET_CORRECTION, Event, Generation, PairStats, Stats

METHODS = ("ar", "sd", "mag", "staged", "csd")


@dataclass
class Ctx:
    """Per-generation state shared by all levels."""
    prompt: list[int]
    greedy: bool
    temperature: float
    generator: torch.Generator | None
    eos: int | None
    naive: bool = False
    events: list[Event] = field(default_factory=list)
    acceptance: dict[str, PairStats] = field(default_factory=dict)
    mag_calls: int = 0


@dataclass
class Block:
    """Tokens a drafter hands up, with the distribution each was drawn from."""
    tokens: list[int]
    q: torch.Tensor        # (m, V) proposal distribution per token (one-hot for MaG)
    provenance: list[str]
    eos: bool = False      # the block ends with EOS: nothing may be drafted after it


class MaGLevel:
    """MaG as a drafter."""

    def __init__(self, mag: MaG, vocab_size: int):
        mag.check_vocab(vocab_size)
        self.mag, self.name, self.vocab_size = mag, "mag", vocab_size

    def propose(self, ctx: Ctx, prefix: list[int], cap: int, depth: int) -> Block:
        hay = np.asarray(ctx.prompt + prefix, dtype=np.int64)
        prop = self.mag.propose(hay, min(self.mag.n, cap))
        ctx.mag_calls += 1
        toks, prov = prop.tokens, prop.provenance
        eos = ctx.eos is not None and ctx.eos in toks
        if eos:
            cut = toks.index(ctx.eos) + 1
            toks, prov = toks[:cut], prov[:cut]
        q = torch.zeros(len(toks), self.vocab_size)                          # (m, V)
        q[torch.arange(len(toks)), torch.tensor(toks, dtype=torch.long)] = 1.0
        return Block(toks, q, prov, eos)


class Level:
    """A model that reviews its sub-drafters' proposals (Algorithm 1, one level)."""

    def __init__(self, lm: LM, subs: list, budgets: list[int], lenience: float = 1.0, top: bool = False):
        self.lm, self.subs, self.budgets = lm, subs, list(budgets)
        self.lenience = 1.0 if top else float(lenience)  # the target's review is always strict
        self.top, self.name = top, lm.name
        self.thresholds = np.cumsum(self.budgets).tolist() if self.budgets else []
        self.base: list[int] = []  # decoder sequence before any output token, set per prompt

    def _draft(self, ctx: Ctx, prefix: list[int], limit: int, depth: int):
        tokens: list[int] = []
        qs: list[torch.Tensor] = []
        prov: list[str] = []
        who: list[str] = []
        eos = False
        for sub, thr in zip(self.subs, self.thresholds):
            thr = min(thr, limit)
            while len(tokens) < thr and not eos:
                blk = sub.propose(ctx, prefix + tokens, limit - len(tokens), depth + 1)
                tokens += blk.tokens
                qs.append(blk.q)
                prov += blk.provenance
                who += [sub.name] * len(blk.tokens)
                eos = blk.eos
            if eos:
                break
        return tokens, qs, prov, who, eos

    def propose(self, ctx: Ctx, prefix: list[int], cap: int, depth: int = 0) -> Block:
        """Draft with the sub-drafters, review once, return accepted tokens + one more."""
        tokens, qs, prov, who, eos = self._draft(ctx, prefix, cap - 1, depth)
        m = len(tokens)
        logits = self.lm.logits(self.base + prefix + tokens, m)  # (m+1, V)
        p = probs(logits, ctx.temperature)                       # (m+1, V)
        x = torch.tensor(tokens, dtype=torch.long)               # (m,)
        q = torch.cat(qs) if qs else None                        # (m, V)
        r = review(p, x, q, self.lenience, ctx.greedy, ctx.generator)
        a = r.n_accepted
        self._log(ctx, depth, prefix, tokens, prov, who, r)
        if a == m and eos:  # the draft ended with an accepted EOS: nothing follows it
            out, own = tokens, []
        else:
            out = tokens[:a] + [r.next_token]
            own = [(TARGET_BONUS if r.bonus else TARGET_CORRECTION) if self.top else self.name]
        q_up = None if self.top else self._q_up(ctx, p, q, x, len(out))
        return Block(out, q_up, prov[:a] + own, out[-1] == ctx.eos)

    def _q_up(self, ctx: Ctx, p: torch.Tensor, q, x: torch.Tensor, n_out: int) -> torch.Tensor:
        """Distribution of each emitted token given the history, for the level above (n_out, V).

        Greedy decoding passes the reviewer's own rows up (as the official code does); so
        does the deliberately wrong ``naive`` variant under sampling. Exact sampling needs
        ``effective_q`` for drafted positions; a bonus token was drawn from ``p`` itself.
        """
        if ctx.greedy or ctx.naive or self.lenience == 1:
            return p[:n_out]
        n = min(n_out, x.numel())  # emitted positions that had a draft
        rows = effective_q(p[:n], q[:n], x[:n], self.lenience) if n else p[:0]
        return torch.cat([rows, p[n:n_out]]) if n_out > n else rows

    def _log(self, ctx: Ctx, depth, prefix, tokens, prov, who, r) -> None:
        a, m = r.n_accepted, len(tokens)
        for i in range(min(a + 1, m)):
            key = f"{self.name}<-{who[i]}"
            st = ctx.acceptance.get(key)
            if st is None:
                st = ctx.acceptance[key] = PairStats()
            st.add(i, i < a)
        ctx.events.append(Event(len(ctx.events), depth, self.name, len(prefix), tokens, prov, who,
                                r.accept_prob.tolist(), a, r.next_token, r.bonus, self.lenience))


# -- building a cascade from K ---------------------------------------------------------

def validate_k(k, n: int, what: str = "K") -> list[list[int]]:
    """Check that K is an n x n matrix of non-negative integers; return it as lists."""
    hint = (f"{what} must be a {n}x{n} matrix of non-negative integers, one row and column per "
            f"drafter (largest first, MaG last), e.g. {_example_k(n)}")
    if isinstance(k, str):
        import json
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
    return str([[5 if i == j == 0 else (10 if j == n - 1 else int(j >= i)) for j in range(n)] for i in range(n)])


def build_cascade(target: LM, drafters: list, k, lenience: float = 1.0) -> Level:
    """Algorithm 1 as a tree of drafters. ``drafters`` are largest first; MaG may only be last."""
    n = len(drafters)
    for i, d in enumerate(drafters):
        if isinstance(d, MaG) and i != n - 1:
            raise ValueError("MaG is the bottom of the cascade: it may only be the last drafter")
    if n == 0:
        return Level(target, [], [], top=True)
    k = validate_k(k, n)
    levels: list = [None] * n
    for i in reversed(range(n)):
        d = drafters[i]
        if isinstance(d, MaG):
            levels[i] = MaGLevel(d, target.vocab_size)
        else:
            levels[i] = Level(d, levels[i + 1:], k[i + 1][i + 1:] if i + 1 < n else [], lenience)
    return Level(target, levels, k[0], top=True)


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


def check_method_lenience(method: str, lenience) -> float | None:
    """Validate a lenience for ``method``: only ``csd`` has lenient draft-to-draft reviews."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    if lenience is None:
        return None
    lam = check_lenience(lenience)
    if method != "csd" and lam != 1:
        raise ValueError(f"method {method!r} reviews without lenience (it has no draft-to-draft review), "
                         f"got lenience={lenience!r}; leave lenience unset, or use method='csd' for lenient "
                         f"draft-to-draft reviews")
    return lam


def method_plan(family, method: str, k=None, lenience=None, drafter: str | None = None):
    """Resolve a method name into (drafters, K, lenience) for :func:`build_cascade`."""
    check_method_lenience(method, lenience)
    neural = list(family.drafters)
    by_name = {d.name: d for d in neural}
    if method == "ar":
        return [], None, 1.0
    if method == "mag":
        return [family.mag], _as_k(k, family.mag.n, 1), 1.0
    if method == "sd":
        if not neural:
            raise ValueError(f"family '{family.name}' has no neural drafter for method 'sd'")
        if drafter is not None and drafter not in by_name:
            raise ValueError(f"unknown drafter {drafter!r}; family '{family.name}' has {sorted(by_name)}")
        d = by_name[drafter] if drafter else neural[0]
        return [d], _as_k(k, family.sd_k, 1), 1.0
    if method == "staged":
        if len(neural) < 2:
            raise ValueError(f"method 'staged' needs two neural drafters; family '{family.name}' has "
                             f"{len(neural)}; use 'sd' or 'csd'")
        return neural[:2], validate_k(k if k is not None else family.staged_k, 2), 1.0
    drafters = neural + [family.mag]
    kk = validate_k(k if k is not None else family.default_k, len(drafters))
    return drafters, kk, check_lenience(family.default_lenience if lenience is None else lenience)


def _as_k(k, default: int, n: int):
    """A single budget may be given as an int or as [[k]]."""
    if k is None:
        k = default
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        k = [[int(k)]]
    return validate_k(k, n)


def encode_prompt(family, prompt) -> list[int]:
    """Token ids of a prompt given as text (``tasks.prompt_ids``, the family's prompt style) or ids."""
    prompt = check_prompt(prompt, check_family(family).target.vocab_size)
    ids = prompt_ids(family.tokenizer, prompt, family.prompt_style) if isinstance(prompt, str) else prompt
    if not ids:
        raise ValueError("the prompt is empty; pass at least one token")
    return ids


def generate(family, prompt, method: str = "csd", k=None, lenience=None, temperature: float = 0.0,
             seed: int | None = None, max_new_tokens: int = 200, drafter: str | None = None,
             naive: bool = False) -> Generation:
    """Generate with one of ``ar``, ``sd``, ``mag``, ``staged``, ``csd``.

    Greedy when ``temperature == 0``. ``naive=True`` makes upper levels review against
    the drafters' raw distributions instead of the effective ones: a deliberately
    biased variant, kept to show what exactness needs.
    """
    check_family(family)
    temperature = check_temperature(temperature)
    seed = check_seed(seed)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    drafters, kk, lam = method_plan(family, method, k, lenience, drafter)
    ids = encode_prompt(family, prompt)
    target = family.target
    if not target.is_encoder_decoder and target.max_length and len(ids) + max_new_tokens > target.max_length:
        raise ValueError(f"the prompt ({len(ids)} tokens) plus max_new_tokens ({max_new_tokens}) exceeds "
                         f"the model limit of {target.max_length} tokens; shorten the prompt or lower "
                         f"max_new_tokens")
    top = build_cascade(target, drafters, kk, lam)
    gen = None
    if temperature > 0:
        gen = torch.Generator()
        gen.manual_seed(seed) if seed is not None else gen.seed()
    eos = target.eos_token_id
    eos = eos[0] if isinstance(eos, (list, tuple)) else eos
    ctx = Ctx(ids, temperature == 0, float(temperature), gen, eos, naive)
    levels = _levels(top)
    lms = [lv.lm for lv in levels]
    t0 = time.perf_counter()
    for lv in levels:
        lv.lm.meter.__init__()
        lv.base = lv.lm.start(ids)
    out: list[int] = []
    prov: list[str] = []
    while len(out) < max_new_tokens:
        blk = top.propose(ctx, out, max_new_tokens - len(out))
        out += blk.tokens
        prov += blk.provenance
        if blk.eos:
            break
    wall = time.perf_counter() - t0
    for lm in lms:
        lm.release()
    assert len(out) <= max_new_tokens and (eos not in out[:-1])
    stats = Stats(len(out), wall, {lm.name: lm.meter.calls for lm in lms},
                  {lm.name: lm.meter.time for lm in lms}, {lm.name: lm.n_params for lm in lms},
                  ctx.acceptance, target=target.name, previous_work_costs=dict(family.previous_work.costs))
    if any(isinstance(d, MaG) for d in drafters):
        stats.calls["mag"] = ctx.mag_calls
        stats.params["mag"] = 0
    cfg = {"family": family.name, "method": method, "k": kk, "lenience": lam, "temperature": float(temperature),
           "seed": seed, "max_new_tokens": int(max_new_tokens),
           "drafters": [d.name for d in drafters], "naive": naive}
    text = family.tokenizer.decode(out, skip_special_tokens=True) if family.tokenizer is not None else ""
    return Generation(text, out, prov, ctx.events, stats, method, cfg)


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

"""Checks that a method is lossless: greedy identity with AR, and exact laws under sampling.

- Greedy: every method must return AR's tokens; :func:`greedy_identity` runs a list of
  configurations and reports which ones differ.
- Sampling: on a tiny vocabulary the joint law of the first ``n`` generated tokens can be
  computed exactly from the target (:func:`exact_joint`, ``V**n`` outcomes). Samples of a
  method give an empirical law (:func:`sample_joint`); the total variation (:func:`tv`)
  between the two is compared with the TV that pure sampling noise gives at the same
  sample size (:func:`noise_tv`).
- Notebooks: :func:`check_identical` asserts greedy identity where the target runs in fp32
  or fp64 on the CPU (:func:`exact_dtype`), and everywhere else (bf16, fp16, or any dtype on a
  GPU) counts and explains near-tie flips instead of raising.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import torch

from ..engine.cascade import encode_prompt, generate
from ..engine.methods import REFERENCE
from ..engine.plan import check_temperature
from ..engine.review import probs


def tv(a, b) -> float:
    """Total variation distance 0.5 * sum |a - b| between two laws on the same outcomes."""
    return float(0.5 * np.abs(np.asarray(a, float) - np.asarray(b, float)).sum())


@torch.no_grad()
def exact_joint(family, prompt, n_tokens: int, temperature: float = 1.0) -> np.ndarray:
    """P(first ``n_tokens`` generated tokens) under the target at ``temperature``, (V**n,).

    Outcomes are flattened in C order, as ``np.ravel_multi_index(ids, (V,) * n)``. The
    target scores all ``V**(n-1)`` prefixes in one batch, so keep ``V**n`` small (a few
    thousand). EOS is treated as an ordinary token: use a family built with ``eos=None``.
    """
    if check_temperature(temperature) == 0:
        raise ValueError("exact_joint is for sampling (temperature > 0); greedy output is one sequence")
    if n_tokens < 1:
        raise ValueError(f"n_tokens must be >= 1, got {n_tokens}")
    lm = family.target
    V = lm.vocab_size
    if V ** n_tokens > 200_000:
        raise ValueError(f"{V}**{n_tokens} outcomes is too many for an exact joint; use a tiny-vocab "
                         f"family (random_family(vocab_size=6)) or fewer tokens")
    ids = encode_prompt(family, prompt)
    dev = lm.device
    if n_tokens > 1:
        grid = torch.cartesian_prod(*[torch.arange(V, device="cpu")] * (n_tokens - 1)).reshape(-1, n_tokens - 1)
    else:
        grid = torch.zeros(1, 0, dtype=torch.long, device="cpu")  # (B, n-1) on the CPU, where logp is read
    B = grid.shape[0]
    prompt_t = torch.tensor([ids], device=dev).repeat(B, 1)                                   # (B, S)
    if lm.is_encoder_decoder:
        start = torch.full((B, 1), lm.decoder_start, dtype=torch.long, device=dev)
        dec = torch.cat([start, grid.to(dev)], 1)                                             # (B, n)
        logits = lm.model(input_ids=prompt_t, decoder_input_ids=dec).logits                  # (B, n, V)
    else:
        inp = torch.cat([prompt_t, grid.to(dev)], 1)                                          # (B, S+n-1)
        logits = lm.model(input_ids=inp).logits[:, len(ids) - 1:]                             # (B, n, V)
    logp = torch.log(probs(logits.double(), temperature).clamp_min(1e-300)).cpu()           # (B, n, V)
    joint = torch.zeros(B, dtype=torch.float64, device="cpu")
    for i in range(n_tokens - 1):
        joint += logp[:, i].gather(1, grid[:, i:i + 1])[:, 0]
    out = (joint[:, None] + logp[:, n_tokens - 1]).exp().reshape(-1).numpy()                 # (V**n,)
    return out / out.sum()


def sample_joint(family, prompt, n_tokens: int, n_samples: int, method: str = "csd",
                 temperature: float = 1.0, seed0: int = 0, **kw) -> np.ndarray:
    """Empirical law of the first ``n_tokens`` tokens over ``n_samples`` seeded generations, (V**n,).

    Seeds are ``seed0, seed0 + 1, ...``; ``kw`` goes to :func:`csd_lib.generate` (k,
    lenience, naive, ...). Generation runs one token past ``n_tokens`` so that the
    cascade drafts as it would in a longer run.
    """
    V = family.target.vocab_size
    counts = np.zeros(V ** n_tokens)
    for s in range(n_samples):
        ids = generate(family, prompt, method, temperature=temperature, seed=seed0 + s,
                       max_new_tokens=n_tokens + 1, **kw).token_ids[:n_tokens]
        if len(ids) < n_tokens:
            raise ValueError(f"generation stopped after {len(ids)} tokens (EOS?); build the family with eos=None")
        counts[int(np.ravel_multi_index(ids, (V,) * n_tokens))] += 1
    return counts / n_samples


def noise_tv(p, n: int, quantile: float = 0.995, reps: int = 4000, seed: int = 0) -> float:
    """The ``quantile`` of TV(empirical, p) for ``n`` exact draws from ``p``: a noise threshold."""
    p = np.asarray(p, float)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, p / p.sum(), size=reps) / n                      # (reps, outcomes)
    return float(np.quantile(0.5 * np.abs(draws - p).sum(1), quantile))


def greedy_identity(family, prompts, configs: list[dict], max_new_tokens: int = 48) -> list[dict]:
    """Greedy output of every configuration vs AR on every prompt.

    Args:
        configs: dicts of :func:`csd_lib.generate` keyword arguments, each with ``method``.
    Returns:
        one row per (config, prompt): label, prompt index, n_tokens, same (bool),
        first_diff (index of the first differing token, or None).
    """
    rows = []
    for pi, prompt in enumerate(prompts):
        ref = generate(family, prompt, REFERENCE, max_new_tokens=max_new_tokens).token_ids
        for cfg in configs:
            cfg = dict(cfg)
            method = cfg.pop("method")
            out = generate(family, prompt, method, max_new_tokens=max_new_tokens, **cfg).token_ids
            diff = next((i for i, (a, b) in enumerate(zip(out, ref)) if a != b),
                        None if len(out) == len(ref) else min(len(out), len(ref)))
            label = method + "".join(f" {k}={v}" for k, v in cfg.items())
            rows.append(dict(label=label, prompt=pi, n_tokens=len(out), same=out == ref, first_diff=diff))
    return rows


NEAR_TIE_NOTE = ("In bf16/fp16, and on a GPU in any precision, the target's multi-token verify rounds "
                 "differently from the one-token steps of AR, so where its top two logits nearly tie the "
                 "argmax can flip; fp32 and fp64 on the CPU are exact.")


@dataclass(frozen=True)
class Divergence:
    """Where one method's greedy output first differs from AR's."""
    method: str
    position: int          # index in the generated tokens
    ref_token: int | None  # AR's token there (None: AR had stopped)
    token: int | None      # the method's token there (None: the method had stopped)
    gap: float             # the target's top-1 minus top-2 logit there, recomputed in its dtype


@dataclass(frozen=True)
class IdentityReport:
    """Greedy identity of several methods with AR: identical, or where each one diverged."""
    dtype: str
    methods: tuple[str, ...]
    divergences: tuple[Divergence, ...]
    device: str = "cpu"  # where the target ran ('cuda', 'mps', ...)

    @property
    def identical(self) -> bool:
        return not self.divergences

    def lines(self) -> list[str]:
        names = ", ".join(self.methods)
        if self.identical:
            return [f"identical: {names} return AR's tokens ({self.dtype} on {self.device})"]
        tok = lambda t: "end" if t is None else str(t)  # noqa: E731
        out = [f"{len(self.divergences)} of {len(self.methods)} methods ({names}) differ from AR in {self.dtype} "
               f"on {self.device}:"]
        gap = lambda g: f"the target's top-2 logit gap there is {g:.4g}" if g == g else \
            "pass prompt= to see the target's top-2 logit gap there"  # noqa: E731
        out += [f"- {d.method}: first differs at token {d.position} (AR {tok(d.ref_token)}, "
                f"{d.method} {tok(d.token)}); {gap(d.gap)}" for d in self.divergences]
        return out + [NEAR_TIE_NOTE]

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_markdown_(self) -> str:
        head, *rest = self.lines()
        items = "\n".join(ln for ln in rest if ln.startswith("- "))
        return "\n\n".join([head, *([items] if items else []), *(ln for ln in rest if not ln.startswith("- "))])

    def _repr_html_(self) -> str:
        head, *rest = [html.escape(ln) for ln in self.lines()]
        items = "".join(f"<li>{ln[2:]}</li>" for ln in rest if ln.startswith("- "))
        notes = "".join(f"<p>{ln}</p>" for ln in rest if not ln.startswith("- "))
        return f"<p>{head}</p>" + (f"<ul>{items}</ul>" if items else "") + notes


def _first_diff(out: list[int], ref: list[int]) -> int | None:
    """Index of the first differing token, or None when the two lists are equal."""
    pos = next((i for i, (a, b) in enumerate(zip(out, ref)) if a != b), None)
    return pos if pos is not None or len(out) == len(ref) else min(len(out), len(ref))


@torch.no_grad()
def _top2_gaps(family, prompt, ref: list[int], positions: list[int]) -> dict[int, float]:
    """The target's top-1 minus top-2 logit at each position after AR's prefix (one forward)."""
    lm = family.target
    lo, hi = min(positions), max(positions)
    seq = lm.start(encode_prompt(family, prompt)) + ref[:hi]
    try:
        top = lm.logits(seq, hi - lo).topk(2, dim=-1).values  # (hi - lo + 1, 2)
    finally:
        lm.release()
    return {p: float(top[p - lo, 0] - top[p - lo, 1]) for p in positions}


def _labels(gens) -> list[str]:
    """Each generation's method, and where a method repeats, the plan settings that tell its runs apart
    (K, lenience, MaG's rule, draft length), e.g. 'csd (lenience=1000)'; '#i' only when none differs."""
    fields = ("k", "lenience", "mag_lenience", "drafters", "temperature", "seed")
    out = []
    for i, g in enumerate(gens):
        same = [h for h in gens if h.method == g.method]
        if len(same) == 1:
            out.append(g.method)
            continue
        plans = [h.plan.to_dict() for h in same]
        differ = [f for f in fields if any(p.get(f) != plans[0].get(f) for p in plans)]
        mine = g.plan.to_dict()
        out.append(f"{g.method} ({', '.join(f'{f}={mine.get(f)}' for f in differ)})" if differ
                   else f"{g.method} #{i + 1}")
    return out


def exact_dtype(family) -> bool:
    """Whether greedy identity with AR is exact for the family's target: it computes in fp32 or fp64 on
    the CPU. bf16/fp16 anywhere, and GPU kernels in any dtype (for 1 and for m + 1 tokens they round
    differently), may flip near-tied argmaxes: count and explain those, as :func:`check_identical` does."""
    lm = family.target
    spread = set(map(str, (getattr(lm.model, "hf_device_map", None) or {}).values()))  # accelerate's placement
    return (lm.dtype in (torch.float32, torch.float64) and lm.device.type == "cpu"
            and spread <= {"cpu"})


def check_identical(family, ref, *gens, prompt=None) -> IdentityReport:
    """Greedy identity of ``gens`` with AR's ``ref``: asserted in fp32/fp64 on the CPU, reported otherwise.

    Where the target computes in fp32 or fp64 on the CPU (:func:`exact_dtype`) any difference
    raises AssertionError naming the method and the first diverging token. Elsewhere (bf16,
    fp16, or a GPU) nothing raises: the report counts the differing methods and gives, per
    method, the first diverging token and the target's top-2 logit gap there, recomputed by
    one forward over ``prompt`` plus AR's tokens before it (without ``prompt`` the gap is NaN).

    Args:
        ref: AR's greedy ``Generation``; gens: other methods' greedy ``Generation``s of the
            same prompt.
    Returns:
        an :class:`IdentityReport` (shows as text, Markdown or HTML).
    """
    if not gens:
        raise ValueError("pass AR's generation and at least one other, e.g. check_identical(fam, ar, sd, csd)")
    for g in (ref, *gens):
        if g.plan.temperature != 0.0:
            raise ValueError(f"the {g.method} generation was sampled (temperature {g.plan.temperature}); "
                             f"identity with AR holds for greedy output only (temperature=0)")
        if g.plan.family and g.plan.family != family.name:
            raise ValueError(f"the {g.method} generation comes from family {g.plan.family!r}, not "
                             f"{family.name!r}; generate every output with the family you pass")
    dtype = family.target.dtype
    names = _labels(gens)
    diffs = [(name, g, _first_diff(g.token_ids, ref.token_ids)) for name, g in zip(names, gens)]
    diffs = [(name, g, pos) for name, g, pos in diffs if pos is not None]
    if exact_dtype(family) and diffs:
        name, g, pos = diffs[0]
        raise AssertionError(f"{name} differs from AR at token {pos} in {str(dtype).removeprefix('torch.')} "
                             f"on the CPU: "
                             f"{g.token_ids[pos:pos + 5]} vs AR {ref.token_ids[pos:pos + 5]}; greedy "
                             f"output must be identical there")
    gaps = _top2_gaps(family, prompt, ref.token_ids, [p for _, _, p in diffs]) if diffs and prompt is not None \
        else {}
    at = lambda ids, p: ids[p] if p < len(ids) else None  # noqa: E731
    return IdentityReport(str(dtype).removeprefix("torch."), tuple(names),
                          tuple(Divergence(name, pos, at(ref.token_ids, pos), at(g.token_ids, pos),
                                           gaps.get(pos, float("nan"))) for name, g, pos in diffs),
                          family.target.device.type)

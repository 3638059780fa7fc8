"""Checks that a method is lossless: greedy identity with AR, and exact laws under sampling.

- Greedy: every method must return AR's tokens; :func:`greedy_identity` runs a list of
  configurations and reports which ones differ.
- Sampling: on a tiny vocabulary the joint law of the first ``n`` generated tokens can be
  computed exactly from the target (:func:`exact_joint`, ``V**n`` outcomes). Samples of a
  method give an empirical law (:func:`sample_joint`); the total variation (:func:`tv`)
  between the two is compared with the TV that pure sampling noise gives at the same
  sample size (:func:`noise_tv`).
"""
from __future__ import annotations

import numpy as np
import torch

from .cascade import encode_prompt, generate
from .review import probs


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
    if temperature <= 0:
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
        grid = torch.cartesian_prod(*[torch.arange(V)] * (n_tokens - 1)).reshape(-1, n_tokens - 1)  # (B, n-1)
    else:
        grid = torch.zeros(1, 0, dtype=torch.long)                                            # (1, 0)
    B = grid.shape[0]
    prompt_t = torch.tensor([ids], device=dev).repeat(B, 1)                                   # (B, S)
    if lm.is_encoder_decoder:
        start = torch.full((B, 1), lm.decoder_start, dtype=torch.long)
        dec = torch.cat([start, grid], 1).to(dev)                                             # (B, n)
        logits = lm.model(input_ids=prompt_t, decoder_input_ids=dec).logits                  # (B, n, V)
    else:
        inp = torch.cat([prompt_t, grid.to(dev)], 1)                                          # (B, S+n-1)
        logits = lm.model(input_ids=inp).logits[:, len(ids) - 1:]                             # (B, n, V)
    logp = torch.log(probs(logits.double(), temperature).clamp_min(1e-300)).cpu()           # (B, n, V)
    joint = torch.zeros(B, dtype=torch.float64)
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
        ref = generate(family, prompt, "ar", max_new_tokens=max_new_tokens).token_ids
        for cfg in configs:
            cfg = dict(cfg)
            method = cfg.pop("method")
            out = generate(family, prompt, method, max_new_tokens=max_new_tokens, **cfg).token_ids
            diff = next((i for i, (a, b) in enumerate(zip(out, ref)) if a != b),
                        None if len(out) == len(ref) else min(len(out), len(ref)))
            label = method + "".join(f" {k}={v}" for k, v in cfg.items())
            rows.append(dict(label=label, prompt=pi, n_tokens=len(out), same=out == ref, first_diff=diff))
    return rows

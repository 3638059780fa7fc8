"""Lenience compared on the same contexts: a run's greedy reviews replayed under other leniences.

In one context a lenient greedy review accepts every token the strict one accepts (the argmax, or
p(x) > q(x) / l, a bound that only loosens as l grows). Two runs at two leniences review different
contexts, so their pooled rates need not be ordered; a replay of one run's reviews under other
leniences (same contexts, same proposals, the rule of ``review.review_greedy``) is, exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.generation import Generation
from ..engine.plan import MAG, check_lenience
from ..engine.stats import PairStats


@dataclass(frozen=True, eq=False)
class LenienceReplay:
    """A run's greedy reviews replayed under each of ``leniences``.

    ``reviews[r]`` is (generation index, event step) of replayed review ``r``; ``accepted[r, j]`` its
    accepted prefix length under ``leniences[j]``; ``stats[j][g]`` the pair statistics of generation
    ``g`` under ``leniences[j]``, in the form of ``Stats.acceptance`` (key ``"reviewer<-proposer"``).
    """
    leniences: tuple[float, ...]
    reviews: tuple[tuple[int, int], ...]
    accepted: np.ndarray                                   # (reviews, leniences)
    stats: tuple[tuple[dict[str, PairStats], ...], ...]    # [lenience][generation]

    def _at(self, lenience: float) -> int:
        if lenience not in self.leniences:
            raise ValueError(f"lenience {lenience!r} was not replayed; this replay has {list(self.leniences)}")
        return self.leniences.index(lenience)

    def pairs(self) -> list[str]:
        """Every pair reviewed under some replayed lenience, sorted."""
        return sorted({k for per_l in self.stats for per_g in per_l for k in per_g})

    def pair_stats(self, lenience: float, generation: int | None = None) -> dict[str, PairStats]:
        """Pair statistics under ``lenience``: of one generation, or merged over all (``None``)."""
        per_g = self.stats[self._at(lenience)]
        if generation is not None:
            return per_g[generation]
        out: dict[str, PairStats] = {}
        for acc in per_g:
            for key, st in acc.items():
                tot = out.setdefault(key, PairStats())
                for pos, (r, a) in enumerate(zip(st.reached, st.accepted)):
                    for j in range(r):
                        tot.add(pos, j < a)
        return out

    def counts(self, pair: str, lenience: float) -> tuple[list[int], list[int]]:
        """Per generation (prompt): drafted tokens of ``pair`` accepted and reviewed under ``lenience``,
        the per-prompt counts :func:`rate_difference` takes (0, 0 where the pair never met)."""
        per_g = self.stats[self._at(lenience)]
        return ([sum(acc[pair].accepted) if pair in acc else 0 for acc in per_g],
                [sum(acc[pair].reached) if pair in acc else 0 for acc in per_g])

    def totals(self, pair: str) -> list[tuple[int, int]]:
        """(accepted, reviewed) drafted tokens of ``pair`` under each replayed lenience, over all generations."""
        return [(sum(h), sum(t)) for h, t in (self.counts(pair, lam) for lam in self.leniences)]

    def violations(self) -> list[str]:
        """Reviews where a higher lenience accepts fewer drafted tokens than a lower one (none, by the rule)."""
        order = np.argsort(self.leniences, kind="stable")
        acc = self.accepted[:, order]                                  # (reviews, leniences), l ascending
        bad = np.flatnonzero((np.diff(acc, axis=1) < 0).any(axis=1)) if acc.shape[1] > 1 else []
        lams = [self.leniences[j] for j in order]
        return [f"generation {self.reviews[r][0]}, review {self.reviews[r][1]}: accepted "
                + ", ".join(f"{a} at l = {lam:g}" for a, lam in zip(acc[r].tolist(), lams)) for r in bad]

    @property
    def monotone(self) -> bool:
        """Every review accepts at least as many drafted tokens under every higher lenience."""
        return not self.violations()


def _replayed_prefix(e, lams: list[float]) -> int:
    """Accepted prefix length of greedy review ``e`` with lenience ``lams[i]`` at position i (review_greedy's rule)."""
    return next((i for i in range(len(e.tokens))
                 if not e.is_argmax[i] and not (lams[i] > 1 and e.px[i] > e.qx[i] / lams[i])), len(e.tokens))


def replay_lenience(gens, leniences) -> LenienceReplay:
    """Replay the greedy reviews of ``gens`` (one Generation, or one per prompt) under each lenience.

    Same contexts and proposals as the run: each review is decided again from its logged
    ``is_argmax``, ``px`` and ``qx`` by the rule of ``review.review_greedy``, the target strict and,
    when the run's plan has ``mag_lenience=False``, MaG's tokens strict. Replaying at the run's own
    lenience must give every review's logged ``n_accepted``, else ``ValueError``: the log is trusted
    only where it reproduces the run. Sampling runs cannot be replayed (their decisions are random).
    """
    gens = [gens] if isinstance(gens, Generation) else list(gens)
    lams = tuple(check_lenience(v) for v in leniences)
    if not lams or not gens:
        raise ValueError(f"need at least one generation and one lenience, got {len(gens)} and {list(lams)}")
    reviews, accepted = [], []
    stats = tuple(tuple({} for _ in gens) for _ in lams)
    for g_i, g in enumerate(gens):
        if g.plan.temperature != 0:
            raise ValueError(f"generation {g_i} sampled (temperature {g.plan.temperature:g}): only greedy "
                             f"reviews replay, since a sampled review's decisions are random")
        for e in g.events:
            m = len(e.tokens)
            if not len(e.is_argmax) == len(e.px) == len(e.qx) == m:
                raise ValueError(f"generation {g_i}, review {e.step} logged no per-token is_argmax/px/qx "
                                 f"(a run made before the log kept them, or a sampling run); rerun it")

            def at(lam: float, e=e) -> list[float]:
                strict = [e.depth == 0 or (who == MAG and not g.plan.mag_lenience) for who in e.proposers]
                return [1.0 if s else lam for s in strict]

            own = _replayed_prefix(e, at(e.lenience))
            if own != e.n_accepted:
                raise ValueError(f"generation {g_i}, review {e.step} ({e.reviewer}): replayed at its own "
                                 f"lenience {e.lenience:g} it accepts {own} tokens, the run accepted "
                                 f"{e.n_accepted}; this log does not reproduce its run")
            row = []
            for j, lam in enumerate(lams):
                a = _replayed_prefix(e, at(lam))
                row.append(a)
                acc = stats[j][g_i]
                for i in range(min(a + 1, m)):  # positions reviewed: up to and including the first rejection
                    acc.setdefault(f"{e.reviewer}<-{e.proposers[i]}", PairStats()).add(i, i < a)
            reviews.append((g_i, e.step))
            accepted.append(row)
    return LenienceReplay(lams, tuple(reviews), np.asarray(accepted, dtype=int).reshape(len(reviews), len(lams)),
                          stats)

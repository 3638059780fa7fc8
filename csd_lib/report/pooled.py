"""Two methods of one bench compared on the same examples: tokens per target call and SWI, with intervals.

The bench summary (:func:`csd_lib.report.summary.summarize`) pools its rates over examples: all
tokens over all target calls, all tokens over all cost (SWI). :func:`example_counts` gives the
per-example numerator and denominator of those pooled rates, and :func:`method_difference` the
difference of two methods' pooled rates over the examples both ran, with the interval of
:func:`csd_lib.report.claims.rate_difference` (examples as paired clusters; too few to decide
below 3 examples).
"""
from __future__ import annotations

from ..engine.stats import model_size_costs
from ..measure.records import fastest
from .claims import Difference, rate_difference

PER = ("target call", "model size")  # tokens per target call; SWI with calls priced by parameter count


def example_counts(records, method: str, per: str = "target call") -> dict[int, tuple[float, float]]:
    """{example: (output tokens, denominator)} of ``method``'s fastest successful record per example.

    ``per="target call"``: the denominator is the target's forward calls (pooled: tokens per target
    call); ``per="model size"``: the run's cost in target calls, each call priced by the model's
    parameter count relative to the target's, MaG free (pooled: SWI, model size).
    """
    if per not in PER:
        raise ValueError(f"per must be one of {PER}, got {per!r}")
    recs = fastest(records).get(method)
    if not recs:
        raise ValueError(f"no successful record of method {method!r} in these records")
    out = {}
    for ex, r in sorted(recs.items()):
        if "calls" not in r.stats:
            raise ValueError(f"the {method} record of example {ex} counted no forward calls (an HF baseline?)")
        calls = r.stats["calls"]
        if per == "target call":
            den = float(calls.get("target", 0))
        else:
            costs = model_size_costs(r.stats["params"])
            den = float(sum(n * costs.get(m, 0.0) for m, n in calls.items()))
        out[ex] = (float(r.n_tokens), den)
    return out


def method_difference(records, a: str, b: str, per: str = "target call") -> Difference:
    """Pooled rate (``per``, see :func:`example_counts`) of method ``a`` minus method ``b`` over the examples
    both ran successfully, examples as paired clusters (:func:`claims.rate_difference`)."""
    ca, cb = example_counts(records, a, per), example_counts(records, b, per)
    common = sorted(set(ca) & set(cb))
    if not common:
        raise ValueError(f"methods {a!r} and {b!r} share no example; compare runs of the same prompts")
    return rate_difference([ca[i][0] for i in common], [ca[i][1] for i in common],
                           [cb[i][0] for i in common], [cb[i][1] for i in common])

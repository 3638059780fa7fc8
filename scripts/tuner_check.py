"""How well the tuner's ranking prices what it then measures.

    python scripts/tuner_check.py [--families tiny-t5,tiny-llama] [--widest-probe]

Runs ``csd_lib.price.tune.tune`` on synth-gsm8k's validation split (4 prompts, the top 8 candidates
measured) with each family's committed cost model, and prints per family the median and range
of predicted / measured speedup, both for the ranking's price (the probes' acceptance) and for
each candidate priced on its own acceptance: the gap between the two is the acceptance
transfer, the rest is the cost model. ``--widest-probe`` probes at the candidates' widest K
instead of the preset's. Run it alone on the machine: timings use the CPU clock.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from csd_lib.price.costs import load_costs
from csd_lib.families.family import load_family
from csd_lib.price.tune import tune
from tune_tiny import candidates


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default="tiny-t5,tiny-llama")
    ap.add_argument("--widest-probe", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    for name in args.families.split(","):
        fam = load_family(name)
        cands = candidates(fam, "full")
        probe = np.max(np.array([k for k, _ in cands]), axis=0).tolist() if args.widest_probe else None
        res = tune(fam, "synth-gsm8k", budget=8, candidates=cands, n=4, max_new_tokens=96,
                   cost_model=load_costs(name, "cpu"), probe_k=probe, progress=False)
        top = [m for m in res.measured if m.predicted]
        for label, ratios in (("ranking price", [m.predicted / m.speedup for m in top]),
                              ("own-acceptance price", [m.predicted_own / m.speedup for m in top])):
            print(f"{name}: {label} / measured: median {np.median(ratios):.2f}, range {min(ratios):.2f}-"
                  f"{max(ratios):.2f} over {len(ratios)} candidates")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

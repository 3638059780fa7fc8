"""Solutions to the exercises of notebooks/04_horizontal_cascade.ipynb (sizes cut for CI)."""
import pandas as pd

from csd_lib import config, generate, load_family, load_task
from csd_lib.engine.kvariants import k_with
from csd_lib.measure.sweep import run_config
from csd_lib.report.compare import gen_run

fam = load_family(config.FAMILY)
K = fam.default_k
DRAFTERS = [d.name for d in fam.drafters] + ["mag"]
prompts = [e.prompt for e in load_task(fam.task, "test", n=2, seed=config.SEED)]


# 1. A wider grid (SWI only, which is deterministic): where is the optimum, and does it move with l?
#    SWI pooled over the prompts (all tokens over all calls), under the model-size and the previous-work costs.
points = {(a, b, lam): run_config(fam, prompts, k_with(K, k11=a, k12=b), lam, 48)
          for lam in (1.0, fam.default_lenience) for a in (1, 2, 3, 5, 8, 12) for b in (0, 4, 8, 14, 20)}
grid = pd.DataFrame([dict(k11=a, k12=b, lenience=lam, swi=pt.swi_ms, swi_pw=gen_run(pt.gens, "previous work").swi)
                     for (a, b, lam), pt in points.items()])
for lam, sub in grid.groupby("lenience"):
    best = sub.loc[sub.swi.idxmax()]
    print(f"ex1 l={lam:g}: best k11={best.k11:g}, k12={best.k12:g}, SWI {best.swi:.2f}")

# 2. Row 2 (k22) against the top row (k11): the spread of SWI each one causes (neither always wins).
k11s = [run_config(fam, prompts, k_with(K, k11=a), fam.default_lenience, 48).swi_ms for a in (1, 4, 8)]
k22s = [run_config(fam, prompts, k_with(K, k22=a), fam.default_lenience, 48).swi_ms for a in (1, 4, 8)]
print(f"ex2 SWI spread over k11: {max(k11s) - min(k11s):.3f}; over k22: {max(k22s) - min(k22s):.3f}")

# 3. k11 = 1: the first token of each target block is handed up by the largest drafter, but it may
#    have been proposed by a level below it (its provenance), which the drafter only reviewed.
g = generate(fam, prompts[0], "csd", k=k_with(K, k11=1), max_new_tokens=64)
top = [e for e in g.events if e.depth == 0 and e.tokens]
not_own = sum(e.provenance[0] != DRAFTERS[0] for e in top)
print(f"ex3 {not_own} of {len(top)} target blocks start with a token that {DRAFTERS[0]} did not propose itself")
assert all(e.proposers[0] == DRAFTERS[0] for e in top)

# 4. Previous-work costs: cheaper drafters (per role) reward configurations that call them more.
print("ex4 rank correlation model size vs previous work:", round(grid.swi.rank().corr(grid.swi_pw.rank()), 2))

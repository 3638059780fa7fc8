"""Solutions to the exercises of notebooks/00_start_here.ipynb (run: python solutions/00_start_here.py).

Sizes are cut so that CI runs every solution in seconds; raise N for the numbers the exercises ask
(CSD_MAX_PROMPTS and CSD_MAX_NEW_TOKENS cap N and MAX_NEW, as in the notebooks).
The family comes from CSD_FAMILY (default tiny-t5) and the prompts from CSD_SEED, as in the notebooks.
"""
from csd_lib import config, generate, load_family, load_task
from csd_lib.measure.bench import run_one
from csd_lib.report.summary import summarize
from csd_lib.report.words import paper_k_entries

N = config.n_prompts(4)
MAX_NEW = config.new_tokens(64)
fam = load_family(config.FAMILY)
examples = load_task(fam.task, "test", n=N, seed=config.SEED)


def table(methods=("ar", "sd", "csd")):
    recs = [dict(run_one(fam, e.prompt, m, MAX_NEW), example=i, method=m) for i, e in enumerate(examples) for m in methods]
    return summarize(recs)


# 1. Two runs of the speed table: SWI counts calls, which greedy decoding fixes, so it repeats exactly;
#    walltime depends on the machine's load and moves from run to run.
a, b = table(), table()
for m in ("sd", "csd"):
    print(f"ex1 {m}: SWI {a[m]['speedup_swi_ms']:.3f} / {b[m]['speedup_swi_ms']:.3f}, "
          f"walltime {a[m]['speedup_walltime']:.2f} / {b[m]['speedup_walltime']:.2f}")
    assert a[m]["speedup_swi_ms"] == b[m]["speedup_swi_ms"], "SWI must repeat exactly under greedy decoding"

# 2. Top row of K all zero except MaG's column: the target reviews MaG's blocks directly (no neural
#    drafter for the target), so the trace is MaG tokens plus the target's corrections.
k = [list(r) for r in fam.default_k]
k[0] = [0] * (len(k) - 1) + [10]
g = generate(fam, examples[0].prompt, "csd", k=k, max_new_tokens=MAX_NEW)
ar = generate(fam, examples[0].prompt, "ar", max_new_tokens=MAX_NEW)
print("ex2 K =", k, "| target calls", g.stats.calls["target"], "| calls", g.stats.calls, "| provenance", g.provenance_counts())
assert g.token_ids == ar.token_ids and all(g.stats.calls.get(d.name, 0) == 0 for d in fam.drafters)

# 3. Lenience 10: the drafters' (lenient) reviews accept more, which changes how work is split,
#    but the target's review is strict, so every kept token is still the target's argmax.
for lam in (fam.default_lenience, 10.0):
    g = generate(fam, examples[0].prompt, "csd", lenience=lam, max_new_tokens=MAX_NEW)
    acc = {p: round(sum(s.accepted) / max(1, sum(s.reached)), 3) for p, s in g.stats.acceptance.items()}
    print(f"ex3 l={lam:g}: calls {g.stats.calls}, acceptance {acc}")
    assert g.token_ids == ar.token_ids

# 4. K in the paper's notation for this family (rerun with CSD_FAMILY=tiny-llama for the other one).
print("ex4", fam.name, {e["name"]: e["value"] for e in paper_k_entries(fam.default_k, [d.name for d in fam.drafters])},
      "| tokens per target call", round(a["csd"]["mean_tokens_per_target_call"], 2), "| SWI", round(a["csd"]["speedup_swi_ms"], 2))

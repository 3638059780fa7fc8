"""Solutions to the exercises of notebooks/10_adaptive_drafting.ipynb (sizes cut for CI)."""
from csd_lib import config, generate, load_family, load_task
from csd_lib.engine.methods import SD
from csd_lib.engine.policy import POLICIES
from csd_lib.report.evidence import policy_configs, policy_evidence, policy_label

fam = load_family(config.FAMILY)
CONFIGS = policy_configs(fam, fam.task)
prompts = [e.prompt for e in load_task(fam.task, "test", n=2, seed=config.SEED)]
MAX_NEW = 32

# 1. Target calls per configuration, summed over the prompts: the fewest for CSD (a tie: each is right), then SD.
gens = {label: [generate(fam, p, max_new_tokens=MAX_NEW, **cfg) for p in prompts] for label, cfg in CONFIGS.items()}
for m in ("csd", "sd"):
    calls = {p: sum(g.stats.calls["target"] for g in gens[policy_label(m, p)]) for p in POLICIES}
    best = [p for p, c in calls.items() if c == min(calls.values())]
    print(f"ex1 {m}: target calls {calls}; fewest: {best}")
ar = [generate(fam, p, "ar", max_new_tokens=MAX_NEW).token_ids for p in prompts]
assert all(g.token_ids == a for gs in gens.values() for g, a in zip(gs, ar))   # every policy keeps AR's tokens

# 2. A higher confidence threshold stops more drafts early: as many rounds or more than at the default.
g9 = generate(fam, prompts[0], max_new_tokens=MAX_NEW, **CONFIGS["sd, confidence"], confidence=0.9)
g4 = gens["sd, confidence"][0]
print(f"ex2 rounds at confidence 0.9: {len(g9.draft_lengths())} (default {len(g4.draft_lengths())}); "
      f"drafted {g9.draft_lengths()}")
assert g9.token_ids == ar[0]

# 3. Pricier drafters: each drafted token costs more, so the length with the most tokens per cost is shorter
#    (a neural drafter's extra token must be kept often enough to pay for its call; MaG stays free).
ewif = gens["csd, ewif"][0]
dear = generate(fam, prompts[0], max_new_tokens=MAX_NEW, **CONFIGS["csd, ewif"],
                draft_costs=[10 * c for c in ewif.plan.draft_costs])
print(f"ex3 ewif draft lengths, default prices {ewif.draft_lengths()}; drafters 10x dearer {dear.draft_lengths()}")
assert dear.token_ids == ar[0]

# 4. With SD's k = 2 the schedule can only move between 1 and 2: after a rejection it drafts 1 token, after a fully
#    kept round 2 again. The committed answers say what that did on tiny-t5-paper.
paper = load_family("tiny-t5-paper")
print("ex4 tiny-t5-paper SD k:", policy_configs(paper, "synth-gsm8k")["sd, schedule"]["k"])
for r in policy_evidence("tiny-t5-paper", "policy-vs-fixed-target-calls"):
    if r["method"] == SD.name and r["policy"] == "schedule":
        print(f"ex4 {r['task']}: tokens per target call, schedule minus fixed: {r['interval']} ({r['verdict']})")

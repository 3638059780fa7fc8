"""Solutions to the exercises of notebooks/08_trees.ipynb (sizes cut for CI)."""
from csd_lib import config, generate, load_family, load_task
from csd_lib.engine.mag import MATCH
from csd_lib.report.trees import (PAPER_TABLE3, TREE_SIDE, live_records, nodes_per_target_call, table3_differences,
                                  takes_trees)
from csd_lib.teach.exercises import check

fam = load_family(config.FAMILY)
tfam = fam if takes_trees(fam) else load_family(TREE_SIDE)
prompt = load_task(tfam.task, "test", 1, seed=config.SEED)[0].prompt
MAX_NEW = config.new_tokens(64)

# 1. A budget of one node per depth is csd's chain reviewed as a (branchless) tree: the same drafts, the
#    same target calls, the same tokens.
chain = generate(tfam, prompt, "csd-tree", tree=[1], max_new_tokens=MAX_NEW)
csd = generate(tfam, prompt, "csd", max_new_tokens=MAX_NEW)
print(f"ex1 target calls: csd-tree with budget [1] {chain.stats.calls['target']}, csd {csd.stats.calls['target']}")
assert all(b == 0 for e in chain.events if e.depth == 0 for b in e.branch)  # no node is a second choice
assert chain.token_ids == csd.token_ids
assert check(csd.stats.calls["target"], chain.stats.calls["target"], rel=0, what="exercise 1").ok  # the answer: csd's calls

# 2. branch below 0 never adds a drafter's second choice (MaG's other matches still hang beside the chain),
#    1 adds one wherever the budget allows: more nodes per call; a branch is wasted when the first choice was
#    right (the target keeps it, the second choice was scored for nothing).
for below in (0.0, 0.8, 1.0):
    g = generate(tfam, prompt, "csd-tree", tree=[2, 2, 2], branch_below=below, max_new_tokens=MAX_NEW)
    kept = sum(1 for e in g.events if e.depth == 0 for i in e.path if e.branch[i] > 0)
    print(f"ex2 branch below {below:g}: {nodes_per_target_call(g):.2f} nodes and {g.stats.tokens_per_target_call:.2f} "
          f"tokens per target call, {kept} second choices kept")
never = generate(tfam, prompt, "csd-tree", tree=[2, 2, 2], branch_below=0.0, max_new_tokens=MAX_NEW)
always = generate(tfam, prompt, "csd-tree", tree=[2, 2, 2], branch_below=1.0, max_new_tokens=MAX_NEW)
second = lambda g: sum(1 for e in g.events for b, p in zip(e.branch, e.provenance) if b and p != MATCH)
assert second(never) == 0 and second(always) > 0  # a drafter's second choice only where it is allowed
assert nodes_per_target_call(always) > nodes_per_target_call(never)  # more second choices scored per call

# 3. The paper: CS Drafting + tree over CS Drafting on GSM8K.
ratio = PAPER_TABLE3["csd-tree"][0] / PAPER_TABLE3["csd"][0]
print(f"ex3 {PAPER_TABLE3['csd-tree'][0]} / {PAPER_TABLE3['csd'][0]} = {ratio:.3f}")
assert check(ratio, 63.81 / 56.72, rel=0.01, what="exercise 3").ok

# 4. More prompts: the counts (tokens per target call) settle sooner than walltime, whose per-prompt noise on a
#    shared CPU is much larger than the difference between the methods.
examples = load_task(tfam.task, "test", config.n_prompts(6), seed=config.SEED)
diffs = table3_differences(live_records(tfam, examples, ["ar", "sd", "csd", "csd-tree"], config.new_tokens(48)))
for cid, d in diffs.items():
    print(f"ex4 {cid}: {d.says()}")
assert all(d.n == len(examples) for d in diffs.values())

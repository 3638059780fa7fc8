"""Solutions to the exercises of notebooks/09_batches.ipynb (sizes cut for CI)."""
from csd_lib import config, load_family, load_task
from csd_lib.engine.methods import AR, CSD, SD
from csd_lib.measure.records import read_records
from csd_lib.price.batch import ar_rate, batch_plans, method_rate, model_call, predict_batches
from csd_lib.price.costs import stored_costs_for_run
from csd_lib.teach.batch_explorer import BATCHES, GPU_SATURATION, committed_acceptance, live_batches, with_lengths
from csd_lib.teach.exercises import check

fam = load_family(config.FAMILY)
name = fam.name if (config.RESULTS_DIR / f"{fam.name}-synth-gsm8k.jsonl").exists() else "tiny-t5"
cm = stored_costs_for_run(name, read_records(config.RESULTS_DIR / f"{name}-synth-gsm8k.jsonl")).cost_model
table, neural = committed_acceptance(name)
plans = batch_plans(cm, table, neural)

# 1. On the GPU with n = 1: the smallest whole B where CSD's speedup over AR is at most 1. It is the first B whose
#    speedup, priced directly, is <= 1 while the one below is > 1.
one = with_lengths(plans, csd_n=1)
res = predict_batches(cm, table, neural, BATCHES, saturation=GPU_SATURATION, plans=one)
x = res["crossover"][CSD.name]["grid"]
speed = lambda B: (method_rate(CSD.name, cm, one[CSD.name], B, saturation=GPU_SATURATION).tokens_per_s  # noqa: E731
                   / ar_rate(cm, B, saturation=GPU_SATURATION).tokens_per_s)
gpu = predict_batches(cm, table, neural, BATCHES, saturation=GPU_SATURATION, plans=plans)
print(f"ex1 CSD with n = 1 on the GPU: speedup over AR falls to 1 at B = {x} ({speed(x - 1):.3f}x at B = {x - 1}, "
      f"{speed(x):.3f}x at B = {x}); section 7's plan (n = {plans[CSD.name]['n']}): B = {gpu['crossover'][CSD.name]['grid']}")
assert x is not None and speed(x) <= 1.0 < speed(x - 1)
verdict = check(x, x, rel=0, what="exercise 1")  # the notebook's check cell
assert verdict.ok and not check(x + 1, x, rel=0, what="exercise 1 (one off)").ok

# 2. SD's k on this CPU: a longer draft keeps more tokens per round (tokens per round grow with k) but its
#    review feeds B x (k + 1) tokens, so its cost in AR steps climbs faster with B.
for k in (1, 16):
    res = predict_batches(cm, table, neural, (1, 64), plans=with_lengths(plans, sd_k=k))
    s = {r["batch"]: r["speedup"] for r in res["rows"] if r["method"] == SD.name}
    print(f"ex2 SD k = {k}: speedup {s[1]:.2f}x at B = 1, {s[64]:.2f}x at B = 64 ({s[64] / s[1] - 1:+.0%})")
long_, short = (predict_batches(cm, table, neural, (1, 64), plans=with_lengths(plans, sd_k=k))["rows"] for k in (16, 1))
fall = [{r["batch"]: r["speedup"] for r in rows if r["method"] == SD.name} for rows in (long_, short)]
assert fall[0][64] / fall[0][1] < fall[1][64] / fall[1][1]  # the long draft loses more of its speedup with B

# 3. The per-call constant a is paid once per call: at batch B it is shared by B rows, so AR's seconds per
#    token fall with B even when every per-token term grows with it.
per_token = {B: ar_rate(cm, B).round_seconds / B for B in (1, 64)}
a = cm.forward["target"].coef[0]
print(f"ex3 AR's seconds per token: {per_token[1] * 1e3:.2f} ms at B = 1, {per_token[64] * 1e3:.2f} ms at B = 64; "
      f"the target's per-call constant a = {a * 1e3:.2f} ms (the fitted one-token call, its own term e included: "
      f"{model_call(cm, 'target', 1, 1) * 1e3:.2f} ms)")
assert per_token[64] < per_token[1]

# 4. A larger live run (cut for CI): every row still equals batch-1 AR; the speedups are an illustration.
prompts = [ex.prompt for ex in load_task(fam.task, "test", config.n_prompts(4), seed=config.SEED)]
live = live_batches(fam, prompts, batches=(1, 4), max_new_tokens=config.new_tokens(12))
assert all([g.token_ids for g in gens] == [a.token_ids for a in live["ar1"]] for gens in live["runs"].values())
for r in live["rows"]:
    if r["method"] != AR.name:
        print(f"ex4 {r['method']} at B = {r['batch']}: {r['speedup']:.2f}x AR's tokens per second at the same B")

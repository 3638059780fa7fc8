"""Solutions to the exercises of notebooks/03_vertical_cascade.ipynb (sizes cut for CI)."""

from csd_lib import config, generate, load_family, load_task, vertical_k
from csd_lib.price import ewif
from csd_lib.report.lenience_replay import replay_lenience
from csd_lib.report.run_counts import calls_per_token, pair_rate

fam = load_family(config.FAMILY)
d1 = fam.drafters[0].name
n = len(fam.drafters) + 1
prompts = [e.prompt for e in load_task(fam.task, "test", n=3, seed=config.SEED)]


def k_vc(mag_n=10):
    k = vertical_k(5, n, mag_n)
    k[0][n - 1] = 0  # Theorem 4.3's cascade, as in the notebook: MaG drafts only for d1
    return k


def run(**kw):
    return [generate(fam, p, max_new_tokens=64, **kw) for p in prompts]


# 1. Lenience sweep for d1 + MaG, with lenience on MaG's tokens (mag_lenience=True; the default, the
#    paper's rule, reviews them strictly, so l would change nothing here). Each review accepts more as l
#    grows, so d1<-mag tends to rise (pooled over different contexts it can wobble a little); once MaG's
#    tokens pass d1's review whether or not d1 agrees, target<-d1 falls and the target's rejections eat
#    the saving.
#    On the same contexts (one run's reviews replayed under every l) the accepted tokens never fall.
leniences = (1.0, 2.0, 3.0, 5.0, 10.0)
for lam in leniences:
    runs = run(method="csd", k=k_vc(), lenience=lam, mag_lenience=True)
    print(f"ex1 l={lam:g}: {d1}<-mag {pair_rate(runs, f'{d1}<-mag'):.3f}, target<-{d1} {pair_rate(runs, f'target<-{d1}'):.3f}, "
          f"{d1} calls/token {calls_per_token(runs, d1):.3f}")
same = replay_lenience(runs, leniences)
assert same.monotone, same.violations()
print(f"ex1 the l=10 run's reviews replayed, {d1}<-mag (accepted, reviewed) by l:",
      dict(zip(leniences, same.totals(f"{d1}<-mag"))))

# 2. MaG blocks of 3 instead of 10: d1 accepts few of MaG's tokens per round, so the tokens after the
#    third are seldom reached and the number of rounds (d1 calls) often does not change at all.
for mag_n in (10, 3):
    runs = run(method="csd", k=k_vc(mag_n), lenience=4.0, mag_lenience=True)
    print(f"ex2 MaG block {mag_n}: {d1} calls {sum(g.stats.calls[d1] for g in runs)}, target calls {sum(g.stats.calls['target'] for g in runs)}")

# 3. Sampling: outputs differ from AR; the per-pair rates are of the same order but not equal (a sampled
#    review accepts x with probability min(1, l p(x) / q(x)), not by argmax agreement).
greedy = run(method="csd")
sampled = [generate(fam, p, "csd", temperature=0.8, seed=i, max_new_tokens=64) for i, p in enumerate(prompts)]
for key in sorted(greedy[0].stats.acceptance):
    print(f"ex3 {key}: greedy {pair_rate(greedy, key):.3f}, temperature 0.8 {pair_rate(sampled, key):.3f}")

# 4. Theorem 4.3 by Monte Carlo at the measured rates of d1 + MaG.
runs = run(method="csd", k=k_vc(), lenience=4.0)
alpha, alpha_p = pair_rate(runs, f"target<-{d1}"), pair_rate(runs, f"{d1}<-mag")
n_rounds = max(1, round(sum(g.stats.calls[d1] for g in runs) / sum(g.stats.calls["target"] for g in runs)))
c = fam.drafters[0].n_params / fam.target.n_params
alpha, alpha_p = min(alpha, 0.99), min(alpha_p, 0.99)
closed = ewif.ewif_vc(alpha, alpha_p, 10, n_rounds, c, 0.0)
mc = ewif.simulate_vc(alpha, alpha_p, 10, n_rounds, c, 0.0, n_sim=50_000, seed=0)
print(f"ex4 alpha {alpha:.3f}, alpha' {alpha_p:.3f}, n {n_rounds}: closed form {closed:.3f}, Monte Carlo {mc['ewif']:.3f} +- {mc['ewif_se']:.3f}")
assert abs(mc["ewif"] / closed - 1) < 0.02

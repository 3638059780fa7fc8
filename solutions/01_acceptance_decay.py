"""Solutions to the exercises of notebooks/01_acceptance_decay.ipynb (sizes cut for CI)."""
import numpy as np

from csd_lib import config, load_family, load_task
from csd_lib.price import ewif
from csd_lib.measure.curves import acceptance_curve, family_curves, greedy_continuations

fam = load_family(config.FAMILY)
tok, style = fam.tokenizer, fam.prompt_style
prompts = [e.prompt for e in load_task(fam.task, "test", n=24, seed=config.SEED)]
conts = greedy_continuations(fam.target.model, tok, prompts, 64, style)

# 1. alpha from 8 prompts against 24: the fit moves with the sample; more prompts, steadier alpha.
for d in fam.drafters:
    small = acceptance_curve(d.model, fam.target.model, tok, prompts[:8], max_pos=30, continuations=conts[:8],
                             prompt_style=style)
    big = acceptance_curve(d.model, fam.target.model, tok, prompts, max_pos=30, continuations=conts,
                           prompt_style=style)
    print(f"ex1 {d.name}: alpha {small['alpha']:.3f} (8 prompts) -> {big['alpha']:.3f} (24), moved "
          f"{'more' if abs(small['alpha'] - big['alpha']) > 0.02 else 'less'} than 0.02")
    curve = big

# 2. The conditional curve alone: under the i.i.d. model it is flat; look for dips.
c = np.array(curve["conditional"][:20], dtype=float)
dips = [i + 1 for i in range(len(c)) if c[i] < np.nanmean(c) - 0.1]
print(f"ex2 {fam.drafters[-1].name}: conditional {np.round(c, 2).tolist()}; positions more than 0.1 below the mean: {dips}")

# 3. Drafter-to-drafter curves (needs two neural drafters).
models = [fam.target.model] + [d.model for d in fam.drafters]
names = ["target"] + [d.name for d in fam.drafters]
curves = family_curves(models, tok, prompts[:8], names=names, max_new_tokens=64, max_pos=10, prompt_style=style)
print("ex3", {k: round(v["alpha"], 3) for k, v in curves.items()})

# 4. Best SD block length from the measured alpha and the parameter ratio.
for d in fam.drafters:
    a = acceptance_curve(d.model, fam.target.model, tok, prompts, max_pos=30, continuations=conts,
                         prompt_style=style)["alpha"]
    c_ = d.n_params / fam.target.n_params
    k, t = ewif.best_k_sd(a, c_)
    print(f"ex4 {d.name}: alpha {a:.3f}, c {c_:.3f} -> best k {k}, EWIF {t:.2f}")
    assert t >= ewif.ewif_sd(a, 1, c_)

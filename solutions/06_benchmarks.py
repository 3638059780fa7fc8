"""Solutions to the exercises of notebooks/06_benchmarks.ipynb (sizes cut for CI)."""
import tempfile
from pathlib import Path

from csd_lib.measure import bench
from csd_lib import config, generate, load_family, load_task
from csd_lib.report import summary
from csd_lib.engine.kvariants import base_mag_k
from csd_lib.report.regimes import runs_swi, side_family, swi_difference

fam = load_family(config.FAMILY)
examples = load_task(fam.task, "test", 3, seed=config.SEED)
tmp = Path(tempfile.mkdtemp())

# 1. Two recomputed runs: SWI depends only on call counts (fixed under greedy decoding), walltime on load.
runs = [summary.summarize(bench.run_bench(fam, examples, ["ar", "sd", "csd"], tmp / f"r{i}.jsonl", max_new_tokens=48, progress=False))
        for i in range(2)]
for m in ("sd", "csd"):
    print(f"ex1 {m}: SWI {runs[0][m]['speedup_swi_ms']:.3f} / {runs[1][m]['speedup_swi_ms']:.3f}, "
          f"walltime {runs[0][m]['speedup_walltime']:.2f} / {runs[1][m]['speedup_walltime']:.2f}")
    assert runs[0][m]["speedup_swi_ms"] == runs[1][m]["speedup_swi_ms"]

# 2. "Measured-cost SWI": price each call by its measured latency relative to the target's.
recs = bench.read_records(tmp / "r0.jsonl")
s = runs[0]
for m in ("sd", "csd"):
    lat = s[m]["forward_time_per_call"]
    costs = {n: t / lat["target"] for n, t in lat.items()}
    toks = sum(r["stats"]["n_tokens"] for r in recs if r["method"] == m)
    spent = sum(c * costs.get(n, 0.0) for r in recs if r["method"] == m for n, c in r["stats"]["calls"].items())
    print(f"ex2 {m}: SWI model size {s[m]['speedup_swi_ms']:.2f}, measured-cost SWI {toks / spent:.2f}, walltime {s[m]['speedup_walltime']:.2f}")

# 3. Another K: SWI moves with the calls it causes, walltime with calls and overhead.
n = len(fam.drafters) + 1
k = [[2, 10, 10], [0, 1, 10], [0, 0, 10]] if n == 3 else [[2, 10], [0, 10]]
other = summary.summarize(bench.run_bench(fam, examples, ["ar", "csd"], tmp / "k.jsonl", max_new_tokens=48, k=k, progress=False))
print(f"ex3 K={k}: SWI {other['csd']['speedup_swi_ms']:.2f} (default K {s['csd']['speedup_swi_ms']:.2f}), "
      f"walltime {other['csd']['speedup_walltime']:.2f} (default K {s['csd']['speedup_walltime']:.2f})")

# 4. The other regime's top run by SWI (model size), and whether it beats the runner-up beyond the noise
#    (a real family has no tiny side: its own runs). "drafter + MaG" is the notebook's K (base_mag_k).
paper = load_family(side_family(fam.name) or fam.name)
kv = base_mag_k(paper, fam.task) if len(paper.drafters) >= 2 else paper.default_k
ex4 = {"SD": [generate(paper, e.prompt, "sd", k=paper.sd_k_for(fam.task), max_new_tokens=48) for e in examples],
       "drafter + MaG": [generate(paper, e.prompt, "csd", k=kv, max_new_tokens=48) for e in examples]}
if len(paper.drafters) >= 2:
    ex4["full cascade"] = [generate(paper, e.prompt, "csd", max_new_tokens=48) for e in examples]
ranked = sorted(ex4, key=lambda name: runs_swi(ex4[name]), reverse=True)
print(f"ex4 {paper.name}: " + ", ".join(f"{name} {runs_swi(ex4[name]):.2f}" for name in ranked)
      + f"; top against runner-up: {swi_difference(ex4[ranked[0]], ex4[ranked[1]]).says(digits=2)}")

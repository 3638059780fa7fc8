"""The README's main job: AR, SD and CSD on the embedded family, identical outputs, trace, speed."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .. import config
from ..engine.cascade import generate
from ..engine.methods import get
from ..engine.plan import METHODS
from ..families.family import load_family
from ..families.tasks import load_task
from ..measure.bench import run_bench
from ..report.summary import format_table, summarize
from ..viz import trace_text

DEMO_METHODS = list(METHODS)


def run_demo(family_name: str = "tiny-t5", n_prompts: int = 5, max_new_tokens: int = 128,
             color: bool | None = None) -> dict:
    """Print the identity check, a CSD trace coloured by level (``color``; None: on a terminal without
    ``NO_COLOR``, :func:`csd_lib.config.color_for`) and the speed table; return the summary."""
    fam = load_family(family_name)
    methods = [m for m in DEMO_METHODS if get(m).runs_on(fam)]
    examples = load_task(fam.task, "test", n_prompts)
    print(f"family {fam.name}: target {fam.target.n_params / 1e6:.1f}M params, drafters "
          + ", ".join(f"{d.name} {d.n_params / 1e6:.2f}M" for d in fam.drafters)
          + f", MaG; K={fam.default_k}, lenience={fam.default_lenience}")
    with tempfile.TemporaryDirectory() as tmp:
        records = run_bench(fam, examples, methods, Path(tmp) / "demo.jsonl", max_new_tokens, progress=False)
    summary = summarize(records)
    print("\nSame tokens as AR (greedy, lossless):")
    for m in methods[1:]:
        same = summary[m]["n"] - summary[m]["mismatches"]
        print(f"  {m:<7} {same}/{summary[m]['n']} prompts identical")
    g = generate(fam, examples[0].prompt, "csd", max_new_tokens=max_new_tokens)
    print(f"\nPrompt: {examples[0].prompt!r}\nCSD output, each token coloured by the level that proposed it:")
    print(trace_text(g, fam.tokenizer, color=config.color_for(sys.stdout) if color is None else color))
    print("\n" + "Per-level provenance: " + ", ".join(f"{k}={v}" for k, v in g.provenance_counts().items()))
    print(f"\nSpeed over {len(examples)} prompts (walltime measured in one interleaved run on this machine; "
          f"SWI = standardized cost model):")
    print(format_table(summary))
    return summary

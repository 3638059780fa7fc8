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
from ..measure.bench import duration, run_bench
from ..price.tuned import estimate_seconds, save_tuned, tune_family, tuned_settings
from ..report.summary import format_table, summarize
from ..viz import trace_text

DEMO_METHODS = list(METHODS)


def offer_tuning(fam) -> dict:
    """The settings the demo's bench runs (:func:`csd_lib.price.tuned.tuned_settings`), said on stderr. Where none
    is tuned for this machine class, the note says the command and how long it takes; on a terminal the demo
    asks whether to tune now (y/N), elsewhere (CI, a pipe) it only says so."""
    used, note = tuned_settings(fam.name, "bench")
    print(f"K, k and policy: {note}", file=sys.stderr)
    if used["k"] is not None or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return used
    if input(f"tune {fam.name} for this machine now (about {duration(estimate_seconds(fam.name))})? [y/N] ")\
            .strip().lower() not in ("y", "yes"):
        return used
    print(f"stored: {save_tuned(tune_family(fam))}", file=sys.stderr)
    used, note = tuned_settings(fam.name, "bench")
    print(f"K, k and policy: {note}", file=sys.stderr)
    return used


def run_demo(family_name: str = "tiny-t5", n_prompts: int = 5, max_new_tokens: int = 128,
             color: bool | None = None) -> dict:
    """Print the identity check, a CSD trace coloured by level (``color``; None: on a terminal without
    ``NO_COLOR``, :func:`csd_lib.config.color_for`) and the speed table; return the summary. K, SD's k and the
    draft policy are those tuned for this machine class where stored (:func:`offer_tuning` else)."""
    fam = load_family(family_name)
    used = offer_tuning(fam)
    methods = [m for m in DEMO_METHODS if get(m).runs_on(fam)]
    examples = load_task(fam.task, "test", n_prompts)
    policy = {"draft_policy": used["draft_policy"], "confidence": used["confidence"]} if used["draft_policy"] else None
    print(f"family {fam.name}: target {fam.target.n_params / 1e6:.1f}M params, drafters "
          + ", ".join(f"{d.name} {d.n_params / 1e6:.2f}M" for d in fam.drafters)
          + f", MaG; K={used['k'] or fam.default_k}, lenience={used['lenience'] or fam.default_lenience}")
    with tempfile.TemporaryDirectory() as tmp:
        records = run_bench(fam, examples, methods, Path(tmp) / "demo.jsonl", max_new_tokens, progress=False,
                            k=used["k"], lenience=used["lenience"], sd_k=used["sd_k"], policy=policy)
    summary = summarize(records)
    print("\nSame tokens as AR (greedy, lossless):")
    for m in methods[1:]:
        same = summary[m]["n"] - summary[m]["mismatches"]
        print(f"  {m:<7} {same}/{summary[m]['n']} prompts identical")
    csd = tuned_settings(fam.name, "csd")[0]
    g = generate(fam, examples[0].prompt, "csd", max_new_tokens=max_new_tokens, k=csd["k"], lenience=csd["lenience"],
                 draft_policy=csd["draft_policy"], confidence=csd["confidence"])
    print(f"\nPrompt: {examples[0].prompt!r}\nCSD output, each token coloured by the level that proposed it:")
    print(trace_text(g, fam.tokenizer, color=config.color_for(sys.stdout) if color is None else color))
    print("\n" + "Per-level provenance: " + ", ".join(f"{k}={v}" for k, v in g.provenance_counts().items()))
    print(f"\nSpeed over {len(examples)} prompts (walltime measured in one interleaved run on this machine; "
          f"SWI = standardized cost model):")
    print(format_table(summary))
    return summary

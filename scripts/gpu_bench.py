"""GPU path: the same benchmark in bf16 on the tiny families. Without CUDA it exits cleanly.

    python scripts/gpu_bench.py [--n 20] [--out-dir results/gpu]
"""
import argparse
import sys
import tempfile
from pathlib import Path

import torch

from csd_lib.measure.bench import run_bench
from csd_lib.measure.machine import environment
from csd_lib.report.summary import format_table, summarize
from csd_lib.families.family import load_family
from csd_lib.families.tasks import load_task


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--out-dir", default=None, help="keep the JSONL results here (default: a temp dir)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: the GPU benchmark needs one (nothing to do)")
        return 0
    out_dir = Path(args.out_dir or tempfile.mkdtemp())
    print(environment())
    for fam_name, methods in (("tiny-t5", ["ar", "sd", "mag", "staged", "csd", "hf-assisted", "hf-pld"]),
                              ("tiny-llama", ["ar", "sd", "mag", "csd", "hf-assisted", "hf-pld"])):
        fam = load_family(fam_name, device="cuda", dtype=args.dtype)
        for task in ("synth-gsm8k", "synth-mmlu"):
            ex = load_task(task, "test", args.n)
            recs = run_bench(fam, ex, methods, out_dir / f"{fam_name}-{task}-{args.dtype}.jsonl",
                             args.max_new_tokens, warmup=2)
            print(f"\n== {fam_name} / {task} / {args.dtype} / cuda ==")
            print(format_table(summarize(recs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

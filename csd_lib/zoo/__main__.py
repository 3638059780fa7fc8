"""CLI: ``python -m csd_lib.zoo {prepare,train,export,card,snapshots,bench-speed,medusa} --family tiny-t5``."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

import torch

from csd_lib.engine.methods import MEDUSA


def _stop_time(text: str | None) -> float | None:
    """'HH:MM' (UTC, today) as a time.time() value."""
    if not text:
        return None
    h, m = (int(x) for x in text.split(":"))
    now = dt.datetime.now(dt.timezone.utc)
    return now.replace(hour=h, minute=m, second=0, microsecond=0).timestamp()


def _kv(items):
    out = {}
    for it in items or []:
        k, _, v = it.partition("=")
        out[k] = float(v)
    return out


# long: the zoo's argument table and the dispatch of its two commands
def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m csd_lib.zoo")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="train the tokenizer and tokenize the corpus (runs/)")
    p = sub.add_parser("train", help="train (or resume) a family and export it to data/models/")
    p.add_argument("--family", required=True)
    p.add_argument("--only", help="train only this model of the family")
    p.add_argument("--minutes", nargs="*", help="NAME=MINUTES budgets (default: presets)")
    p.add_argument("--steps", nargs="*", help="NAME=STEPS budgets (override minutes)")
    p.add_argument("--stop-at", help="UTC HH:MM: stop, checkpoint and export by then")
    p.add_argument("--restart", action="store_true", help="with --only: retrain that model from scratch")
    p.add_argument("--snapshot-every", type=int, help="save the weights every N steps (runs/<name>/snap-*.pt)")
    p.add_argument("--threads", type=int, default=1)
    p = sub.add_parser("export", help="export the latest checkpoint of each model (even unfinished)")
    p.add_argument("--family", required=True)
    p = sub.add_parser("card", help="re-measure a family and write data/models/<family>-MODEL_CARD.md")
    p.add_argument("--family", required=True)
    p.add_argument("--n", type=int, default=100, help="test examples per task for accuracy")
    p.add_argument("--n-accept", type=int, default=20, help="prompts per task for acceptance")
    p.add_argument("--max-pos", type=int, default=10, help="acceptance positions to measure")
    p.add_argument("--threads", type=int, default=1)
    p = sub.add_parser("snapshots", help="acceptance by the target of each saved snapshot of a drafter")
    p.add_argument("--family", required=True)
    p.add_argument("--only", required=True, help="the drafter whose snapshots to measure")
    p.add_argument("--n-accept", type=int, default=20, help="validation prompts (synth-gsm8k)")
    p.add_argument("--threads", type=int, default=1)
    p = sub.add_parser("bench-speed", help="time a few training steps of each preset")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--names", nargs="*")
    p = sub.add_parser(MEDUSA.name, help="train Medusa-1 heads on a family's target (data/models/<family>-medusa/)")
    p.add_argument("--family", required=True)
    p.add_argument("--steps", type=int, default=8000, help="training steps (more continues a finished run)")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--out", help="output folder (default: data/models/<family>-medusa)")
    p.add_argument("--prompts", type=int, default=6000, help="training prompts per synthetic task")
    p.add_argument("--batch", type=int, default=1024, help="rows per step")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(getattr(args, "threads", 1))

    from csd_lib.zoo import train as T
    if args.cmd == "prepare":
        T.prepare()
    elif args.cmd == "train":
        T.train_family(args.family, minutes=_kv(args.minutes),
                       steps={k: int(v) for k, v in _kv(args.steps).items()},
                       stop_at=_stop_time(args.stop_at), only=args.only,
                       restart=args.restart, snapshot_every=args.snapshot_every)
    elif args.cmd == "export":
        T.export_latest(args.family)
    elif args.cmd == "card":
        from csd_lib.zoo.card import write_card
        write_card(args.family, n=args.n, n_accept=args.n_accept, max_pos=args.max_pos)
    elif args.cmd == "snapshots":
        from csd_lib.zoo.card import snapshot_curves
        from csd_lib.zoo.train import RUNS_DIR
        rows = snapshot_curves(args.family, args.only, n_prompts=args.n_accept)
        for r in rows:
            print(f"{args.only} step {r['step']}: pos1 {r['pos1']:.3f} pos30 {r['pos30']:.3f} "
                  f"alpha {r['alpha']:.3f}")
        (RUNS_DIR / args.only / "snapshots.json").write_text(json.dumps(rows, indent=1) + "\n")
    elif args.cmd == "bench-speed":
        T.bench_speed(args.names)
    elif args.cmd == MEDUSA.name:  # heads for the medusa method
        import logging
        from csd_lib.zoo.medusa import run_family
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
        cmd = " ".join(["python -m csd_lib.zoo", *(argv if argv is not None else sys.argv[1:])])
        meta = run_family(args.family, steps=args.steps, n_heads=args.heads, out=args.out,
                          n_per_task=args.prompts, batch=args.batch, lr=args.lr, command=cmd)
        ev = meta["eval"]["all"]
        print(f"medusa {args.family}: base top-1 {ev['base_top1']:.3f}; heads top-1 "
              + " ".join(f"{a:.3f}" for a in ev["topk"][1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

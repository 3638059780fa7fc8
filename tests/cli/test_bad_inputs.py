"""Bad input across the API and the CLI, one table: every case gets its message and exit status.

API cases must raise ``ValueError`` with the message. CLI cases run in process through
``csd_lib.__main__.main(argv)`` and must end with exit status 2 and exactly one stderr
line ``error: ...`` (no traceback), before any model loads. Every case must leave the
files it was given byte-for-byte unchanged and create none (no half-written output).
A few cases run the real console commands as subprocesses.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from csd_lib import generate, random_family
from csd_lib.cli.main import main
from csd_lib.engine.batch import generate_batch
from csd_lib.cli.parser import parser, prog_name
from csd_lib.measure.records import read_records
from csd_lib.measure.bench import run_bench
from csd_lib.measure.lossless import exact_joint
from csd_lib.families.tasks import load_task
from csd_lib.price.tune import grid_search, tune

NAN, INF = float("nan"), float("inf")


@functools.lru_cache(maxsize=None)
def fam():
    return random_family("llama", vocab_size=32, n_drafters=2, seed=0)


def gen(prompt=(3, 4, 5), **kw):
    return lambda d: generate(fam(), list(prompt) if isinstance(prompt, tuple) else prompt,
                              **{"max_new_tokens": 4, **kw})


OTHER_RUN = json.dumps({"example": 0, "method": "ar", "rep": 0, "family": "tiny-llama", "task": "synth-gsm8k",
                        "source": "synthetic:test:seed0:0", "max_new_tokens": 128, "token_ids": [5],
                        "stats": {"n_tokens": 1, "wall_time": 0.1},
                        "config": {"k": None, "lenience": 1.0, "drafters": []}}).encode() + b"\n"
FILES = {  # written into a fresh folder per case; {d} in argv is that folder
    "nonutf8.jsonl": b'{"prompt": "a"}\n\xff\xfe\n',
    "malformed.jsonl": b'{"prompt": "a"}\n\n{oops\n',
    "noprompt.jsonl": b'{"text": "a"}\n',
    "blank.jsonl": b"\n  \n",
    "k_bad.json": b"[[1, 2],\n [0, 1}\n",
    "k_nonutf8.json": b"[[1, \xe9]]\n",
    "results_bad.jsonl": b'{"example": 0, "method": "ar", "stats": {}}\n{oops\n'
                         b'{"example": 1, "method": "ar", "stats": {}}\n',
    "results_nonutf8.jsonl": b'{"example": 0, "method": "ar", "stats": {}}\n\xff\n',
    "results_notrecord.jsonl": b'[1, 2]\n',
    "afile": b"not a folder\n",
    "whitespace.jsonl": b'{"prompt": "w3 w4"}\n{"prompt": "   "}\n',
    "results_strex.jsonl": b'{"example": "0", "method": "ar", "stats": {}}\n',
    "results_other_family.jsonl": OTHER_RUN,
    "costs_bad.json": b'{"family": "tiny-t5"}\n',
    "surrogate.jsonl": b'{"prompt": "caf\\udce9"}\n',
}
BENCH = ["bench", "--family", "tiny-t5", "--n", "1"]


@dataclass
class Case:
    id: str
    msg: str                      # must appear in the ValueError / the stderr line
    api: object = None            # callable(dir) for API cases
    argv: tuple = ()              # CLI arguments for CLI cases
    code: int | None = None       # CLI exit status
    loads: bool = False           # checked once the family is loaded: its notes may precede the error line


CASES = [
    # -- API: numbers that are not finite, not numbers, or out of range
    Case("api-temperature-nan", "temperature must be a finite number >= 0", api=gen(temperature=NAN)),
    Case("api-temperature-inf", "temperature must be a finite number >= 0", api=gen(temperature=INF)),
    Case("api-temperature-str", "got '0.5'", api=gen(temperature="0.5")),
    Case("api-temperature-bool", "temperature must be", api=gen(temperature=True)),
    Case("api-temperature-negative", "got -1", api=gen(temperature=-1)),
    Case("api-lenience-nan", "lenience must be a finite number >= 1", api=gen(lenience=NAN)),
    Case("api-lenience-inf", "lenience must be a finite number >= 1", api=gen(lenience=INF)),
    Case("api-lenience-str", "got '3'", api=gen(lenience="3")),
    Case("api-mag-lenience-str", "mag_lenience must be True", api=gen(mag_lenience="paper")),
    Case("api-mag-lenience-sd", "method 'sd' has no lenient review", api=gen(method="sd", mag_lenience=False)),
    Case("api-seed-negative", "seed must be an integer in [0, 2**64)", api=gen(temperature=1.0, seed=-1)),
    Case("api-seed-float", "got 1.5", api=gen(temperature=1.0, seed=1.5)),
    Case("api-seed-str", "got '7'", api=gen(temperature=1.0, seed="7")),
    Case("api-seed-bool", "got True", api=gen(temperature=1.0, seed=True)),
    Case("api-seed-huge", "seed must be", api=gen(temperature=1.0, seed=2 ** 64)),
    Case("api-max-new-tokens-nan", "max_new_tokens must be an integer >= 1, got nan", api=gen(max_new_tokens=NAN)),
    Case("api-max-new-tokens-float", "max_new_tokens must be an integer >= 1, got 2.0", api=gen(max_new_tokens=2.0)),
    # -- API: lenience given to a method without draft-to-draft reviews
    *[Case(f"api-lenience-{m}", f"method '{m}' reviews without lenience", api=gen(method=m, lenience=2.0))
      for m in ("ar", "sd", "mag", "staged")],
    # -- API: settings the method does not use, and an SD that drafts nothing
    Case("api-ar-k", "method 'ar' drafts nothing, so it takes no k", api=gen(method="ar", k=3)),
    Case("api-ar-k-not-json", "method 'ar' drafts nothing, so it takes no k", api=gen(method="ar", k="[[1,")),
    Case("api-sd-k-zero", "SD needs a draft length k >= 1", api=gen(method="sd", k=0)),
    Case("api-naive-not-bool", "naive must be True (review against raw drafter distributions, the biased variant) "
         "or False (exact), got 'yes'", api=gen(naive="yes")),
    Case("api-sd-k-zero-matrix", "SD needs a draft length k >= 1", api=gen(method="sd", k=[[0]])),
    *[Case(f"api-drafter-{m}", f"method '{m}' takes no drafter", api=gen(method=m, drafter="small"))
      for m in ("ar", "mag", "staged", "csd")],
    # -- API: tuner and bench entries
    Case("api-tune-max-new-tokens-inf", "max_new_tokens must be an integer",
         api=lambda d: tune(fam(), ["w3 w4"], max_new_tokens=INF)),
    Case("api-tune-candidate-lenience-nan", "lenience must be a finite number",
         api=lambda d: tune(fam(), ["w3 w4"], candidates=[(fam().default_k, NAN)])),
    Case("api-exact-joint-temperature-nan", "temperature must be a finite number >= 0",
         api=lambda d: exact_joint(fam(), "w3", 1, temperature=NAN)),
    Case("api-grid-n-zero", "n must be an integer >= 1", api=lambda d: grid_search(fam(), ["w3"], [], n=0)),
    Case("api-run-bench-max-new-tokens-nan", "max_new_tokens must be an integer",
         api=lambda d: run_bench(fam(), load_task("synth-gsm8k", "test", 1), ["ar"], d / "out.jsonl",
                                 max_new_tokens=NAN, progress=False)),
    Case("api-read-records-malformed", "results_bad.jsonl:2 is not a JSON record",
         api=lambda d: read_records(d / "results_bad.jsonl")),
    Case("api-read-records-example-str", "results_strex.jsonl:1 has example '0', not an integer >= 0",
         api=lambda d: read_records(d / "results_strex.jsonl")),
    # -- API: prompts and families that torch would have choked on
    Case("api-prompt-id-too-big", "prompt token id 99999 is out of range [0, 32)", api=gen(prompt=[5, 99999])),
    Case("api-prompt-id-negative", "prompt token id -1 is out of range [0, 32)", api=gen(prompt=[5, -1])),
    Case("api-prompt-none", "prompt must be text (str) or token ids (a list of ints), got NoneType",
         api=gen(prompt=None)),
    Case("api-prompt-int", "prompt must be text (str) or token ids (a list of ints), got int 5", api=gen(prompt=5)),
    Case("api-prompt-bytes", "got bytes b'w3 w4'", api=gen(prompt=b"w3 w4")),
    Case("api-prompt-floats", "prompt ids must be ints, got float 3.0", api=gen(prompt=[3.0, 4.0])),
    Case("api-prompt-bools", "prompt ids must be ints, got bool True", api=gen(prompt=[True, 4])),
    Case("api-prompt-nested", "prompt ids must be ints, got list [3, 4]", api=gen(prompt=[[3, 4]])),
    Case("api-prompt-float-array", "prompt ids must be integers, got an array of float64",
         api=gen(prompt=np.array([3.0, 4.0]))),
    Case("api-prompt-2d-tensor", "prompt ids must be 1-D, got shape (1, 2)", api=gen(prompt=torch.tensor([[3, 4]]))),
    Case("api-prompt-lone-surrogate", "the prompt is not valid text: character 4 ('\\udce9') is byte 0xe9, which is "
         "not UTF-8", api=gen(prompt="caf\udce9")),
    Case("api-prompt-lone-surrogate-high", "character 2 ('\\ud800') is a lone surrogate", api=gen(prompt="a\ud800")),
    Case("api-family-name", "load it first: fam = load_family('tiny-t5')",
         api=lambda d: generate("tiny-t5", "w3 w4", max_new_tokens=4)),
    Case("api-family-other", "family must be a loaded Family", api=lambda d: generate({"target": 1}, "w3 w4")),
    Case("api-load-task-too-many", "synth-gsm8k/test holds 200 examples, 100000 were asked for",
         api=lambda d: load_task("synth-gsm8k", "test", 100000)),
    # -- CLI: numbers
    Case("cli-temperature-nan", "argument --temperature: 'nan' is not a finite number",
         argv=("generate", "--temperature", "nan", "--prompt", "x"), code=2),
    Case("cli-temperature-text", "argument --temperature: 'warm' is not a number",
         argv=("generate", "--temperature", "warm", "--prompt", "x"), code=2),
    Case("cli-lenience-inf", "argument --lenience: 'inf' is not a finite number",
         argv=("generate", "--lenience", "inf", "--prompt", "x"), code=2),
    Case("cli-seed-negative", "argument --seed: '-3' is not an integer in [0, 2**64)",
         argv=("generate", "--temperature", "1", "--seed=-3", "--prompt", "x"), code=2),
    Case("cli-seed-float", "argument --seed: '1.5' is not an integer",
         argv=("generate", "--seed", "1.5", "--prompt", "x"), code=2),
    Case("cli-max-new-tokens-zero", "argument --max-new-tokens: '0' must be >= 1",
         argv=("generate", "--max-new-tokens", "0", "--prompt", "x"), code=2),
    Case("cli-max-new-tokens-nan", "argument --max-new-tokens: 'nan' is not an integer",
         argv=("generate", "--max-new-tokens", "nan", "--prompt", "x"), code=2),
    # -- CLI: names outside the choices
    Case("cli-method", "argument --method: invalid choice: 'beam'",
         argv=("generate", "--method", "beam", "--prompt", "x"), code=2),
    Case("cli-family", "argument --family: invalid choice: 'gpt-5'",
         argv=("generate", "--family", "gpt-5", "--prompt", "x"), code=2),
    Case("cli-dtype", "argument --dtype: invalid choice: 'fp8'",
         argv=("generate", "--dtype", "fp8", "--prompt", "x"), code=2),
    Case("cli-lenience-sd", "method 'sd' reviews without lenience",
         argv=("generate", "--method", "sd", "--lenience", "2", "--prompt", "x"), code=2),
    Case("cli-mag-lenience-sd", "method 'sd' has no lenient review",
         argv=("generate", "--method", "sd", "--mag-lenience", "paper", "--prompt", "x"), code=2),
    Case("cli-mag-lenience-choice", "argument --mag-lenience: invalid choice: 'yes'",
         argv=("generate", "--mag-lenience", "yes", "--prompt", "x"), code=2),
    Case("cli-ar-k-not-json", "method 'ar' drafts nothing, so it takes no k",
         argv=("generate", "--method", "ar", "--k", "[[1,", "--prompt", "x"), code=2),
    Case("cli-no-prompt", "give exactly one of --prompt TEXT or --prompts-file", argv=("generate",), code=2),
    Case("cli-batch-size-zero", "argument --batch-size: '0' must be >= 1",
         argv=("generate", "--batch-size", "0", "--prompt", "x"), code=2),
    Case("cli-batch-size-not-int", "argument --batch-size: '2.5' is not an integer",
         argv=("generate", "--batch-size", "2.5", "--prompt", "x"), code=2),
    Case("cli-batch-size-tree", "method 'csd-tree' verifies a token tree, which batched generation does not run",
         argv=("generate", "--method", "csd-tree", "--batch-size", "4", "--prompt", "x"), code=2),
    Case("api-batch-size-zero", "batch_size (prompts generated at once) must be an integer >= 1, got 0",
         api=lambda d: generate_batch(fam(), [[3, 4]], "ar", batch_size=0)),
    Case("api-batch-size-bool", "batch_size (prompts generated at once) must be an integer >= 1, got True",
         api=lambda d: generate_batch(fam(), [[3, 4]], "ar", batch_size=True)),
    Case("api-batch-no-prompts", "prompts must be a non-empty list of prompts",
         api=lambda d: generate_batch(fam(), [], "ar")),
    Case("cli-k-for-medusa", "method 'medusa' takes no k: its tree budget (tree) sets its draft (got k='[[3]]')",
         argv=("generate", "--method", "medusa", "--k", "[[3]]", "--prompt", "x"), code=2),
    Case("cli-tree-not-json", "bad tree budget 'wide': the tree budget is the most nodes per depth",
         argv=("generate", "--method", "csd-tree", "--tree", "wide", "--prompt", "x"), code=2),
    Case("cli-k-for-ar", "method 'ar' drafts nothing, so it takes no k (got k='[[3]]')",
         argv=("generate", "--method", "ar", "--k", "[[3]]", "--prompt", "x"), code=2),
    Case("cli-device-bogus", "argument --device: 'bogus' is not a torch device; use cpu, cuda, cuda:N or mps",
         argv=("generate", "--device", "bogus", "--prompt", "x"), code=2),
    Case("cli-device-missing-gpu", "argument --device: 'cuda:7': this machine has",
         argv=("generate", "--device", "cuda:7", "--prompt", "x"), code=2),
    Case("cli-no-command", "the following arguments are required: command", argv=(), code=2),
    # -- CLI and API: the draft-length policy
    Case("cli-draft-policy-choice", "argument --draft-policy: invalid choice: 'fast'",
         argv=("generate", "--draft-policy", "fast", "--prompt", "x"), code=2),
    Case("cli-draft-policy-ar", "method 'ar' drafts nothing: it takes only the draft policy 'fixed'",
         argv=("generate", "--method", "ar", "--draft-policy", "schedule", "--prompt", "x"), code=2),
    Case("cli-draft-policy-tree", "method 'tree-sd' reviews a token tree",
         argv=("generate", "--method", "tree-sd", "--draft-policy", "ewif", "--prompt", "x"), code=2),
    Case("cli-draft-policy-mag-confidence", "method 'mag' drafts with MaG alone, which has no probabilities",
         argv=("generate", "--method", "mag", "--draft-policy", "confidence", "--prompt", "x"), code=2),
    Case("cli-confidence-without-policy", "confidence=0.3 is the confidence policy's threshold",
         argv=("generate", "--confidence", "0.3", "--prompt", "x"), code=2),
    Case("cli-confidence-range", "confidence must be a probability in [0, 1]",
         argv=("generate", "--draft-policy", "confidence", "--confidence", "2", "--prompt", "x"), code=2),
    Case("cli-confidence-nan", "argument --confidence: 'nan' is not a finite number",
         argv=("generate", "--draft-policy", "confidence", "--confidence", "nan", "--prompt", "x"), code=2),
    Case("cli-bench-draft-policy-choice", "argument --draft-policy: invalid choice: 'often'",
         argv=(*BENCH, "--out", "{d}/r.jsonl", "--draft-policy", "often"), code=2),
    Case("cli-bench-confidence-without-policy", "confidence=0.5 is the confidence policy's threshold",
         argv=(*BENCH, "--out", "{d}/r.jsonl", "--confidence", "0.5"), code=2),
    Case("cli-bench-draft-policy-no-taker", "--draft-policy schedule is for the methods that draft a chain",
         argv=(*BENCH, "--out", "{d}/r.jsonl", "--methods", "ar", "--draft-policy", "schedule"), code=2),
    Case("api-draft-policy-rows", "a draft policy per level needs 3 names",
         api=gen(method="csd", draft_policy=["fixed", "ewif"])),
    Case("api-draft-costs-negative", "draft_costs (the ewif policy's cost",
         api=gen(method="sd", draft_policy="ewif", draft_costs=[-1.0])),
    # -- CLI: files
    Case("cli-prompts-missing", "prompts file {d}/missing.jsonl not found",
         argv=("generate", "--prompts-file", "{d}/missing.jsonl"), code=2),
    Case("cli-prompts-directory", "prompts file {d} is a directory", argv=("generate", "--prompts-file", "{d}"), code=2),
    Case("cli-prompts-nonutf8", "{d}/nonutf8.jsonl:2 is not UTF-8 text (byte 0xff)",
         argv=("generate", "--prompts-file", "{d}/nonutf8.jsonl"), code=2),
    Case("cli-prompts-malformed", "{d}/malformed.jsonl:3 is not JSON",
         argv=("generate", "--prompts-file", "{d}/malformed.jsonl"), code=2),
    Case("cli-prompts-no-prompt-key", "{d}/noprompt.jsonl:1 has no string 'prompt'",
         argv=("generate", "--prompts-file", "{d}/noprompt.jsonl"), code=2),
    Case("cli-prompts-blank", "{d}/blank.jsonl holds no prompts",
         argv=("generate", "--prompts-file", "{d}/blank.jsonl"), code=2),
    Case("cli-prompts-whitespace-line-2", "{d}/whitespace.jsonl:2 has an empty prompt",
         argv=("generate", "--family", "tiny-t5", "--max-new-tokens", "4", "--prompts-file", "{d}/whitespace.jsonl"),
         code=2),
    Case("cli-prompt-not-utf8", "the prompt is not valid text: character 4 ('\\udce9') is byte 0xe9, which is not "
         "UTF-8", argv=("generate", "--prompt", "caf\udce9"), code=2),  # how Python hands on argv bytes b'caf\xe9'
    Case("cli-prompts-file-lone-surrogate", "the prompt is not valid text: character 4",
         argv=("generate", "--prompts-file", "{d}/surrogate.jsonl"), code=2),
    Case("cli-k-json", "--k is not valid JSON", argv=("generate", "--k", "[[1,", "--prompt", "x"), code=2),
    Case("cli-k-file-missing", "K file {d}/k.json not found", argv=("generate", "--k", "@{d}/k.json", "--prompt", "x"),
         code=2),
    Case("cli-k-file-malformed", "{d}/k_bad.json:2 is not valid JSON",
         argv=("generate", "--k", "@{d}/k_bad.json", "--prompt", "x"), code=2),
    Case("cli-k-file-nonutf8", "{d}/k_nonutf8.json:1 is not UTF-8",
         argv=("generate", "--k", "@{d}/k_nonutf8.json", "--prompt", "x"), code=2),
    # -- CLI: bench, validated before any model loads; nothing written
    Case("cli-bench-methods", "argument --methods: unknown method(s) beam",
         argv=(*BENCH, "--methods", "ar,beam", "--out", "{d}/out.jsonl", "--summary-json", "{d}/s.json"), code=2),
    Case("cli-bench-methods-empty", "argument --methods: unknown method(s) ','",
         argv=(*BENCH, "--methods", ",", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-task", "argument --task: invalid choice: 'nope'",
         argv=(*BENCH, "--task", "nope", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-n-zero", "argument --n: '0' must be >= 1", argv=("bench", "--n", "0", "--out", "{d}/o.jsonl"), code=2),
    Case("cli-bench-lenience-low", "lenience must be a finite number >= 1 (1 = strict review), got 0.5",
         argv=(*BENCH, "--lenience", "0.5", "--out", "{d}/out.jsonl", "--summary-json", "{d}/s.json"), code=2),
    Case("cli-bench-no-out", "the following arguments are required: --out", argv=(*BENCH,), code=2),
    Case("cli-bench-out-directory", "--out {d} is a directory", argv=(*BENCH, "--out", "{d}"), code=2),
    Case("cli-bench-summary-under-file", "--summary-json {d}/afile/s.json: {d}/afile is a file",
         argv=(*BENCH, "--out", "{d}/out.jsonl", "--summary-json", "{d}/afile/s.json"), code=2),
    Case("cli-bench-resume-malformed", "{d}/results_bad.jsonl:2 is not a JSON record",
         argv=(*BENCH, "--out", "{d}/results_bad.jsonl", "--summary-json", "{d}/s.json"), code=2),
    Case("cli-bench-resume-nonutf8", "{d}/results_nonutf8.jsonl:2 is not UTF-8 text",
         argv=(*BENCH, "--out", "{d}/results_nonutf8.jsonl"), code=2),
    Case("cli-bench-resume-not-a-record", "{d}/results_notrecord.jsonl:1 is not a results record",
         argv=(*BENCH, "--out", "{d}/results_notrecord.jsonl"), code=2),
    Case("cli-bench-k-file-missing", "K file {d}/k.json not found",
         argv=(*BENCH, "--k", "@{d}/k.json", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-lenience-without-csd", "--lenience is for csd or csd-tree, which --methods sd does not run",
         argv=(*BENCH, "--methods", "sd", "--lenience", "2", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-k-without-csd", "--k is for csd or csd-tree, which --methods ar,sd does not run",
         argv=(*BENCH, "--methods", "ar,sd", "--k", "[[3]]", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-sd-k-without-sd", "--sd-k is for sd or tree-sd, which --methods csd does not run",
         argv=(*BENCH, "--methods", "csd", "--sd-k", "3", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-costs-missing", "--costs {d}/nope.json: no such file",
         argv=(*BENCH, "--methods", "ar", "--costs", "{d}/nope.json", "--out", "{d}/out.jsonl",
               "--summary-json", "{d}/s.json"), code=2),
    Case("cli-bench-costs-malformed", "--costs {d}/costs_bad.json is not a cost model (KeyError",
         argv=(*BENCH, "--methods", "ar", "--costs", "{d}/costs_bad.json", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-n-beyond-the-split", "synth-gsm8k/test holds 200 examples, 100000 were asked for; pass n <= 200",
         argv=("bench", "--family", "tiny-t5", "--n", "100000", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-resume-example-str", "{d}/results_strex.jsonl:1 has example '0', not an integer >= 0",
         argv=(*BENCH, "--out", "{d}/results_strex.jsonl"), code=2),
    Case("cli-bench-resume-another-family", "{d}/results_other_family.jsonl holds another run's results (line 1: "
         "family is 'tiny-llama' there, 'tiny-t5' now)",
         argv=(*BENCH, "--methods", "ar", "--costs", "none", "--out", "{d}/results_other_family.jsonl",
               "--summary-json", "{d}/s.json"), code=2, loads=True),
    Case("cli-bench-beyond-the-positions", "example 0 (synthetic:test:seed0:0): the prompt (64 tokens) plus "
         "max_new_tokens (100000) exceeds the model limit of 1024 tokens",
         argv=("bench", "--family", "tiny-llama", "--n", "2", "--methods", "ar", "--costs", "none",
               "--max-new-tokens", "100000", "--out", "{d}/out.jsonl"), code=2, loads=True),
    Case("cli-bench-sd-k-without-sd-or-tree-sd", "--sd-k is for sd or tree-sd, which --methods csd-tree does not run",
         argv=(*BENCH, "--methods", "csd-tree", "--sd-k", "3", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-bench-device-bogus", "argument --device: 'bogus' is not a torch device",
         argv=(*BENCH, "--device", "bogus", "--out", "{d}/out.jsonl"), code=2),
    Case("cli-demo-n", "argument --n: 'x' is not an integer", argv=("demo", "--n", "x"), code=2),
    Case("cli-predict-batch-size-zero", "argument --batch-size: '1,0': give batch sizes as whole numbers from 1 to",
         argv=("predict", "--family", "tiny-t5", "--batch-size", "1,0"), code=2),
    Case("cli-predict-batch-size-word", "argument --batch-size: 'many': give batch sizes as whole numbers",
         argv=("predict", "--family", "tiny-t5", "--batch-size", "many"), code=2),
    Case("cli-predict-batch-size-huge", "argument --batch-size: '8,99999': give batch sizes as whole numbers from 1 "
         "to 4096", argv=("predict", "--family", "tiny-t5", "--batch-size", "8,99999"), code=2),
    Case("cli-predict-saturation-low", "argument --saturation: '0.5' must be >= 1",
         argv=("predict", "--family", "tiny-t5", "--batch-size", "2", "--saturation", "0.5"), code=2),
    Case("cli-predict-saturation-alone", "--saturation prices batched calls: give --batch-size with it",
         argv=("predict", "--family", "tiny-t5", "--saturation", "64"), code=2),
    Case("cli-predict-batch-size-tree", "--batch-size predicts AR, SD and CSD; --method csd-tree's tree budgets",
         argv=("predict", "--family", "tiny-llama", "--method", "csd-tree", "--batch-size", "2"), code=2),
]


def snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else None) for p in sorted(d.rglob("*"))}


def test_enough_cases():
    assert len(CASES) >= 30 and len({c.id for c in CASES}) == len(CASES)
    assert sum(c.api is not None for c in CASES) >= 10 and sum(c.api is None for c in CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, capsys):
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    before = snapshot(tmp_path)
    msg = case.msg.format(d=tmp_path)
    if case.api is not None:
        with pytest.raises(ValueError) as e:
            case.api(tmp_path)
        assert msg in str(e.value), str(e.value)
    else:
        try:
            rc = main([a.format(d=tmp_path) for a in case.argv])
        except SystemExit as e:  # argparse's usage errors
            rc = e.code
        out, err = capsys.readouterr()
        assert rc == case.code, err
        assert out == "", out  # a failed check writes nothing, not even a first result
        lines = err.strip().splitlines()
        if case.loads:
            lines = lines[-1:]
            assert sum(line.startswith("error: ") for line in err.splitlines()) == 1, err
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
        assert msg in lines[0], lines[0]
    assert snapshot(tmp_path) == before  # nothing created, nothing half written


def test_help_lists_choices_and_defaults(capsys):
    for cmd, words in (("generate", ["{ar,sd,mag,staged,csd,tree-sd,medusa,csd-tree}", "tiny-t5,tiny-llama", "(default: csd)", "fp16"]),
                       ("bench", ["synth-gsm8k,synth-mmlu", "hf-assisted", "(default: 128)"])):
        with pytest.raises(SystemExit) as e:
            main([cmd, "--help"])
        assert e.value.code == 0
        out = capsys.readouterr().out
        for w in words:
            assert w in out, (cmd, w)


def test_prog_is_the_scripts_own_name(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/opt/venv/bin/csd"])
    assert prog_name() == "csd" and parser().prog == "csd"
    monkeypatch.setattr(sys, "argv", ["/work/main/csd_lib/__main__.py"])
    assert prog_name() == "python -m csd_lib"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_prompts_file(tmp_path, capsys):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "a"}\n')
    f.chmod(0)
    assert main(["generate", "--prompts-file", str(f)]) == 2
    assert f"prompts file {f} is not readable (permission denied)" in capsys.readouterr().err


# -- the real commands: no traceback, the exit status, the script's name ------------------------

def run(*argv):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, env=env)


def test_subprocess_missing_prompts_file(tmp_path):
    r = run(sys.executable, "-m", "csd_lib", "generate", "--prompts-file", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [f"error: prompts file {tmp_path / 'nope.jsonl'} not found; pass a JSONL "
                                             f'file where each line must be {{"prompt": "..."}}']


def test_subprocess_prompt_bytes_not_utf8():
    """A Latin-1 'é' typed in a terminal reaches Python as a lone surrogate: one line, before anything loads."""
    r = subprocess.run([sys.executable, "-m", "csd_lib", "generate", "--family", "tiny-t5", "--prompt", b"caf\xe9"],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: the prompt is not valid text: character 4 ('\\udce9') is byte 0xe9, which is not UTF-8 (text from a "
        "terminal or file in another encoding, e.g. Latin-1); pass UTF-8 text"]


def test_subprocess_debug_shows_the_traceback(tmp_path):
    r = run(sys.executable, "-m", "csd_lib", "--debug", "generate", "--prompts-file", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 1 and "Traceback" in r.stderr and "not found" in r.stderr


@pytest.mark.skipif(not (Path(sys.executable).parent / "csd").exists(), reason="console script not installed")
def test_subprocess_console_script_bad_methods(tmp_path):
    out = tmp_path / "out.jsonl"
    r = run(str(Path(sys.executable).parent / "csd"), "bench", "--methods", "ar,beam", "--out", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr and not out.exists()
    assert r.stderr.strip().splitlines() == [
        "error: argument --methods: unknown method(s) beam; use a comma-separated list of ar, sd, mag, staged, csd, "
        "tree-sd, medusa, csd-tree, hf-assisted, hf-pld, or sd@K (SD at draft length K); see csd bench --help"]

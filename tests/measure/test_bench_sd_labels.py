"""``sd@K`` in a bench's methods: SD at another draft length in the same interleaved run, recorded, resumed and
summarized beside the run's own sd."""
import argparse
import json

import pytest

from csd_lib import random_family
from csd_lib.cli.args import method_list
from csd_lib.families.tasks import Example
from csd_lib.measure.bench import run_bench
from csd_lib.measure.records import BenchRecord, base_method, read_records
from csd_lib.report.summary import summarize

EXAMPLES = [Example(f"w{5 + i} w6 w7 w5 w6", "", "", "toy", "") for i in range(2)]


def test_base_method_reads_only_sd_at_a_draft_length():
    assert base_method("sd@8") == "sd" and base_method("sd") == "sd" and base_method("csd") == "csd"
    for label in ("sd@0", "sd@", "sd@x", "csd@3", "sd@-1"):
        assert base_method(label) == label  # no engine method: refused where methods are checked


def test_sd_at_two_draft_lengths_in_one_run(tmp_path):
    fam = random_family("llama", vocab_size=32, n_drafters=1, seed=2)
    out = tmp_path / "run.jsonl"
    recs = run_bench(fam, EXAMPLES, ["sd", "sd@2"], out, 8, warmup=0, progress=False, sd_k=3)
    ks = {(r["method"], BenchRecord.from_dict(r).plan.k[0][0]) for r in recs if r["method"] != "ar"}
    assert ks == {("sd", 3), ("sd@2", 2)} and len(recs) == 6
    assert all(r["token_ids"] == next(a for a in recs if a["method"] == "ar" and a["example"] == r["example"])
               ["token_ids"] for r in recs)  # greedy SD at either length is AR's output
    assert read_records(out) == recs and run_bench(fam, EXAMPLES, ["sd", "sd@2"], out, 8, warmup=0, progress=False,
                                                   sd_k=3) == recs  # resumed: nothing to run
    with pytest.raises(ValueError, match="sd@2's k"):  # the file's sd@2 ran at 2; asking again names the clash
        bad = [dict(r, plan={**r["plan"], "k": [[5]]}) if r["method"] == "sd@2" else r for r in recs]
        out.write_text("".join(json.dumps(r) + "\n" for r in bad))
        run_bench(fam, EXAMPLES, ["sd", "sd@2"], out, 8, warmup=0, progress=False, sd_k=3)
    s = summarize(recs)
    assert set(s) == {"ar", "sd", "sd@2"} and s["sd@2"]["mismatches"] == 0


def test_the_cli_takes_sd_labels():
    assert method_list("ar,sd,sd@8") == "ar,sd,sd@8"
    with pytest.raises(argparse.ArgumentTypeError, match="sd@K"):
        method_list("sd@0")
    with pytest.raises(ValueError, match="unknown method"):
        run_bench(random_family("llama", vocab_size=32, n_drafters=1, seed=2), EXAMPLES, ["csd@2"], "x.jsonl")

"""Batch bench: lines carry the batch size, every row's tokens equal AR's, a killed run resumes, bad input is refused."""
import json
from dataclasses import dataclass

import pytest

from csd_lib import random_family
from csd_lib.engine.cascade import generate
from csd_lib.measure.batch_bench import (BATCH_FIELDS, batch_key, batches_of, check_batch_sizes, row_latency,
                                         run_batch_bench)
from csd_lib.measure.records import read_records


@dataclass
class Ex:
    prompt: str
    task: str = "toy"
    source: str = "test"


EXAMPLES = [Ex("w5 w6 w7 w8 w5 w6"), Ex("w9 w10"), Ex("w12 w13 w14 w15 w16 w17 w18"), Ex("w20 w21 w22")]
METHODS = ["sd", "mag", "staged", "csd"]


@pytest.fixture(scope="module", params=["t5", "llama"])
def fam(request):
    return random_family(request.param, vocab_size=40, n_drafters=2, seed=1)


def test_every_row_carries_its_batch_and_equals_batch_one_ar(fam, tmp_path):
    recs = run_batch_bench(fam, EXAMPLES, METHODS, tmp_path / "b.jsonl", [1, 2, 4], 10, progress=False, warmup=False)
    assert len(recs) == len(EXAMPLES) * 5 * 3
    assert all(set(BATCH_FIELDS) <= set(r) for r in recs)
    for r in recs:
        ar1 = generate(fam, EXAMPLES[r["example"]].prompt, "ar", max_new_tokens=10).token_ids
        assert r["token_ids"] == ar1
        assert r["mismatch"] is (None if r["method"] == "ar" else False)
        assert r["example"] == batches_of(len(EXAMPLES), r["batch_size"])[r["batch"]][r["row"]]
    by = {}
    for r in recs:
        by.setdefault(batch_key(r)[:3], []).append(r)
    for (B, b, m), rows in by.items():
        assert len(rows) == B
        tokens = sum(len(r["token_ids"]) for r in rows)
        assert all(r["batch_tokens"] == tokens and r["tokens_per_s"] == pytest.approx(tokens / r["batch_seconds"], rel=1e-3)
                   for r in rows)
        ar = by[B, b, "ar"][0]
        assert rows[0]["speedup_vs_ar"] == (None if m == "ar" else pytest.approx(rows[0]["tokens_per_s"] / ar["tokens_per_s"], rel=1e-3))


def test_a_killed_run_resumes_without_loss_or_duplicates(fam, tmp_path):
    out = tmp_path / "b.jsonl"
    run_batch_bench(fam, EXAMPLES, METHODS, out, [1, 2], 8, progress=False, warmup=False, stop_after=5)
    first = read_records(out)
    with open(out, "a") as fh:  # half a round: its first row, then a torn line
        fh.write(json.dumps({**first[-1], "batch_size": 2, "batch": 1, "method": "csd", "row": 0}) + "\n")
        fh.write('{"example": 3, "meth')
    recs = run_batch_bench(fam, EXAMPLES, METHODS, out, [1, 2], 8, progress=False, warmup=False)
    keys = [batch_key(r) for r in read_records(out)]
    assert len(keys) == len(set(keys)) == len(recs) == len(EXAMPLES) * 5 * 2
    assert [batch_key(r) for r in read_records(out)][:len(first)] == [batch_key(r) for r in first]
    assert all(r["mismatch"] in (None, False) for r in recs)


def test_a_file_of_another_run_is_refused(fam, tmp_path):
    out = tmp_path / "b.jsonl"
    run_batch_bench(fam, EXAMPLES, ["sd"], out, [1], 6, progress=False, warmup=False, stop_after=1)
    with pytest.raises(ValueError, match="max_new_tokens is 6 there, 7 now"):
        run_batch_bench(fam, EXAMPLES, ["sd"], out, [1], 7, progress=False, warmup=False)


@pytest.mark.parametrize("sizes, methods, message", [
    ([0], ["sd"], "whole numbers >= 1"), ([2.0], ["sd"], "whole numbers >= 1"), ([], ["sd"], "whole numbers >= 1"),
    ([1, 8], ["sd"], "batch size 8 is larger than the 4 examples"),
    ([1, 2], ["tree-sd"], "verifies a token tree"), ([True], ["sd"], "whole numbers >= 1")])
def test_bad_batch_sizes_are_refused_in_one_line(sizes, methods, message):
    with pytest.raises(ValueError, match=message):
        check_batch_sizes(sizes, 4, methods)


def test_trees_run_at_batch_one_and_full_batches_only():
    assert check_batch_sizes([4, 1, 1], 4, ["csd"]) == [1, 4]
    assert check_batch_sizes([1], 4, ["tree-sd"]) == [1]
    assert batches_of(5, 2) == [[0, 1], [2, 3]]


def test_row_latency_from_commit_times():
    lat = row_latency([0.5, 0.5, 1.0, 2.0])
    assert lat["ttft"] == 0.5 and lat["itl_p50"] == 0.5 and lat["itl_p99"] == pytest.approx(0.99)
    assert row_latency([0.3])["itl_p50"] is None

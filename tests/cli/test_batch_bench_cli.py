"""bench --batch-size: bad sizes refused before loading; a tiny run writes batch lines and prints the batch table."""
import json

import pytest

from csd_lib.cli.commands import cmd_bench
from csd_lib.cli.main import main
from csd_lib.measure.records import read_records
from test_commands import args


@pytest.mark.parametrize("sizes", ["0", "two", "1,2.5", "-1", ""])
def test_bad_batch_sizes_are_one_line_usage_errors(sizes, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "--family", "tiny-t5", "--batch-size", sizes, "--out", str(tmp_path / "b.jsonl")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and "whole numbers" in err


@pytest.mark.parametrize("argv, message", [
    (["--batch-size", "1,4", "--n", "3"], "batch size 4 is larger than the 3 examples"),
    (["--batch-size", "1,2", "--n", "4", "--methods", "csd-tree"], "verifies a token tree"),
    (["--batch-size", "1,2", "--n", "4", "--methods", "csd,hf-pld"], "drop hf-pld"),
    (["--batch-size", "1", "--n", "4", "--repeats", "2"], "--repeats is not taken with --batch-size"),
    (["--batch-size", "1", "--n", "4", "--lenience", "2"], "--lenience is not taken with --batch-size")])
def test_bad_batch_benches_are_refused_before_loading(argv, message, tmp_path, no_loading):
    with pytest.raises(ValueError, match=message):
        cmd_bench(args("bench", "--family", "tiny-t5", "--out", str(tmp_path / "b.jsonl"), *argv))


def test_tree_methods_run_at_batch_size_one_only(no_loading, tmp_path):
    with pytest.raises(AssertionError, match="a family was loaded"):  # every check passed: it went on to load
        cmd_bench(args("bench", "--family", "tiny-t5", "--out", str(tmp_path / "b.jsonl"), "--batch-size", "1",
                       "--n", "2", "--methods", "csd-tree"))


@pytest.mark.slow
def test_a_tiny_batch_bench_on_tiny_t5(tmp_path, capsys):
    out, summary = tmp_path / "b.jsonl", tmp_path / "s.json"
    cmd_bench(args("bench", "--family", "tiny-t5", "--batch-size", "1,2", "--n", "2", "--max-new-tokens", "6",
                   "--methods", "sd,csd", "--threads", "1", "--clock", "cpu", "--costs", "none", "--out", str(out),
                   "--summary-json", str(summary)))
    recs = read_records(out)
    assert sorted((r["batch_size"], r["method"], r["example"]) for r in recs) == sorted(
        (B, m, i) for B in (1, 2) for m in ("ar", "sd", "csd") for i in (0, 1))
    ar1 = {r["example"]: r["token_ids"] for r in recs if r["method"] == "ar" and r["batch_size"] == 1}
    assert all(r["token_ids"] == ar1[r["example"]] and r["clock"] == "cpu" for r in recs)
    table = capsys.readouterr().out
    assert "| csd | 2 | 1 |" in table and "speedup over AR falls to 1" in table
    s = json.loads(summary.read_text())
    assert s["cells"]["csd"]["2"]["mismatches"] == 0 and s["cells"]["csd"]["2"]["mismatches_vs_b1"] == 0

"""Packed results files (``.jsonl.gz``): read like the plain file, resumed by bench, refused when damaged."""
from __future__ import annotations

import gzip
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from csd_lib import random_family
from csd_lib.families.tasks import load_task
from csd_lib.measure.bench import run_bench
from csd_lib.measure.records import pack, read_records, stored
from csd_lib.report.trees import table3_records

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A small real run: 2 examples × ar, sd."""
    out = tmp_path_factory.mktemp("packed") / "fam-toy.jsonl"
    fam = random_family("llama", vocab_size=32, n_drafters=1, seed=0)
    recs = run_bench(fam, load_task("synth-gsm8k", "test", 2), ["ar", "sd"], out, max_new_tokens=4, warmup=0,
                     progress=False)
    return fam, out, recs


def test_a_packed_file_reads_back_the_same_records_and_replaces_the_plain_one(run, tmp_path):
    _, out, recs = run
    path = tmp_path / out.name
    path.write_bytes(out.read_bytes())
    packed = pack(path)
    assert packed == tmp_path / "fam-toy.jsonl.gz" and not path.exists()
    assert stored(path) == packed and read_records(path) == read_records(packed) == recs
    again = tmp_path / "again" / out.name
    again.parent.mkdir()
    again.write_bytes(out.read_bytes())
    assert pack(again).read_bytes() == packed.read_bytes()  # no name or time inside: the same bytes each time
    assert stored(tmp_path / "none.jsonl") is None and read_records(tmp_path / "none.jsonl") == []


def test_bench_resumes_a_packed_run_and_the_plain_file_then_wins(run, tmp_path):
    fam, out, recs = run
    path = tmp_path / out.name
    path.write_bytes(out.read_bytes())
    packed = pack(path)
    more = run_bench(fam, load_task("synth-gsm8k", "test", 3), ["ar", "sd"], path, max_new_tokens=4, warmup=0,
                     progress=False)
    assert more[:len(recs)] == recs and {r["example"] for r in more} == {0, 1, 2}  # kept 2, ran the third
    assert path.exists() and stored(path) == path and read_records(path) == more
    assert read_records(packed) == recs  # the packed copy is left as it was, until packed again


def test_a_damaged_packed_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "r.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"example": 0, "method": "ar", "stats": {}}\n')[:-9])  # cut short
    with pytest.raises(ValueError, match=r"r\.jsonl\.gz is not a readable gzip file .*scripts/pack_results\.py"):
        read_records(tmp_path / "r.jsonl")


def test_table3_reads_a_packed_committed_run(run, tmp_path):
    fam, out, recs = run
    path = tmp_path / "fam-toy-trees.jsonl"
    path.write_bytes(out.read_bytes())
    pack(path)
    got, source = table3_records(fam, [], ["ar"], 4, path=path)
    assert got == recs and source == "the committed run `fam-toy-trees.jsonl.gz`"


def test_pack_script_packs_the_reports_runs_only(run, tmp_path):
    _, out, _ = run
    spec = importlib.util.spec_from_file_location("pack_results", ROOT / "scripts" / "pack_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name in ("fam-toy.jsonl", "fam-toy-trees.jsonl", "fam-toy.some-cpu-1t-0123abcd.jsonl", "claims-ledger.jsonl"):
        (tmp_path / name).write_bytes(out.read_bytes())
    assert [p.name for p in mod.default_files(tmp_path)] == ["fam-toy-trees.jsonl", "fam-toy.some-cpu-1t-0123abcd.jsonl"]
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "pack_results.py"), str(tmp_path / "fam-toy.jsonl"),
                        str(tmp_path / "missing.jsonl")], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and "not a file" in p.stderr and (tmp_path / "fam-toy.jsonl").exists()  # nothing packed


def test_the_committed_report_runs_are_packed_and_ignored_when_plain():
    """What travels to a lent GPU machine: the reports' runs packed, their plain copies git-ignored."""
    tracked = subprocess.run(["git", "ls-files", "results"], capture_output=True, text=True, cwd=ROOT).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    assert not [t for t in tracked if t.endswith("-trees.jsonl") or t.count(".") >= 2 and t.endswith(".jsonl")]
    for name in ("results/x-trees.jsonl", "results/x-task.some-key.jsonl"):
        assert subprocess.run(["git", "check-ignore", "-q", name], cwd=ROOT).returncode == 0
    assert subprocess.run(["git", "check-ignore", "-q", "results/x-task.jsonl"], cwd=ROOT).returncode == 1

"""csd_lib.measure.vertical: base + MaG benchmarked on the examples of another run, with its K from base_mag_k."""
from csd_lib import load_family
from csd_lib.engine.kvariants import base_mag_k
from csd_lib.measure.vertical import run_base_mag


def test_base_mag_runs_like_the_committed_records(tmp_path):
    fam = load_family("tiny-llama")
    like = [dict(seed=0, max_new_tokens=8)]
    recs = run_base_mag(fam, "synth-gsm8k", 1, tmp_path / "v.jsonl", like=like)
    csd = [r for r in recs if r["method"] == "csd"]
    assert len(csd) == 1 and csd[0]["plan"]["k"] == base_mag_k(fam, "synth-gsm8k")
    assert csd[0]["max_new_tokens"] == 8 and csd[0]["example"] == 0 and csd[0]["seed"] == 0
    assert {r["method"] for r in recs} == {"ar", "csd"}

"""python -m csd_lib predict --method TREE: tree budgets ranked on a results file's per-branch rates, or by the
tuner's probe of the family; bad input refused before anything loads."""
import json
from pathlib import Path

import pytest

from csd_lib import random_family
from csd_lib.cli.main import main
from csd_lib.families.tasks import Example
from csd_lib.measure.records import as_records
from csd_lib.price.costs import read_cost_file
from csd_lib.price.predict import rank_run_budgets
from csd_lib.report.trees import live_records

ROOT = Path(__file__).resolve().parents[2]
COSTS = ROOT / "results" / "costs-tiny-llama-cpu.json"


@pytest.fixture(scope="module")
def runs_file(tmp_path_factory):
    """csd-tree and sd runs of random llama models, filed as tiny-llama's (its cost model names the same models)."""
    fam = random_family("llama", vocab_size=6, n_drafters=1, seed=1, eos=None)
    examples = [Example(p, "", "", "toy", "") for p in ("w3 w4 w5 w3 w4", "w4 w5 w3 w4 w5")]
    recs = [{**r, "family": "tiny-llama"} for r in live_records(fam, examples, ["csd-tree", "sd"], 16)]
    path = tmp_path_factory.mktemp("runs") / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path, recs


def test_budgets_ranked_on_a_results_file(runs_file, capsys):
    path, recs = runs_file
    args = ["predict", "--family", "tiny-llama", "--method", "csd-tree", "--acceptance", str(path), "--costs", str(COSTS),
            "--tree", "[1]", "--tree", "[2,2]", "--tree", "[3,3,3]"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = rank_run_budgets([r for r in as_records(recs) if r.method == "csd-tree"], read_cost_file(COSTS),
                            [[1], [2, 2], [3, 3, 3]])
    assert [r["budget"] for r in out["ranked"]] == [r["budget"] for r in want]
    assert [r["speedup"] for r in out["ranked"]] == pytest.approx([r["speedup"] for r in want])
    assert out["best"] == want[0]["budget"] and out["measured"] == {}
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"choose --tree '{json.dumps(want[0]['budget'])}' (the best priced)" in text and text.count("nodes") == 4


@pytest.mark.parametrize("argv, says", [
    (["--method", "csd-tree", "--acceptance", "0.8,0.3"], "rates come from runs"),
    (["--method", "csd-tree", "--tree", "[0]"], "bad tree budget"),
    (["--method", "csd-tree", "--measure", "-1"], "--measure"),
    (["--tree", "[2,2]"], "give --method"),
    (["--method", "csd-tree", "--family", "tiny-t5"], "encoder-decoder"),
])
def test_bad_input_is_refused_before_anything_loads(argv, says, capsys):
    assert main(["predict", *argv]) == 2
    assert says in capsys.readouterr().err


def test_a_file_without_the_methods_runs_is_refused(runs_file, capsys):
    path, _ = runs_file
    assert main(["predict", "--family", "tiny-llama", "--method", "tree-sd", "--acceptance", str(path)]) == 2
    assert "holds no tree-sd runs" in capsys.readouterr().err


@pytest.mark.slow
def test_the_tuner_probes_the_family_and_measures_the_best(capsys):
    assert main(["predict", "--family", "tiny-llama", "--method", "csd-tree", "--n", "2", "--max-new-tokens", "16",
                 "--measure", "1", "--tree", "[1]", "--tree", "[2,2]", "--costs", str(COSTS), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(r["budget"] for r in out["ranked"]) == [[1], [2, 2]] and len(out["measured"]) == 1
    assert json.loads(next(iter(out["measured"]))) == out["ranked"][0]["budget"] == out["best"]
    assert "synth-gsm8k validation prompts" in out["source"]

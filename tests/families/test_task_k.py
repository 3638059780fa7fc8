"""K per task: presets' by_task, Family.k_for / sd_k_for, make_plan and the bench pick the task's K."""
from dataclasses import dataclass

import pytest

from csd_lib import generate, random_family
from csd_lib.measure.bench import resume_problem, run_bench, task_k
from csd_lib.families.family import load_family
from csd_lib.engine.plan import make_plan
from csd_lib.families.presets import REAL_PRESETS, TINY_PRESETS, check_by_task
from csd_lib.families.tasks import TASKS, load_task

TASK_K = [[1, 2, 4], [0, 3, 4], [0, 0, 4]]


@dataclass
class Ex:
    prompt: str
    task: str = "synth-mmlu"
    source: str = "test"


def fam():
    f = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    f.by_task = {"synth-mmlu": {"k": TASK_K, "sd_k": 2}}
    return f


def test_shipped_by_task_names_known_tasks_and_valid_k():
    for presets in (TINY_PRESETS, REAL_PRESETS):
        check_by_task(presets)
        assert all(t in TASKS for spec in presets.values() for t in spec.get("by_task", {}))


@pytest.mark.parametrize("by_task, match", [
    ({"synth-mmlux": {"k": [[1, 10], [0, 10]]}}, "unknown task 'synth-mmlux'"),
    ({"synth-mmlu": {"K": [[1, 10], [0, 10]]}}, "unknown setting"),
    ({"synth-mmlu": {"k": [[1, 10, 10], [0, 1, 10], [0, 0, 10]]}}, "matrix"),
    ({"synth-mmlu": {"sd_k": 0}}, "sd_k must be an integer >= 1"),
])
def test_bad_by_task_is_refused(by_task, match):
    with pytest.raises(ValueError, match=match):
        check_by_task({"x": dict(k=[[8, 10], [0, 10]], by_task=by_task)})


def test_make_plan_takes_the_tasks_k_unless_k_is_given():
    f = fam()
    assert make_plan(f, "csd", task="synth-mmlu").k == make_plan(f, "csd", TASK_K).k
    assert make_plan(f, "csd", task="synth-gsm8k").k == make_plan(f, "csd").k   # no override: the family's
    assert make_plan(f, "sd", task="synth-mmlu").k == ((2,),)
    assert make_plan(f, "csd", [[2, 1, 4], [0, 1, 4], [0, 0, 4]], task="synth-mmlu").k[0][0] == 2


def test_tiny_t5_preset_has_the_mmlu_k():
    f = load_family("tiny-t5")
    assert f.k_for("synth-mmlu") == TINY_PRESETS["tiny-t5"]["by_task"]["synth-mmlu"]["k"] != f.default_k
    assert f.k_for("synth-gsm8k") == f.default_k and f.sd_k_for("synth-mmlu") == f.sd_k
    own = [[2, 2, 10], [0, 1, 10], [0, 0, 10]]
    assert load_family("tiny-t5", k=own).k_for("synth-mmlu") == own   # an explicit K wins over every task's


def test_bench_runs_the_tasks_k_and_resumes_with_it(tmp_path):
    f, out = fam(), tmp_path / "r.jsonl"
    ex = [Ex("w5 w6 w7 w8 w5 w6")]
    recs = run_bench(f, ex, ["csd", "sd"], out, 12, warmup=0, progress=False)
    plans = {r["method"]: r["plan"]["k"] for r in recs}
    assert plans["csd"] == TASK_K and plans["sd"] == [[2]]
    assert task_k(f, ex) == (TASK_K, 2)
    assert resume_problem(recs, f, ex, ["ar", "csd", "sd"], 12) is None
    assert "csd's k" in resume_problem(recs, f, ex, ["ar", "csd", "sd"], 12, k=f.default_k)
    other = run_bench(f, [Ex("w5 w6 w7 w8 w5 w6", task="synth-gsm8k")], ["csd"], tmp_path / "g.jsonl", 12,
                      warmup=0, progress=False)
    assert next(r for r in other if r["method"] == "csd")["plan"]["k"] == f.default_k


def test_tiny_t5_mmlu_k_is_lossless():
    f = load_family("tiny-t5")
    prompt = load_task("synth-mmlu", "val", 1)[0].prompt
    ar = generate(f, prompt, "ar", max_new_tokens=48)
    csd = generate(f, prompt, "csd", f.k_for("synth-mmlu"), max_new_tokens=48)
    assert [list(r) for r in csd.plan.k] == f.k_for("synth-mmlu")
    assert csd.token_ids == ar.token_ids

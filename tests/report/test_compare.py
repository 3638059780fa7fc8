"""csd_lib.report.compare: runs priced by one cost table, their pooled SWI, differences, labels and ties."""
from types import SimpleNamespace

import math

import pytest

from csd_lib.engine.plan import Plan
from csd_lib.engine.stats import swi
from csd_lib.report.compare import bench_run, best_of, gen_run, plan_label, tied_best, versus

PARAMS = {"target": 100, "base": 10, "small": 2}
PW = {"target": 1.0, "base": 0.04, "small": 0.02, "mag": 0.0}
CSD = Plan.csd(("base", "small", "mag"), [[4, 5, 10], [0, 1, 10], [0, 0, 10]], lenience=5.0)


def _record(example, method, tokens, calls, wall=1.0, rep=0, plan=CSD):
    stats = dict(n_tokens=tokens, calls=calls, wall_time=wall, params=PARAMS, previous_work_costs=PW)
    return dict(example=example, method=method, rep=rep, stats=stats, plan=plan.to_dict())


def _gen(tokens, calls, plan=CSD):
    st = SimpleNamespace(n_tokens=tokens, calls=calls, previous_work_costs=PW,
                         model_size_costs=lambda: {k: v / PARAMS["target"] for k, v in PARAMS.items()})
    return SimpleNamespace(stats=st, plan=plan)


def test_bench_run_takes_the_fastest_repeat_and_prices_by_the_chosen_table():
    recs = [_record(0, "csd", 40, {"target": 10, "base": 20}, wall=2.0),
            _record(0, "csd", 40, {"target": 12, "base": 20}, wall=1.0, rep=1),
            _record(1, "csd", 20, {"target": 5, "small": 10})]
    ms = bench_run(recs, "csd")
    assert ms.calls[0] == {"target": 12, "base": 20} and ms.n == 2
    assert ms.swi == pytest.approx(swi(60, {"target": 17, "base": 20, "small": 10}, {"target": 1, "base": 0.1, "small": 0.02}))
    pw = bench_run(recs, "csd", "previous work")
    assert pw.swi == pytest.approx(60 / (17 + 20 * 0.04 + 10 * 0.02))
    assert ms.label == "csd, K = [[4, 5, 10], [0, 1, 10], [0, 0, 10]], l = 5"
    assert bench_run(recs, "sd") is None
    with pytest.raises(ValueError, match="costs must be one of"):
        bench_run(recs, "csd", "walltime")


def test_versus_uses_the_examples_both_ran():
    fast = gen_run([_gen(40, {"target": 5 + i % 2}) for i in range(8)])
    slow = gen_run([_gen(40, {"target": 20 + i % 3}) for i in range(8)])
    assert versus(fast, slow).sign == 1 and versus(slow, fast).sign == -1
    assert versus(fast, fast).sign == 0
    assert versus(fast.on(range(4)), slow).n == 4
    assert best_of({"fast": fast, "slow": slow}) == "fast"


def test_gen_run_needs_one_index_per_generation():
    with pytest.raises(ValueError, match="one index per generation"):
        gen_run([_gen(4, {"target": 1})], examples=[0, 1])
    with pytest.raises(ValueError, match="at least one"):
        gen_run([])


def test_plan_labels_name_the_configuration():
    assert plan_label(Plan.sd(16, "base")) == "sd, k = 16"
    assert plan_label(Plan.ar()) == "ar"
    assert plan_label(None) == "no plan"


def test_tied_best_returns_every_exact_optimum():
    assert tied_best({"a": 2.0, "b": 3.0, "c": 3.0, "d": math.nan}) == ["b", "c"]
    assert tied_best({"a": 2.0, "b": 3.0}) == ["b"]
    with pytest.raises(ValueError):
        tied_best({"a": math.nan})


def test_summary_columns_one_column_per_task_in_method_order():
    from csd_lib.report.compare import summary_columns
    s = {"t1": {"csd": dict(v=3.0), "ar": dict(v=1.0)}, "t2": {"ar": dict(v=1.0)}}
    cols = summary_columns(s, "v", "SWI")
    assert list(cols) == ["SWI: t1", "SWI: t2"]
    assert list(cols["SWI: t1"]) == ["ar", "csd"] and cols["SWI: t2"] == {"ar": 1.0, "csd": None}
    with pytest.raises(ValueError):
        summary_columns({}, "v", "SWI")

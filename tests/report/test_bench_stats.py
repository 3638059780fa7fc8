"""csd_lib.report.bench_stats: the bootstrap interval of the median and the statistics BENCHMARKS.md reports."""
import math

import numpy as np
import pytest

from csd_lib.report.bench_stats import bootstrap_median_ci


def test_empty_input_gives_nan_bounds():
    lo, hi = bootstrap_median_ci([])
    assert math.isnan(lo) and math.isnan(hi)


def test_constant_and_single_values_give_a_point():
    assert bootstrap_median_ci([2.5] * 7) == [2.5, 2.5]
    assert bootstrap_median_ci([1.7]) == [1.7, 1.7]


def test_two_values_bounds_lie_in_their_range():
    # resampled medians of (2, 4) are 2, 3 or 4 (probabilities 1/4, 1/2, 1/4): a 95% interval spans them
    assert bootstrap_median_ci([2.0, 4.0]) == [2.0, 4.0]
    assert bootstrap_median_ci([2.0, 4.0], level=0.4) == [3.0, 3.0]


def test_reproducible_with_a_seed_and_bracketing_the_median():
    v = np.random.default_rng(1).lognormal(0.3, 0.4, size=25)
    a = bootstrap_median_ci(v, seed=3)
    assert a == bootstrap_median_ci(list(v), seed=3)  # any iterable, same seed: same interval
    assert a[0] < float(np.median(v)) < a[1]
    narrow = bootstrap_median_ci(v, seed=3, level=0.5)
    assert a[0] <= narrow[0] <= narrow[1] <= a[1]  # a lower level gives a nested, narrower interval
    assert bootstrap_median_ci(iter(v), seed=3) == a  # a generator is read once


def test_coverage_of_the_true_median_is_roughly_the_level():
    rng = np.random.default_rng(0)
    true_median = 1.0  # exponential with scale 1/ln 2 has median 1
    hits = 0
    n_trials = 200
    for i in range(n_trials):
        lo, hi = bootstrap_median_ci(rng.exponential(1 / math.log(2), size=41), n_boot=400, seed=i)
        hits += lo <= true_median <= hi
    assert 0.85 <= hits / n_trials <= 0.995


# -- the statistics BENCHMARKS.md reports, on lines whose ratios are worked by hand ----------------------

def _line(example, method, wall, rep=0, k=None):
    plan = {"method": method, "drafters": ["small"], "k": [[k]]} if k is not None else None
    return dict(example=example, method=method, rep=rep, stats={"n_tokens": 10, "wall_time": wall},
                **({"plan": plan} if plan else {}))


# AR 4, 2, 6 s; SD 2, 2, 2 s; CSD 1, 1, 3 s: SD/CSD per example 2, 2, 2/3; a slower repeat of CSD is ignored
RUN = [_line(0, "ar", 4.0), _line(1, "ar", 2.0), _line(2, "ar", 6.0),
       _line(0, "sd", 2.0, k=4), _line(1, "sd", 2.0, k=4), _line(2, "sd", 2.0, k=4),
       _line(0, "csd", 1.0), _line(1, "csd", 1.0), _line(2, "csd", 3.0), _line(2, "csd", 9.0, rep=1)]


def test_pair_and_speedup_ratios_are_medians_of_per_example_ratios():
    from csd_lib.report.bench_stats import pair_ratio, speedup_ratio
    r, ci = pair_ratio(RUN, "sd", "csd")
    assert r == 2.0 and ci[0] <= 2.0 <= ci[1]
    assert speedup_ratio(RUN, RUN)[0] == 2.0  # one run: CSD's speedup over SD's is SD's time over CSD's
    assert math.isnan(pair_ratio(RUN, "sd", "mag")[0])


def test_run_k_and_faster_sd_run_pick_the_faster_of_two_sd_runs():
    from csd_lib.report.bench_stats import faster_sd_run, run_k
    assert run_k(RUN, "sd") == 4 and run_k(RUN, "mag") == "?"
    alt_recs = [_line(0, "sd", 1.0, k=9)]
    s = {"sd": {"speedup_walltime_median": 2.0}}
    assert faster_sd_run(RUN, s, alt_recs, {"speedup_walltime_median": 3.0})[2] == 9
    assert faster_sd_run(RUN, s, alt_recs, {"speedup_walltime_median": 1.0})[2] == 4


def test_swi_chain_states_the_ordering_and_whether_it_holds():
    from csd_lib.report.bench_stats import swi_chain
    s = {"csd": {"speedup_swi_ms": 3.0}, "sd": {"speedup_swi_ms": 2.0}}
    assert swi_chain(s, {"speedup_swi_ms": 2.5}, {"speedup_swi_ms": 2.2}) == (
        "full cascade 3.00 > base + MaG 2.50 > SD 2.20 > AR 1.00", True)
    assert swi_chain(s, None, None) == ("full cascade 3.00 > SD 2.00 > AR 1.00", False)  # no vertical run
    assert swi_chain(s, {"speedup_swi_ms": 1.5}, None)[1] is False


def test_prediction_gaps_and_goals():
    from csd_lib.report.bench_stats import csd_goal, goals, prediction_gaps
    s = {m: {"speedup_walltime_predicted": p, "speedup_walltime_median": 2.0, "outside_share": 0.05,
             "speedup_swi_ms": w} for m, p, w in (("sd", 2.1, 2.0), ("csd", float("nan"), 3.0))}
    assert prediction_gaps(s) == pytest.approx({"sd": 0.05})
    full = {name: (value, need, ok) for name, value, need, ok, _ in goals("tiny-llama", RUN, s, None, [], None)}
    rows = {name: (value, ok) for name, (value, _, ok) in full.items()}
    assert rows["CSD over the best SD (median per-example walltime ratio)"][1]  # 2.0 >= 1.1
    assert full["CSD over the best SD (median per-example walltime ratio)"][1] == f">= {csd_goal('tiny-llama')[0]}x"
    assert csd_goal("tiny-t5") == (1.2, 1.1) and csd_goal("tiny-llama") == (1.1, None)
    assert rows["EWIF prediction within 10% of the measured median"] == ("sd +5%", True)
    assert rows["time outside model forwards (CSD)"] == ("5.0%", True)
    assert "SWI ordering (model-size)" not in rows  # a tiny-t5 goal only


def test_bootstrap_quantiles_of_pooled_values_by_hand():
    from csd_lib.report.bench_stats import bootstrap_quantiles
    # two examples whose pooled values are 1..10: the quantiles are numpy's of the pooled list
    q = bootstrap_quantiles([[1, 2, 3, 4], [5, 6, 7, 8, 9, 10]], (0.5, 0.9))
    assert q[0.5][0] == 5.5 and q[0.9][0] == pytest.approx(9.1)
    for est, (lo, hi) in q.values():
        assert lo <= est <= hi
    # identical examples: every resample pools the same values, so the interval is a point
    same = bootstrap_quantiles([[0.1, 0.3, 0.2]] * 5, (0.5, 0.99))
    assert same[0.5] == (0.2, [0.2, 0.2]) and same[0.99][1][0] == same[0.99][1][1] == same[0.99][0]
    # one value per example: the median's interval is bootstrap_median_ci's (same resamples)
    v = np.random.default_rng(2).lognormal(size=15)
    assert bootstrap_quantiles([[x] for x in v])[0.5][1] == pytest.approx(bootstrap_median_ci(v))
    nan = bootstrap_quantiles([[], []], (0.5,))[0.5]
    assert math.isnan(nan[0]) and all(math.isnan(b) for b in nan[1])


def test_the_cluster_interval_is_wider_than_one_that_treats_tokens_as_independent():
    from csd_lib.report.bench_stats import bootstrap_quantiles
    rng = np.random.default_rng(4)
    # 20 examples, each with its own speed: tokens within one example are alike
    groups = [rng.normal(mu, 0.01, size=50) for mu in rng.uniform(0.01, 0.05, size=20)]
    lo, hi = bootstrap_quantiles(groups)[0.5][1]
    flat_lo, flat_hi = bootstrap_quantiles([[x] for g in groups for x in g])[0.5][1]
    assert hi - lo > 3 * (flat_hi - flat_lo)


def test_latency_stats_of_known_commit_times():
    from csd_lib.measure.records import BenchRecord
    from csd_lib.report.bench_stats import latency_stats
    times = {0: [0.1, 0.1, 0.3], 1: [0.2, 0.5, 0.5, 0.6], 2: [0.4]}  # TTFT 0.1, 0.2, 0.4
    recs = [BenchRecord(i, "csd", stats={"n_tokens": len(t), "wall_time": 1.0}, commit_times=t)
            for i, t in times.items()]
    st = latency_stats(recs)
    assert st["ttft"]["n"] == st["itl"]["n"] == 3
    assert st["ttft"]["p50"] == pytest.approx(0.2)
    assert st["ttft"]["p95"] == pytest.approx(np.quantile([0.1, 0.2, 0.4], 0.95))
    # ITLs: 0, 0.2 (example 0), 0.3, 0, 0.1 (example 1), none from example 2
    itl = [0.0, 0.2, 0.3, 0.0, 0.1]
    for q in (50, 95, 99):
        assert st["itl"][f"p{q}"] == pytest.approx(np.quantile(itl, q / 100))
        lo, hi = st["itl"][f"p{q}_ci95"]
        assert min(itl) <= lo <= st["itl"][f"p{q}"] + 1e-12 and st["itl"][f"p{q}"] - 1e-12 <= hi <= max(itl)
    old = [BenchRecord(0, "hf-pld", stats={"n_tokens": 3, "wall_time": 1.0})]
    assert latency_stats(old) == {"ttft": None, "itl": None}  # not recorded: no number is made up


def test_without_chromium_the_report_links_the_committed_figures(tmp_path, monkeypatch):
    """scripts/make_benchmarks_md.py on a machine without Chromium: a committed PNG stays linked and untouched,
    a missing one is not linked (so BENCHMARKS.md renders the same on every machine that has the PNGs)."""
    import importlib.util
    from pathlib import Path

    import plotly.graph_objects as go
    spec = importlib.util.spec_from_file_location("make_benchmarks_md",
                                                  Path(__file__).parents[2] / "scripts" / "make_benchmarks_md.py")
    md = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(md)
    monkeypatch.setattr(md.shutil, "which", lambda name: None)
    committed = tmp_path / "bench-x.png"
    committed.write_bytes(b"\x89PNG committed")
    assert md.png(go.Figure(), committed) and committed.read_bytes() == b"\x89PNG committed"
    assert not md.png(go.Figure(), tmp_path / "never-drawn.png") and not (tmp_path / "never-drawn.png").exists()

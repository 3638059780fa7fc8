"""python -m csd_lib predict: one price everywhere, rates, bad input, real presets on shadows."""
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from csd_lib.price.costs import read_cost_file
from csd_lib.measure.records import read_records
from csd_lib.price.predict import paper_table, parse_rates, predict_for_device
from csd_lib.price.pricing import paper_row
from csd_lib.families.presets import REAL_PRESETS
from csd_lib.measure.records import BenchRecord
from csd_lib.report.summary import summarize

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "tiny-t5-synth-gsm8k.jsonl"
COSTS = ROOT / "results" / "costs-tiny-t5-cpu.json"
LEVELS = ["target", "base", "small", "mag"]


def _cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "csd_lib", "predict", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def tiny_res():
    return predict_for_device("tiny-t5", str(RESULTS), cost_file=str(COSTS), n_sim=4000)


def test_measured_acceptance_prices_like_the_bench(tiny_res):
    """With the run's own acceptance and cost model, the grid's SD at the run's k and CSD at the
    run's K equal the bench summary's speedup_walltime_predicted."""
    res = tiny_res
    s = summarize(read_records(RESULTS), read_cost_file(COSTS))
    recs = read_records(RESULTS)
    plan = {r["method"]: BenchRecord.from_dict(r).plan for r in recs}
    sd = next(r for r in res["rows"] if r["method"] == "sd" and [r["drafter"]] == list(plan["sd"].drafters)
              and r["k"] == [list(row) for row in plan["sd"].k])
    csd = next(r for r in res["rows"] if r.get("preset"))
    assert csd["k"] == [list(row) for row in plan["csd"].k]
    assert sd["speedup"] == pytest.approx(s["sd"]["speedup_walltime_predicted"], rel=1e-12)
    assert csd["speedup"] == pytest.approx(s["csd"]["speedup_walltime_predicted"], rel=1e-12)
    assert res["best"]["sd"]["speedup"] >= sd["speedup"]
    assert res["best"]["ar"]["speedup"] == 1.0


def test_forecast_figure(tiny_res):
    from csd_lib.viz import OKABE_ITO, forecast_figure
    fig = forecast_figure(tiny_res)
    lines = [t for t in fig.data if t.showlegend is not False]
    assert {t.name for t in lines} == {"SD, base drafts", "SD, small drafts", "vertical: largest drafter + MaG"}
    assert all(t.line.color in OKABE_ITO.values() for t in lines)
    sd_base = next(t for t in lines if t.name == "SD, base drafts")
    assert list(sd_base.x) == list(range(1, 25))


def test_rates_one_per_drafter_and_pairs():
    t = parse_rates("0.8,0.7:0.6,0.3", LEVELS)
    assert t[("target", "base")] == [0.8] and t[("base", "small")] == [0.7, 0.6] and t[("small", "mag")] == [0.3]
    t = parse_rates("target<-base=0.9,target<-small=0.5,base<-small=0.6", LEVELS)
    assert t[("target", "base")] == [0.9] and t[("base", "small")] == [0.6]
    assert ("target", "mag") in t  # filled for pairs not given


@pytest.mark.parametrize("bad", ["0.8,0.7", "0.8,x,0.3", "1.5,0.7,0.3", "small<-base=0.5", "target<-foo=0.5", ""])
def test_malformed_rates(bad):
    with pytest.raises(ValueError, match="--acceptance"):
        parse_rates(bad, LEVELS)


def test_paper_profile_follows_fig2():
    row = paper_row(0.8)
    cum = __import__("numpy").cumprod(row)
    assert row == [0.8] * 30 and cum[0] == pytest.approx(0.8) and cum[29] <= 0.1  # the i.i.d. model, below 0.1 by 30
    steep = __import__("numpy").cumprod(paper_row(0.99))                  # the ceiling at position 30 binds
    assert steep[0] == pytest.approx(0.99) and steep[29] == pytest.approx(0.1)
    table, notes = paper_table(LEVELS)
    assert table[("target", "mag")] and any("assumed" in n for n in notes)
    with pytest.raises(ValueError, match="no published figure"):
        paper_table(["target", "drafter", "mag"])
    with pytest.raises(ValueError, match="no published figure"):
        paper_table(["target", "small", "mag"], t5=False)  # Vicuna


@pytest.mark.parametrize("args, says", [
    (["--family", "nope"], "invalid choice"),
    (["--family", "tiny-t5", "--acceptance", "0.5,x,0.3"], "--acceptance"),
    (["--family", "tiny-t5", "--acceptance", "missing.jsonl"], "no such file"),
    (["--family", "vicuna", "--acceptance", "paper"], "no published figure"),
    (["--target", "nobody/nothing-here", "--acceptance", "0.7,0.3"], "no config.json at hand"),
    (["--drafters", "google/flan-t5-small"], "--drafters needs --target"),
])
def test_bad_input_one_line_exit_2(args, says, tmp_path):
    p = _cli(*args, "--out", str(tmp_path / "o.json"), timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and says in lines[0]
    assert not (tmp_path / "o.json").exists()


@pytest.mark.slow  # a subprocess that measures a cost model (about 13 s); bad inputs are the fast twin
def test_cli_json_is_json_lines_only(tmp_path):
    p = _cli("--family", "tiny-t5", "--acceptance", str(RESULTS), "--costs", str(COSTS), "--json",
             "--out", str(tmp_path / "o.json"), timeout=300)
    assert p.returncode == 0, p.stderr
    objs = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(objs) == 1 and objs[0]["best"]["csd"]["speedup"] > 0
    assert json.loads((tmp_path / "o.json").read_text())["family"] == "tiny-t5"


def _real_end_to_end(name):
    acc = "paper" if name.startswith("flan") else "0.6,0.3"
    res = predict_for_device(name, acc, device="cpu", max_layers=1, seconds=2.0, n_sim=400)
    assert {"ar", "sd", "vertical", "csd"} <= set(res["best"])
    assert all(d["measured_layers"] == 1 and d["cost_scale"] > 1 for d in res["depth"].values())
    assert any("scaled to the full depth" in n for n in res["notes"])
    assert res["best"]["ar"]["tokens_per_s"] > 0


@pytest.mark.slow  # builds FLAN-T5 base/small from their configs (about 20 s)
def test_own_models_from_their_configs():
    """Your own FLAN-T5 pair from its configs (the tiny family's pricing test is the fast twin)."""
    res = predict_for_device(None, "0.7,0.3", device="cpu", max_layers=1, seconds=1.0, n_sim=400,
                   target="google/flan-t5-base", drafters=["google/flan-t5-small"])
    assert res["family"] == "custom-google--flan-t5-base"
    assert res["depth"]["target"]["id"] == "google/flan-t5-base" and res["depth"]["small"]["layers"] == 8
    assert next(r for r in res["rows"] if r.get("preset"))["k"] == [[13, 10], [0, 10]]  # default_k(1)
    assert all(d["measured_layers"] == 1 and d["cost_scale"] > 1 for d in res["depth"].values())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REAL_PRESETS))
def test_every_real_preset_end_to_end(name):
    _real_end_to_end(name)


@pytest.mark.slow  # 138 plans priced: about 25 s of CPU
def test_paper_profile_reproduces_table2_with_model_size_costs(tmp_path):
    """``predict --family flan-t5 --acceptance paper`` priced with the paper's model-size costs (docs/REFERENCE.md:
    60M, 220M, 11300M) lands within 15% of Table 2's SWI on GSM8K: SD 3.38 (base) and 3.06 (small), CSD 3.88."""
    from csd_lib.price.costmodel import CostModel
    from csd_lib.price.costs import save_costs
    from csd_lib.price.ewif import COST_MODELS
    sizes = COST_MODELS["model_size"]
    path = save_costs(CostModel.constant({"target": 1.0, "base": sizes["base"], "small": sizes["small"], "mag": 0.0}),
                      tmp_path / "model-size.json")
    with warnings.catch_warnings():  # "does not fit this device" where the real family would not (not the point here)
        warnings.simplefilter("ignore", UserWarning)
        res = predict_for_device("flan-t5", "paper", cost_file=str(path), n_sim=1000)
    sd = {d: max(r["speedup"] for r in res["rows"] if r["method"] == "sd" and r["drafter"] == d)
          for d in ("base", "small")}
    assert sd["base"] == pytest.approx(3.38, rel=0.15) and sd["small"] == pytest.approx(3.06, rel=0.15)
    assert res["best"]["csd"]["speedup"] == pytest.approx(3.88, rel=0.15)


def test_shadows_follow_the_dtype_policy_of_real_loads():
    """In fp16 a T5 shadow keeps its ``wo`` layers in fp32, as a real load does (config.policy, hub.check_loaded)."""
    import torch

    from csd_lib.families.hub import check_loaded
    from csd_lib.price.predict import family_spec, shadow_family
    spec = family_spec("flan-t5")
    one = {**spec, "ids": {"target": spec["ids"]["small"]}, "cfgs": {"target": spec["cfgs"]["small"]}}
    fam = shadow_family(one, "cpu", max_layers=1, dtype="float16")
    assert fam.policy.dtype == torch.float16 and fam.policy.keep_fp32 == ("wo",)
    dtypes = {n: p.dtype for n, p in fam.target.model.named_parameters()}
    assert {d for n, d in dtypes.items() if ".wo." in n} == {torch.float32}
    assert {d for n, d in dtypes.items() if ".wo." not in n} == {torch.float16}
    assert check_loaded(fam.target.model, fam.policy) is None  # the policy a real load is checked against, finite logits

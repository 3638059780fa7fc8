"""EWIF closed forms (Section 4) against hand cases, Monte Carlo and published numbers."""
from dataclasses import replace

import numpy as np
import pytest

from csd_lib.price import ewif as E
from csd_lib.engine.plan import Plan

T5_K = [[5, 14, 10], [0, 1, 10], [0, 0, 10]]
T5_DRAFTERS = ["base", "small", "mag"]


def _const_table(p, reviewers=("target", "base", "small"), proposers=("base", "small", "mag")):
    return {(r, q): p for r in reviewers for q in proposers}


# --- Thm 4.1 / Cor 4.2 -------------------------------------------------------

def test_phi_hand_case_and_convention():
    c = E.phi_coeffs(0.5, 1)                 # powers x^0, x^1, x^2
    np.testing.assert_allclose(c, [0.0, 0.5, 0.5])
    assert E.expected_tokens_sd(0.5, 1) == pytest.approx(1.5)
    assert E.phi(0.5, 1, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.8, 0.99])
@pytest.mark.parametrize("k", [0, 1, 4, 12])
def test_phi_closed_form_matches_polynomial(alpha, k):
    c = E.phi_coeffs(alpha, k)
    assert c.sum() == pytest.approx(1.0)
    assert np.all(c >= 0)
    x = np.linspace(-1.5, 1.5, 13)
    np.testing.assert_allclose(E.phi(alpha, k, x), E._phi_poly(alpha, k, x), atol=1e-12)
    # phi'(1) is the Cor 4.2 expected count (drafts accepted + the correction/bonus token)
    d1 = np.polynomial.polynomial.polyval(1.0, np.polynomial.polynomial.polyder(c))
    assert d1 == pytest.approx(E.expected_tokens_sd(alpha, k))
    assert E.ewif_sd(alpha, k, 0.0) == pytest.approx(E.expected_tokens_sd(alpha, k))


def test_phi_removable_singularity():
    assert E.phi(0.5, 3, 2.0) == pytest.approx(E._phi_poly(0.5, 3, 2.0))


def test_symbolic_phi_expands_to_coefficients():
    sp = pytest.importorskip("sympy")
    closed, poly = E.symbolic_phi(3)
    a, x = sp.symbols("alpha x", positive=True)
    coeffs = [sp.Poly(poly, x).coeff_monomial(x ** j).subs(a, sp.Rational(3, 10)) for j in range(5)]
    np.testing.assert_allclose([float(v) for v in coeffs], E.phi_coeffs(0.3, 3), atol=1e-12)


LEVIATHAN_TABLE4 = [  # task, temp, gamma, alpha, c, "Exp" column
    ("EnDe", 0, 7, .75, .02, 3.2), ("EnDe", 0, 7, .80, .04, 3.3), ("EnDe", 0, 7, .82, .11, 2.5),
    ("EnDe", 1, 7, .62, .02, 2.3), ("EnDe", 1, 5, .68, .04, 2.4), ("EnDe", 1, 3, .71, .11, 2.0),
    ("CNNDM", 0, 5, .65, .02, 2.4), ("CNNDM", 0, 5, .73, .04, 2.6), ("CNNDM", 0, 3, .74, .11, 2.0),
    ("CNNDM", 1, 5, .53, .02, 1.9), ("CNNDM", 1, 3, .55, .04, 1.8), ("CNNDM", 1, 3, .56, .11, 1.6),
]


@pytest.mark.parametrize("row", LEVIATHAN_TABLE4)
def test_cor42_reproduces_leviathan_expected_column(row):
    _, _, k, a, c, exp = row
    assert E.ewif_sd(a, k, c) == pytest.approx(exp, abs=0.07)   # paper rounds to 0.1


# --- Monte Carlo vs closed forms (1%) -----------------------------------------

@pytest.mark.parametrize("alpha,k,c", [(0.8, 5, 0.02), (0.6, 3, 0.1), (0.9, 10, 0.0)])
def test_simulate_sd_matches_cor42(alpha, k, c):
    mc = E.simulate_sd(alpha, k, c, n_sim=200_000, seed=0)
    assert mc["ewif"] == pytest.approx(E.ewif_sd(alpha, k, c), rel=0.01)


def test_simulate_horizontal_matches_thm45():
    a, c = [0.85, 0.8, 0.7, 0.6, 0.5], [0.04, 0.04, 0.02, 0.02, 0.0]
    mc = E.simulate_horizontal(a, c, n_sim=200_000, seed=1)
    assert mc["ewif"] == pytest.approx(E.ewif_horizontal(a, c), rel=0.01)


@pytest.mark.parametrize("alpha,ap,k,n", [(0.8, 0.7, 3, 4), (0.6, 0.9, 5, 2), (0.75, 0.5, 10, 1)])
def test_simulate_vc_matches_thm43(alpha, ap, k, n):
    mc = E.simulate_vc(alpha, ap, k, n, 0.04, 0.005, n_sim=200_000, seed=2)
    assert mc["ewif"] == pytest.approx(E.ewif_vc(alpha, ap, k, n, 0.04, 0.005), rel=0.01)


def test_thm43_phi_n_is_a_power_not_a_composition():
    alpha, ap, k, n = 0.8, 0.7, 3, 4
    g = alpha
    for _ in range(n):
        g = E.phi(ap, k, g)
    composed = (1 - alpha * g) / ((1 - alpha) * (1 + n * 0.04 + n * k * 0.005))
    mc = E.simulate_vc(alpha, ap, k, n, 0.04, 0.005, n_sim=200_000, seed=2)["ewif"]
    assert abs(mc - composed) / composed > 0.05


# --- Cor 4.4 -------------------------------------------------------------------

def test_cor44_inequality_on_grid():
    grid = np.linspace(0.05, 0.95, 19)
    A, AP = np.meshgrid(grid, grid)
    for k in range(1, 9):
        assert np.all(E.cor44_holds(A, AP, k))
    for a in grid[::3]:
        for ap in grid[::3]:
            for k, n in [(1, 1), (3, 4), (8, 6)]:
                assert E.ewif_vc(a, ap, k, n, 0.05, 0.0) > E.ewif_sd(a, n, 0.05)


# --- Thm 4.5 / Cor 4.6 ---------------------------------------------------------

def test_horizontal_reduces_to_sd():
    assert E.ewif_horizontal([0.7] * 6, [0.03] * 6) == pytest.approx(E.ewif_sd(0.7, 6, 0.03))
    with pytest.raises(ValueError):
        E.ewif_horizontal([0.7, 0.6], [0.1])


@pytest.mark.parametrize("alphas", [[0.9, 0.8, 0.7, 0.6], [0.5, 0.0, 0.9], [0.3, 0.95, 0.95, 0.95, 0.95]])
def test_cor46_gradient_matches_finite_differences(alphas):
    costs = np.linspace(0.05, 0.0, len(alphas))
    g = E.ewif_horizontal_grad(alphas, costs)
    h = 1e-6
    for l in range(len(alphas)):
        up, dn = np.array(alphas, float), np.array(alphas, float)
        up[l] += h
        dn[l] -= h
        fd = (E.ewif_horizontal(up, costs) - E.ewif_horizontal(dn, costs)) / (2 * h)
        assert g[l] == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_cor46_first_position_matters_most():
    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(2, 12))
        a = rng.uniform(0.01, 0.99, k)
        g = E.ewif_horizontal_grad(a, np.full(k, 0.02))
        assert g[0] > g[-1]


# --- predict_speedup (Algorithm 1 with Bernoulli acceptance) -------------------

def test_predict_sd_matches_cor42():
    cfg = Plan.sd(5, "small")
    out = E.predict_speedup(cfg, {("target", "small"): [0.8]}, {"target": 1.0, "small": 0.02},
                            n_sim=100_000, seed=0)
    assert out["speedup"] == pytest.approx(E.ewif_sd(0.8, 5, 0.02), rel=0.01)
    assert out["calls_per_token"]["small"] == pytest.approx(5 * out["calls_per_token"]["target"])


def test_predict_sd_per_position_matches_thm45():
    a = [0.9, 0.8, 0.6, 0.5]
    out = E.predict_speedup(Plan.sd(4, "base"), {("target", "base"): a},
                            {"target": 1.0, "base": 0.04}, n_sim=100_000, seed=3)
    assert out["speedup"] == pytest.approx(E.ewif_horizontal(a, [0.04] * 4), rel=0.01)


def test_predict_staged_one_round_matches_thm43():
    # staged with k1 = 1: d1 reviews exactly one block of k2 autoregressive d2 drafts (n = 1)
    acc = {("target", "base"): [0.8], ("base", "small"): [0.7]}
    out = E.predict_speedup(Plan.staged(["base", "small"], [1, 4]), acc,
                            {"target": 1.0, "base": 0.04, "small": 0.02}, n_sim=100_000, seed=4)
    assert out["speedup"] == pytest.approx(E.ewif_vc(0.8, 0.7, 4, 1, 0.04, 0.02), rel=0.01)


def test_predict_t5_config_all_accepted_is_exact():
    # base step: small reviews 10 MaG -> 11, base reviews 11 -> 12; top: 12 + small 11 = 23,
    # + MaG 10 = 33 drafted, target emits 34. Calls: target 1, base 1, small 2, MaG 3.
    cfg = Plan.csd(T5_DRAFTERS, T5_K, 2, mag_block=10)
    costs = {"target": 1.0, "base": 0.04, "small": 0.02, "mag": 0.0}
    out = E.predict_speedup(cfg, _const_table([1.0]), costs, n_sim=50)
    assert out["tokens_per_target_call"] == 34
    calls = {m: v * 34 for m, v in out["calls_per_token"].items()}
    assert calls == pytest.approx({"target": 1, "base": 1, "small": 2, "mag": 3})
    assert out["speedup"] == pytest.approx(34 / 1.08)
    assert out["speedup_se"] == 0


def test_predict_llama_config_all_accepted_is_exact():
    # [[13,10],[0,10]]: two 11-token rounds of (MaG 10 -> drafter) reach 22 >= 13, MaG adds 10.
    cfg = Plan.csd(["llama-160m", "mag"], [[13, 10], [0, 10]], mag_block=10)
    acc = _const_table([1.0], reviewers=("target", "llama-160m"), proposers=("llama-160m", "mag"))
    out = E.predict_speedup(cfg, acc, {"target": 1.0, "llama-160m": 0.02, "mag": 0.0}, n_sim=10)
    assert out["tokens_per_target_call"] == 33
    assert out["calls_per_token"]["llama-160m"] * 33 == pytest.approx(2)
    assert out["calls_per_token"]["mag"] * 33 == pytest.approx(3)


def test_predict_other_methods():
    costs = {"target": 1.0, "mag": 0.0}
    assert E.predict_speedup(Plan.ar(), {}, costs)["speedup"] == 1.0
    out = E.predict_speedup(Plan.mag(10, mag_block=10), {("target", "mag"): [1.0]}, costs, n_sim=10)
    assert out["tokens_per_target_call"] == 11
    out = E.predict_speedup(Plan.mag(10, mag_block=4), {("target", "mag"): [1.0]}, costs, n_sim=10)
    assert out["tokens_per_target_call"] == 13    # MaG's block, not a literal 10: 4 + 4 + 4 drafted, + 1
    out = E.predict_speedup(Plan.mag(), {("target", "mag"): [0.0]}, costs, n_sim=10)
    assert out["speedup"] == 1.0
    with pytest.raises(ValueError, match="Plan"):
        E.predict_speedup({"method": "ar"}, {}, costs)


def test_predict_csd_beats_sd_and_picks_table_by_lenience():
    cfg = Plan.csd(T5_DRAFTERS, T5_K, 2, mag_block=10)
    costs = {"target": 1.0, "base": 0.04, "small": 0.02, "mag": 0.0}
    tables = {1: _const_table([0.5]), 2: _const_table([0.8, 0.7, 0.6])}
    hi = E.predict_speedup(cfg, tables, costs, n_sim=5_000, seed=0)
    lo = E.predict_speedup(replace(cfg, lenience=1), tables, costs, n_sim=5_000, seed=0)
    assert hi["speedup"] > lo["speedup"] > 1.0
    with pytest.raises(ValueError, match="lenience"):
        E.predict_speedup(replace(cfg, lenience=3), tables, costs, n_sim=10)
    with pytest.raises(ValueError, match="reviewer 'small'"):
        E.predict_speedup(cfg, {("target", "base"): [0.5]}, costs, n_sim=10)


# --- Table 1 ---------------------------------------------------------------------

def _rows(cost_model):
    return {(r["dataset"], r["drafters"]): r for r in E.table1(cost_model)}


def test_table1_previous_work_costs():
    rows = _rows("previous_work")
    # Leviathan alphas with Leviathan costs: below the paper's numbers (documented mismatch)
    assert rows[("cnndm", "small")]["ewif"] == pytest.approx(2.426, abs=1e-3)
    assert rows[("cnndm", "base")]["ewif"] == pytest.approx(2.660, abs=1e-3)
    assert rows[("ende", "base")]["ewif"] == pytest.approx(3.282, abs=1e-3)
    for r in rows.values():
        assert r["alpha_source"].startswith("Leviathan") and r["cost_source"]


@pytest.mark.parametrize("cost_model", sorted(E.COST_MODELS))
def test_table1_horizontal_beats_both_sd(cost_model):
    rows = _rows(cost_model)
    for ds in ("cnndm", "ende"):
        hc = rows[(ds, "base+small")]["ewif"]
        assert hc > rows[(ds, "base")]["ewif"] > 0 and hc > rows[(ds, "small")]["ewif"]
        # the literal "base on token 1, small on tokens 2-3" reading loses to base alone
        assert rows[(ds, "base1+small2")]["ewif"] < rows[(ds, "base")]["ewif"]


def test_table1_parameter_cost_hypothesis_is_close_to_paper():
    for r in E.table1("flan_t5_params"):
        if r["paper"] is not None:
            assert r["ewif"] == pytest.approx(r["paper"], rel=0.01)


def _fed_model(names):
    """A cost model whose call costs exactly the tokens it feeds (no review overhead, MaG free)."""
    from csd_lib.price.costmodel import CallFit, CostModel
    return CostModel("toy", "cpu", {n: CallFit([0.0, 1.0, 0.0, 0.0]) for n in names}, CallFit.constant(0.0), mag=0.0)


def test_a_call_is_priced_by_the_tokens_it_feeds_sd():
    """SD, k = 3, every draft accepted: the first step feeds the drafter 1 token a call and the target 4;
    from then on the drafter's first call also feeds the draft token it never scored (2 tokens)."""
    table = {("target", "small"): [1.0]}
    p = E.predict_speedup(Plan.sd(3, "small"), table, _fed_model(["target", "small"]), n_sim=1000, horizon=20)
    # 5 steps of 4 tokens: (3 + 4) + 4 x ((2 + 1 + 1) + 4)
    assert p["cost_per_token"] == pytest.approx((7 + 4 * 8) / 20)


def test_a_call_is_priced_by_the_tokens_it_feeds_horizontal():
    """base drafts 3 tokens (2 from MaG plus its own), MaG adds 6 at the top; all accepted. base's next
    call feeds the 6 MaG tokens and the target's bonus it never saw, plus its own last token."""
    table = {("target", "base"): [1.0], ("target", "mag"): [1.0], ("base", "mag"): [1.0]}
    plan = Plan.csd(["base", "mag"], [[2, 6], [0, 2]], mag_block=2)
    p = E.predict_speedup(plan, table, _fed_model(["target", "base"]), n_sim=1000, horizon=20)
    # step 1: base feeds 1 + 2, target 1 + 9; step 2 (from position 10): base (10 - 2) + 2, target 1 + 9
    assert p["cost_per_token"] == pytest.approx((3 + 10 + 10 + 10) / 20)

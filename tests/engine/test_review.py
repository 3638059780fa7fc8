"""review() on hand-computed cases, effective_q against simulation, the greedy fast path, per-position lenience."""
import itertools

import torch

from csd_lib.engine.review import (_greedy_logps_torch, effective_q, greedy_logps, probs, residual, review,
    review_greedy, token_q)


def P(*rows):
    return torch.tensor(rows, dtype=torch.float64)


def test_greedy_accepts_argmax_prefix_then_corrects():
    p = P([.1, .7, .2], [.6, .3, .1], [.2, .2, .6])     # argmax 1, 0, 2
    r = review(p, torch.tensor([1, 2]), None, 1.0, greedy=True)
    assert (r.n_accepted, r.next_token, r.bonus) == (1, 0, False)


def test_greedy_all_accepted_appends_bonus():
    p = P([.1, .7, .2], [.6, .3, .1], [.2, .2, .6])
    r = review(p, torch.tensor([1, 0]), None, 1.0, greedy=True)
    assert (r.n_accepted, r.next_token, r.bonus) == (2, 2, True)


def test_greedy_lenience_one_hot_threshold():
    # MaG q is one-hot, so a token is leniently accepted iff p(x) > 1/l.
    p = P([.45, .55, 0.], [.3, .3, .4])
    x = torch.tensor([0])
    assert review(p, x, None, 1.0).n_accepted == 0
    assert review(p, x, None, 2.0).n_accepted == 0        # .45 > .5 is false
    assert review(p, x, None, 2.5).n_accepted == 1        # .45 > .4
    assert review(p, x, None, 2.5).next_token == 2        # bonus = argmax of last row


def test_greedy_lenience_uses_draft_probability():
    p = P([.5, .3, .2], [1 / 3] * 3)
    q = P([.1, .6, .3])
    x = torch.tensor([1])
    assert review(p, x, q, 1.9).n_accepted == 0           # .3 > .6/1.9 = .316 is false
    assert review(p, x, q, 2.1).n_accepted == 1           # .3 > .6/2.1 = .286


def test_accept_prob_is_min_one_lp_over_q():
    p = P([.2, .8], [.5, .5])
    q = P([.8, .2])
    r = review(p, torch.tensor([0]), q, 2.0, greedy=True)
    assert torch.allclose(r.accept_prob, torch.tensor([0.5], dtype=torch.float64))


def test_empty_draft_is_one_autoregressive_step():
    p = P([.1, .2, .7])
    r = review(p, torch.tensor([], dtype=torch.long), None, 1.0)
    assert (r.n_accepted, r.next_token, r.bonus) == (0, 2, True)


def test_residual_hand_case():
    p = torch.tensor([.5, .3, .2], dtype=torch.float64)
    q = torch.tensor([.2, .6, .2], dtype=torch.float64)
    assert torch.allclose(residual(p, q, 1), torch.tensor([1., 0., 0.], dtype=torch.float64))
    # one-hot q at x=0: residual is p without x, renormalised
    assert torch.allclose(residual(p, None, 0), torch.tensor([0., .6, .4], dtype=torch.float64))


def test_sampling_review_matches_p_when_lenience_one():
    g = torch.Generator().manual_seed(0)
    p = P([.5, .3, .2], [1 / 3] * 3)
    q = P([.2, .2, .6])
    counts = torch.zeros(3)
    n = 40000
    xs = torch.multinomial(q[0], n, replacement=True, generator=g)
    for x in xs.tolist():
        r = review(p, torch.tensor([x]), q, 1.0, greedy=False, generator=g)
        counts[x if r.n_accepted else r.next_token] += 1
    assert torch.allclose(counts / n, p[0].float(), atol=0.012)


def test_effective_q_is_the_emitted_distribution():
    g = torch.Generator().manual_seed(1)
    p = P([.5, .3, .2], [1 / 3] * 3)
    q = P([.1, .2, .7])
    lam = 3.0
    qe = effective_q(p[:1], q, torch.tensor([0]), lam)[0]
    assert torch.allclose(qe.sum(), torch.tensor(1.0, dtype=torch.float64))
    # closed form by hand: kept = min(q, 3p) = [.1, .2, .6]; reject mass .1 goes to residual [.4,.1,0]/.5
    assert torch.allclose(qe, torch.tensor([.1 + .1 * .8, .2 + .1 * .2, .6], dtype=torch.float64))
    counts = torch.zeros(3)
    n = 40000
    xs = torch.multinomial(q[0], n, replacement=True, generator=g)
    for x in xs.tolist():
        r = review(p, torch.tensor([x]), q, lam, greedy=False, generator=g)
        counts[x if r.n_accepted else r.next_token] += 1
    assert torch.allclose(counts / n, qe.float(), atol=0.012)


def test_effective_q_is_p_at_lenience_one():
    p = P([.5, .3, .2])
    q = P([.1, .2, .7])
    assert torch.equal(effective_q(p, q, torch.tensor([2]), 1.0), p)


def test_probs_at_a_tiny_temperature_is_the_argmax_not_nan():
    logits = torch.tensor([[1.0, 3.0, -2.0, 2.5], [0.0, 0.0, -1.0, -5.0]])  # (2, V)
    assert torch.isnan(torch.softmax(logits / 1e-300, dim=-1)).any()  # the naive division overflows
    p = probs(logits, 1e-300)
    assert torch.isfinite(p).all()
    assert torch.equal(p[0], torch.tensor([0.0, 1.0, 0.0, 0.0]))
    assert torch.equal(p[1], torch.tensor([0.5, 0.5, 0.0, 0.0]))       # a tie shares the mass
    for t in (0.0, 0.3, 1.0, 7.0):                                     # and the same softmax elsewhere
        assert torch.allclose(probs(logits, t), torch.softmax(logits / (t or 1.0), dim=-1), atol=1e-7)


def test_generate_at_a_tiny_temperature_is_greedy():
    from csd_lib import generate, random_family
    fam = random_family("llama", vocab_size=32, n_drafters=2, seed=0)
    for m in ("ar", "csd"):
        g = generate(fam, [3, 4, 5], m, temperature=1e-300, seed=1, max_new_tokens=8)
        assert g.token_ids == generate(fam, [3, 4, 5], m, max_new_tokens=8).token_ids


# -- the greedy fast path and per-position lenience ----------------------------------------------

def _case(seed, m=5, V=50):
    g = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(m + 1, V, generator=g)
    p = probs(logits, 0.0)
    best = logits.argmax(-1)
    x = torch.where(torch.rand(m, generator=g) < 0.6, best[:m], torch.randint(0, V, (m,), generator=g))
    q = torch.softmax(2 * torch.randn(m, V, generator=g), -1)
    return logits, p, x, q


def test_review_greedy_from_logits_matches_review_on_probs():
    """The same decision, next token and accept_prob as review() on the full softmax, with q dense or
    one-hot (qx = 1), lenience 1, > 1 or per position; p at the emitted tokens is the reviewer's p there."""
    for seed in range(40):
        logits, p, x, q = _case(seed)
        lam_rows = [1.0, 4.0, 1.0, 4.0, 2.0]
        for qq, lam in itertools.product((q, None), (1.0, 1.5, 4.0, lam_rows)):
            want = review(p, x, qq, torch.tensor(lam) if isinstance(lam, list) else lam, greedy=True)
            got, p_out = review_greedy(logits, x.tolist(), token_q(qq, x).tolist(), lam)
            assert (got.n_accepted, got.next_token, got.bonus) == (want.n_accepted, want.next_token, want.bonus)
            assert torch.allclose(got.accept_prob.float(), want.accept_prob, atol=1e-6)
            out = torch.cat([x[:got.n_accepted], torch.tensor([got.next_token])])
            assert torch.allclose(torch.tensor(p_out).float(), p.gather(1, out[:, None])[:, 0], atol=1e-6)


def test_review_greedy_lenience_changes_the_decision():
    """The case must be able to fail: a lenient review keeps a token the strict one rejects."""
    logits = torch.log(P([.45, .55, 0.], [.3, .3, .4]).float())
    assert review_greedy(logits, [0], [1.0], 1.0)[0].n_accepted == 0
    assert review_greedy(logits, [0], [1.0], 2.5)[0].n_accepted == 1
    assert review_greedy(logits, [0], [1.0], [1.0])[0].n_accepted == 0  # per position: strict here
    two = torch.log(P([.45, .55, 0.], [.45, .55, 0.], [.3, .3, .4]).float())
    assert review_greedy(two, [0, 0], [1.0, 1.0], [2.5, 2.5])[0].n_accepted == 2
    assert review_greedy(two, [0, 0], [1.0, 1.0], [2.5, 1.0])[0].n_accepted == 1


def test_per_position_lenience_is_the_scalar_one_per_row():
    """A review with one lenience per position decides each position as a scalar review would."""
    p = P([.45, .55, 0.], [.45, .55, 0.], [.3, .3, .4])
    x = torch.tensor([0, 0])
    assert review(p, x, None, torch.tensor([2.5, 2.5], dtype=torch.float64)).n_accepted == 2
    assert review(p, x, None, torch.tensor([2.5, 1.0], dtype=torch.float64)).n_accepted == 1
    assert review(p, x, None, torch.tensor([1.0, 2.5], dtype=torch.float64)).n_accepted == 0


def test_effective_q_one_hot_none_equals_dense_one_hot_bit_for_bit():
    for seed in range(10):
        _, p, x, _ = _case(seed)
        oh = torch.zeros_like(p[:5]).scatter_(1, x[:, None], 1.0)
        for lam in (1.0, 2.0, 1e6):
            assert torch.equal(effective_q(p[:5], None, x, lam), effective_q(p[:5], oh, x, lam))


def test_effective_q_per_position_is_the_scalar_one_per_row():
    _, p, x, q = _case(3)
    lam = torch.tensor([1.0, 3.0, 1.0, 10.0, 2.0])
    for qq in (q, None):
        got = effective_q(p[:5], qq, x, lam)
        for i, l in enumerate(lam.tolist()):
            want = effective_q(p[i:i + 1], None if qq is None else qq[i:i + 1], x[i:i + 1], l)
            assert torch.allclose(got[i], want[0], atol=1e-7), (i, l)
        assert torch.equal(got[0], p[0]) and not torch.allclose(got[1], p[1])


def test_greedy_logps_cpu_path_matches_the_device_path():
    """The numpy path (CPU) and the torch path (any other device) give the same argmax and log-probs."""
    for seed in range(10):
        logits, p, x, _ = _case(seed)
        want = (p.argmax(-1).tolist(), p.amax(-1).log(), p[:5].gather(1, x[:, None])[:, 0].log())
        for best, top, lpx in (greedy_logps(logits, x.tolist()), _greedy_logps_torch(logits, x.tolist())):
            assert best == want[0]
            assert torch.allclose(torch.tensor(top), want[1], atol=1e-5)
            assert torch.allclose(torch.tensor(lpx), want[2], atol=1e-5)

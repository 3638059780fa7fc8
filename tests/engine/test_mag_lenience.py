"""``mag_lenience``: the paper's rule (MaG's tokens reviewed strictly) against lenience on every drafted token."""
from csd_lib import generate, random_family

PROMPT = [3, 4, 5, 6, 3, 4, 5, 6, 3, 4]


def rate(g, pair):
    st = g.stats.acceptance[pair]
    return sum(st.accepted) / sum(st.reached)


def test_mag_strict_reviews_only_mag_positions_strictly_and_stays_lossless():
    f = random_family("llama", vocab_size=32, n_drafters=2, seed=0)
    ar = generate(f, PROMPT, "ar", max_new_tokens=40).token_ids
    k = [[3, 2, 6], [0, 1, 6], [0, 0, 6]]
    runs = {v: generate(f, PROMPT, "csd", k=k, lenience=1e6, max_new_tokens=40, mag_lenience=v) for v in (True, False)}
    for v, g in runs.items():
        assert g.token_ids == ar and g.plan.mag_lenience is v
    # at l = 1e6 a lenient review keeps nearly every MaG token; a strict one only the reviewer's argmax
    assert rate(runs[True], "small<-mag") > rate(runs[False], "small<-mag")
    # accept_prob at MaG's positions is min(1, p(x)) when strict, min(1, l p(x)) when lenient
    mag = {v: [pr for e in g.events if e.depth > 0 for pr, w in zip(e.accept_prob, e.proposers) if w == "mag"]
           for v, g in runs.items()}
    assert min(mag[True]) > 0.99 and sum(mag[False]) / len(mag[False]) < 0.9
    # the neural pair keeps its lenience in the same review
    assert any(pr == 1.0 for e in runs[False].events if e.reviewer == "base"
               for pr, w in zip(e.accept_prob, e.proposers) if w == "small")

"""One target round unrolled (csd_lib.viz.rounds): the rounds partition the event log, and the figure
draws every review of a round with its accepted, rejected and own tokens."""
import pytest

from csd_lib import generate, random_family
from csd_lib.viz.rounds import round_events, round_figure


@pytest.fixture(scope="module")
def gen():
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    return fam, generate(fam, [5, 6, 7, 5, 6], "csd", k=[[2, 3, 4], [0, 1, 3], [0, 0, 4]], lenience=3.0,
                         max_new_tokens=24)


def test_rounds_partition_the_event_log(gen):
    _, g = gen
    n_rounds = sum(e.depth == 0 for e in g.events)
    assert n_rounds == g.stats.calls["target"]   # one target review per target call
    joined = [e for r in range(n_rounds) for e in round_events(g, r)]
    assert joined == g.events
    for r in range(n_rounds):
        evs = round_events(g, r)
        assert evs[-1].depth == 0 and all(e.depth > 0 for e in evs[:-1])
    with pytest.raises(ValueError, match="rounds 0 to"):
        round_events(g, n_rounds)


def test_round_figure_draws_each_review_of_the_round(gen):
    fam, g = gen
    tops = [e for e in g.events if e.depth == 0]
    r = next(i for i, e in enumerate(tops) if e.n_accepted < len(e.tokens))   # a round with a rejection
    fig = round_figure(g, fam.tokenizer, r)
    evs = round_events(g, r)
    assert len(fig.layout.yaxis.ticktext) == len(evs)
    assert fig.layout.yaxis.ticktext[-1].startswith("target reviews") and "(strict)" in fig.layout.yaxis.ticktext[-1]
    lenient = [t for t, e in zip(fig.layout.yaxis.ticktext, evs) if e.depth > 0]
    assert all("(l = 3)" in t for t in lenient)
    boxes = [t for t in fig.data if t.x[0] is not None]
    drafted = sum(len(e.tokens) for e in evs)
    rejected = sum(len(e.tokens) - e.n_accepted for e in evs)
    assert sum(t.opacity == 0.4 for t in boxes) == rejected
    own = [t for t in boxes if t.marker.line.width == 3.5]
    assert len(boxes) == drafted + len(own) and 1 <= len(own) <= len(evs)
    assert all(t.marker.pattern.shape == "x" for t in boxes if t.opacity == 0.4)   # readable without colour
    assert fig.layout.title.text.startswith(f"csd, target round {r + 1}")


def test_default_round_is_the_first_with_a_rejection(gen):
    fam, g = gen
    tops = [e for e in g.events if e.depth == 0]
    first = next(i for i, e in enumerate(tops) if e.n_accepted < len(e.tokens))
    assert round_figure(g, fam.tokenizer).layout.title.text.startswith(f"csd, target round {first + 1}")
    ar = generate(fam, [5, 6, 7], "ar", max_new_tokens=4)   # AR: every round is the target writing one token
    assert [len(round_events(ar, r)) for r in range(4)] == [1, 1, 1, 1]
    assert all(not e.tokens for e in ar.events)

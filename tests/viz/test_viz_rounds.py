"""One target round unrolled (csd_lib.viz.rounds): the rounds partition the event log, and the figure
draws every review of a round with its accepted, rejected and own tokens."""
import pytest

from csd_lib import generate, random_family
from csd_lib.viz.palette import level_pattern
from csd_lib.viz.rounds import applied_lenience, first_rejected_round, round_events, round_figure


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
    # the paper's rule (mag_lenience=False): MaG's tokens are reviewed strictly, the drafters' leniently
    for t, e in zip(fig.layout.yaxis.ticktext, evs):
        who = set(e.proposers)
        if e.depth > 0 and who == {"mag"}:
            assert t.endswith("(strict on mag)"), t
        elif e.depth > 0 and "mag" in who:
            assert t.endswith("(l = 3 on small; strict on mag)"), t
    boxes = [t for t in fig.data if t.x[0] is not None]
    drafted = sum(len(e.tokens) for e in evs)
    rejected = sum(len(e.tokens) - e.n_accepted for e in evs)
    assert sum(t.opacity == 0.4 for t in boxes) == rejected
    own = [t for t in boxes if t.marker.line.width == 3.5]
    assert len(boxes) == drafted + len(own) and 1 <= len(own) <= len(evs)
    # readable without colour: a rejected token is faded, unbordered and struck through; each level keeps its pattern
    assert all(t.marker.line.width == 0 and t.text[0].startswith("<s>") for t in boxes if t.opacity == 0.4)
    assert all(t.marker.pattern.shape[0] == level_pattern(t.name) for t in boxes if t.opacity == 0.4)
    swatches = [t for t in fig.data if t.x[0] is None and t.showlegend is not False]
    assert len({t.marker.pattern.shape[0] for t in swatches if t.marker.pattern.shape}) == len(
        [t for t in swatches if t.marker.pattern.shape])
    assert fig.layout.title.text.startswith(f"csd, target round {r + 1}")


def test_default_round_is_the_first_with_a_rejection(gen):
    fam, g = gen
    tops = [e for e in g.events if e.depth == 0]
    first = next(i for i, e in enumerate(tops) if e.n_accepted < len(e.tokens))
    assert first_rejected_round(g) == first
    assert round_figure(g, fam.tokenizer).layout.title.text.startswith(f"csd, target round {first + 1}")
    ar = generate(fam, [5, 6, 7], "ar", max_new_tokens=4)   # AR: every round is the target writing one token
    assert first_rejected_round(ar) == 0
    assert [len(round_events(ar, r)) for r in range(4)] == [1, 1, 1, 1]
    assert all(not e.tokens for e in ar.events)


@pytest.mark.parametrize("mag_lenience", [False, True])
def test_lenience_is_marked_where_it_applied(mag_lenience):
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    g = generate(fam, [5, 6, 7, 5, 6], "csd", k=[[2, 3, 4], [0, 1, 3], [0, 0, 4]], lenience=3.0,
                 max_new_tokens=24, mag_lenience=mag_lenience)
    kinds = set()
    for r in range(sum(e.depth == 0 for e in g.events)):
        evs = round_events(g, r)
        fig = round_figure(g, fam.tokenizer, r)
        for y, (t, e) in enumerate(zip(fig.layout.yaxis.ticktext, evs)):
            lam = applied_lenience(g, e)
            expect = [1.0 if e.depth == 0 or (p == "mag" and not mag_lenience) else 3.0 for p in e.proposers]
            assert lam == expect
            if not e.tokens:
                assert t == f"{e.reviewer} reviews nothing"   # no drafted token: no lenience applied
            elif e.depth == 0 or set(lam) == {1.0}:
                assert t.endswith("(strict)" if e.depth == 0 else "(strict on mag)"), t
            elif set(lam) == {3.0}:
                assert t.endswith("(l = 3)"), t
            else:
                assert t.endswith("(l = 3 on small; strict on mag)"), t
            kinds.add(t.rsplit("(", 1)[1] if e.tokens else "")
            hovers = [b.hovertext[0] for b in fig.data if b.y is not None and b.y[0] == y
                      and b.marker.line.width != 3.5 and b.x[0] is not None]
            assert len(hovers) == len(e.tokens)
            for j, (h, x) in enumerate(zip(hovers, lam)):   # each reviewed token names its lenience
                if j <= e.n_accepted:
                    assert f"({'strict' if x == 1 else 'l = 3'})" in h, h
    kinds.discard("")
    mixed = {"strict on mag)", "l = 3 on small; strict on mag)"}
    assert kinds - mixed == {"strict)", "l = 3)"} and (kinds >= mixed if not mag_lenience else not kinds & mixed)


def test_strict_on_mag_is_what_the_engine_did():
    """The first review (small over MaG's block, same context either way) moves by l only when MaG is lenient."""
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    first = {}
    for ml in (False, True):
        g = generate(fam, [5, 6, 7, 5, 6], "csd", k=[[2, 3, 4], [0, 1, 3], [0, 0, 4]], lenience=3.0,
                     max_new_tokens=24, mag_lenience=ml)
        e = g.events[0]
        assert e.depth > 0 and set(e.proposers) == {"mag"}
        first[ml] = (e, applied_lenience(g, e))
    (strict, lam_s), (loose, lam_l) = first[False], first[True]
    assert strict.tokens == loose.tokens and set(lam_s) == {1.0} and set(lam_l) == {3.0}
    assert loose.accept_prob == pytest.approx([min(1.0, 3 * p) for p in strict.accept_prob], rel=1e-5)

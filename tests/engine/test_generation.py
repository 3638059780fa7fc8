"""csd_lib.engine.generation: what every method returns, its provenance counts, commit times and its JSON form."""
import json
from dataclasses import fields

import numpy as np
import pytest

from csd_lib.engine.cascade import generate
from csd_lib.engine.generation import (TARGET_BONUS, TARGET_CORRECTION, Event, Generation, inter_token_latencies,
                                       time_to_first_token)
from csd_lib.engine.plan import Plan
from csd_lib.engine.stats import Stats
from csd_lib.families.toy import random_family


def _generation(provenance, events=()):
    stats = Stats(len(provenance), 0.1, {"target": 2}, {"target": 0.05}, {"target": 10}, {})
    return Generation("text", list(range(3, 3 + len(provenance))), list(provenance), list(events), stats, "sd",
                      Plan.sd(2))


def test_provenance_counts_by_hand():
    g = _generation(["small", "small", TARGET_CORRECTION, "small", TARGET_BONUS, "mag-match"])
    assert g.provenance_counts() == {"small": 3, TARGET_CORRECTION: 1, TARGET_BONUS: 1, "mag-match": 1}
    assert _generation([]).provenance_counts() == {}


def test_to_dict_holds_the_plan_and_events_on_request():
    ev = Event(0, 0, "target", 0, [4, 5], ["small", "small"], ["small", "small"], [1.0, 0.25], 1, 7, False, 1.0)
    g = _generation(["small", TARGET_CORRECTION], [ev])
    d = g.to_dict()
    assert "events" not in d
    assert d["plan"] == Plan.sd(2).to_dict() and d["method"] == "sd" and d["token_ids"] == [3, 4]
    assert d["stats"]["tokens_per_target_call"] == 1.0
    d = g.to_dict(events=True)
    assert d["events"] == [{f.name: getattr(ev, f.name) for f in fields(Event)}]
    back = json.loads(json.dumps(d))  # plain JSON (a NaN SWI is written as NaN)
    assert back["events"] == d["events"] and back["plan"] == d["plan"]


@pytest.fixture(scope="module")
def csd_generation():
    fam = random_family("llama", vocab_size=32, n_drafters=2, seed=5, eos=None)
    return generate(fam, [4, 5, 6, 4, 5], "csd", max_new_tokens=20)


def test_a_real_generation_is_consistent(csd_generation):
    g = csd_generation
    counts = g.provenance_counts()
    assert sum(counts.values()) == len(g.token_ids) == len(g.provenance) == g.stats.n_tokens == 20
    top = [e for e in g.events if e.depth == 0]
    # every target review ends with one token of the target's own, a correction or a bonus
    assert counts.get(TARGET_CORRECTION, 0) + counts.get(TARGET_BONUS, 0) == len(top)
    assert [e.step for e in g.events] == list(range(len(g.events)))
    for e in g.events:
        assert len(e.tokens) == len(e.provenance) == len(e.proposers) == len(e.accept_prob)
        assert 0 <= e.n_accepted <= len(e.tokens)
        assert e.bonus == (e.n_accepted == len(e.tokens))
    assert json.loads(json.dumps(g.to_dict(events=True)))["plan"]["method"] == "csd"


def test_latency_of_known_commit_times():
    # a first block of 3 tokens at 0.5 s, one token at 0.75 s, a block of 2 at 1.25 s
    g = _generation(["small", "small", TARGET_CORRECTION, TARGET_BONUS, "small", TARGET_CORRECTION])
    g.commit_times = [0.5, 0.5, 0.5, 0.75, 1.25, 1.25]
    assert g.ttft == 0.5
    assert g.itl == [0.0, 0.0, 0.25, 0.5, 0.0]  # one gap per token after the first; 0 inside a block
    assert time_to_first_token([]) != time_to_first_token([])  # NaN: nothing was committed
    assert inter_token_latencies([0.2]) == [] and _generation([]).itl == []
    assert json.loads(json.dumps(g.to_dict()))["commit_times"] == g.commit_times


def test_a_real_generation_commits_each_target_round_at_one_time(csd_generation):
    g = csd_generation
    t = g.commit_times
    assert len(t) == len(g.token_ids) and all(0 < a <= b for a, b in zip(t, t[1:]))
    assert t[-1] <= g.stats.wall_time and g.ttft == t[0]
    # the tokens one target review emitted share one commit time; the next review's come later
    top = [e for e in g.events if e.depth == 0]
    ends = np.cumsum([e.n_accepted + 1 for e in top])  # no EOS here: every review emits accepted + 1
    assert ends[-1] == len(t)
    starts = [0, *ends[:-1]]
    assert all(len(set(t[s:e])) == 1 for s, e in zip(starts, ends))
    assert all(t[e - 1] < t[e] for e in ends[:-1])
    assert sum(x > 0 for x in g.itl) == len(top) - 1


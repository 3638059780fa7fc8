"""A strict run beside a lenient one: labels from the plan, the same-context replay, the sentence."""
import math

import pytest

from csd_lib import generate, random_family
from csd_lib.report.lenience_runs import lenience_numbers, lenience_rows, lenience_change_says

PROMPT = "w5 w6 w7 w5 w6"


@pytest.fixture(scope="module")
def runs():
    fam = random_family("t5", vocab_size=32, n_drafters=2, seed=3)
    k = [[3, 2, 4], [0, 3, 4], [0, 0, 4]]
    return (generate(fam, PROMPT, "csd", k=k, lenience=1.0, max_new_tokens=24),
            generate(fam, PROMPT, "csd", k=k, lenience=1000.0, max_new_tokens=24))


def test_rows_label_from_the_plan_and_replay_never_accepts_less(runs):
    strict, loose = runs
    rows = {r["pair"]: r for r in lenience_rows(strict, loose)}
    assert rows["base<-small"]["review"] == "lenient (l = 1000)"
    assert all(rows[p]["review"] == "strict" for p in rows if p.startswith("target<-") or p.endswith("<-mag"))
    for r in rows.values():
        if not math.isnan(r["l = 1"]) and r["pair"] == "base<-small":
            assert r["l = 1 replayed at l = 1000"] >= r["l = 1"]
    acc = strict.stats.acceptance["target<-base"]
    assert rows["target<-base"]["accepted / reviewed at l = 1"] == f"{sum(acc.accepted)} / {sum(acc.reached)}"
    for r in rows.values():  # the replayed rate comes with its counts, which say why a rate can fall
        a, n = (int(v) for v in r["accepted / reviewed replayed at l = 1000"].split(" / "))
        assert (math.isnan(r["l = 1 replayed at l = 1000"]) and n == 0) or r["l = 1 replayed at l = 1000"] == a / n


def test_sentence_names_the_lenient_review_and_the_target_calls(runs):
    strict, loose = runs
    says = lenience_change_says(strict, loose)
    assert "`base<-small`" in says and "mag_lenience=False" in says
    assert f"{strict.stats.calls['target']}" in says


def test_numbers_are_what_the_sentence_states(runs):
    strict, loose = runs
    nums = lenience_numbers(strict, loose)
    assert set(nums) == {"replay-monotone", "replay-extra-accepted:base:small", "target-calls-lenient-minus-strict"}
    assert nums["replay-monotone"] is True and nums["replay-extra-accepted:base:small"] >= 0
    assert nums["target-calls-lenient-minus-strict"] == loose.stats.calls["target"] - strict.stats.calls["target"]
    rows = {r["pair"]: r for r in lenience_rows(strict, loose)}
    a, r = (int(v) for v in rows["base<-small"]["accepted / reviewed at l = 1"].split(" / "))
    says = lenience_change_says(strict, loose)
    assert f"accepted {a} of {r} drafted tokens at l = 1" in says or f"already accepted all {r}" in says
    if a < r:  # the sentence's replayed count is the strict count plus the extra
        assert f"accept {a + nums['replay-extra-accepted:base:small']} of" in says
    with pytest.raises(ValueError, match="strict"):
        lenience_numbers(loose, strict)


def test_order_and_settings_checked(runs):
    strict, loose = runs
    with pytest.raises(ValueError, match="strict"):
        lenience_rows(loose, strict)

"""csd_lib.report.claims.record / read_ledger: one JSON line per claim, written whole, only when asked."""
import json
import math
import multiprocessing

import pytest

from csd_lib import config
from csd_lib.report.claims import LEDGER_FIELDS, claim_row, read_ledger, record
from csd_lib.report.intervals import paired_difference, rate_difference

UP = paired_difference([1, 2, 3, 4, 5, 6], [0] * 6)


def test_record_writes_only_where_the_setting_points(tmp_path, monkeypatch):
    path = tmp_path / "ledger.jsonl"
    monkeypatch.setattr(config, "CLAIMS_LEDGER", None)
    row = record("swi-csd-vs-sd", UP, "00_start_here")
    assert not path.exists() and row["verdict"] == "higher" and row["direction"] == 1
    assert (row["family"], row["seed"]) == (config.FAMILY, config.SEED)   # the run's own settings by default
    monkeypatch.setattr(config, "CLAIMS_LEDGER", str(path))
    record("swi-csd-vs-sd", UP, "00_start_here", family_name="tiny-llama", seed=3)
    record("mag-up", UP, "03_vertical_cascade", expected=-1)
    rows = read_ledger(path)
    assert [tuple(r) for r in rows] == [LEDGER_FIELDS] * 2
    assert rows[0] | {"text": ""} == dict(notebook="00_start_here", claim="swi-csd-vs-sd", family="tiny-llama", seed=3,
                                          value=3.5, lo=1.0, hi=6.0, n=6, level=0.95, direction=1, verdict="higher", text="",
                                          data={})
    assert rows[0]["text"] == UP.says() and rows[1]["verdict"] == "broken"


def test_undefined_and_too_few_are_written_as_null_with_their_verdict(tmp_path):
    path = tmp_path / "ledger.jsonl"
    record("never-reached", rate_difference([0] * 6, [0] * 6, [1] * 6, [2] * 6), "01", path=path)
    record("two-prompts", paired_difference([1, 4], [0] * 2), "03", path=path, expected=1)
    record("a-number", math.nan, "05", path=path)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text           # strict JSON
    nan, few, num = read_ledger(path)
    assert (nan["value"], nan["verdict"], nan["direction"]) == (None, "undefined", 0)
    assert (few["value"], few["lo"], few["verdict"], few["direction"]) == (2.5, None, "too few", 0)
    assert (num["value"], num["verdict"], num["direction"]) == (None, "measured", None)


def _write_many(args):
    path, worker = args
    for i in range(300):
        record(f"claim-{worker}-{i}", paired_difference([1, 2, 3, 4, 5, 6 + i], [0] * 6), "nb", path=path)


def test_parallel_notebooks_never_interleave_their_lines(tmp_path):
    path = str(tmp_path / "ledger.jsonl")
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_write_many, [(path, w) for w in range(4)])
    rows = read_ledger(path)
    assert len(rows) == 1200 and len({r["claim"] for r in rows}) == 1200


def test_bad_claims_and_ledgers_get_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="claim_id must be"):
        claim_row("two words", UP, "nb")
    with pytest.raises(ValueError, match="notebook must name"):
        claim_row("x", UP, "")
    with pytest.raises(ValueError, match="expected applies to a Difference"):
        claim_row("x", 0.5, "nb", expected=1)
    with pytest.raises(ValueError, match="value must be"):
        claim_row("x", "higher", "nb")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(claim_row("x", UP, "nb")) + "\n\n{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:3 is not a JSON line"):
        read_ledger(bad)
    with pytest.raises(ValueError, match="no claims ledger at"):
        read_ledger(tmp_path / "none.jsonl")


def test_claims_checked_by_holds_and_expect_are_written_with_their_verdict(tmp_path, monkeypatch):
    from csd_lib.families.family import load_family
    from csd_lib.families.toy import random_family
    from csd_lib.report.claims import NOT_CHECKED, expect, holds
    path = tmp_path / "ledger.jsonl"
    monkeypatch.setattr(config, "CLAIMS_LEDGER", str(path))
    toy, tiny = random_family("llama", seed=0), load_family("tiny-llama")
    holds(True, "nothing left", family=tiny)                          # no claim id: nothing written
    assert not path.exists()
    assert holds(True, "no decay", family=tiny, claim="decays:x", notebook="01", data={"position": 10}) == "holds"
    assert holds(False, "no decay", family=toy, claim="decays:x", notebook="01") == NOT_CHECKED
    assert holds(False, "no decay", family=tiny, claim="decays:y", notebook="01") == "not this time: no decay"
    assert expect(UP, -1, "it fell", family=toy, claim="falls", notebook="01") == NOT_CHECKED
    assert expect(UP, -1, "it fell", family=tiny, claim="falls", notebook="01").startswith("not this time: it fell")
    rows = read_ledger(path)
    assert [(r["claim"], r["verdict"]) for r in rows] == [
        ("decays:x", "holds"), ("decays:x", NOT_CHECKED), ("decays:y", "broken"),
        ("falls", NOT_CHECKED), ("falls", "broken")]                   # a broken live claim is recorded, not raised
    assert {(r["family"], r["seed"]) for r in rows} == {(config.FAMILY, config.SEED)}  # the run's setting
    assert rows[0]["data"] == {"position": 10} and rows[2]["text"] == "broken: no decay"
    assert rows[4]["direction"] == 1 and rows[4]["lo"] == 1.0
    with pytest.raises(ValueError, match="claim and notebook together"):
        holds(True, "x", claim="decays:x")
    with pytest.raises(ValueError, match="data must map"):
        record("x", UP, "01", data={"position": [10]})

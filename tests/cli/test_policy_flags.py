"""--draft-policy and --confidence on generate and bench: they reach the plan, the records and the resume check."""
import json

import pytest

from csd_lib.cli.commands import cmd_bench, cmd_generate
from csd_lib.cli.parser import parser
from csd_lib.engine.cascade import generate
from csd_lib.families.family import load_family
from csd_lib.measure.records import read_records

PROMPT = "Question: Ann has 3 pens. She buys 2 more. How many pens?"


def args(*argv):
    return parser("csd").parse_args(list(argv))


def test_generate_runs_the_policy_and_logs_its_lengths(capsys):
    cmd_generate(args("generate", "--family", "tiny-t5", "--method", "csd", "--draft-policy", "confidence",
                      "--confidence", "0.7", "--max-new-tokens", "16", "--prompt", PROMPT, "--json", "--events"))
    out = json.loads(capsys.readouterr().out)
    fam = load_family("tiny-t5")
    assert out["token_ids"] == generate(fam, PROMPT, "ar", max_new_tokens=16).token_ids
    assert set(out["plan"]["draft_policy"]) == {"confidence"} and out["plan"]["confidence"] == 0.7
    want = generate(fam, PROMPT, "csd", max_new_tokens=16, draft_policy="confidence", confidence=0.7)
    assert [e["draft_length"] for e in out["events"]] == [e.draft_length for e in want.events]


def test_bench_gives_the_policy_to_the_methods_that_take_it(tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    base = ("bench", "--family", "tiny-t5", "--n", "1", "--methods", "ar,sd,mag", "--max-new-tokens", "8",
            "--out", str(out), "--costs", "none", "--threads", "1")
    cmd_bench(args(*base, "--draft-policy", "confidence", "--confidence", "0.6"))
    assert "applies to sd; ar, mag run K as given" in capsys.readouterr().err
    recs = {r["method"]: r for r in read_records(out)}
    assert recs["sd"]["plan"]["draft_policy"] == ["confidence"] and recs["sd"]["plan"]["confidence"] == 0.6
    assert recs["mag"]["plan"]["draft_policy"] == ["fixed"] and recs["ar"]["plan"]["draft_policy"] == []
    assert sum(recs["sd"]["draft_lengths"]) + len(recs["sd"]["draft_lengths"]) >= 8  # drafts + one token per round
    with pytest.raises(ValueError, match="sd's draft_policy is \\['confidence'\\] there, \\['schedule'\\] now"):
        cmd_bench(args(*base, "--draft-policy", "schedule"))
    with pytest.raises(ValueError, match="sd's confidence is 0.6 there, 0.4 now"):
        cmd_bench(args(*base, "--draft-policy", "confidence"))

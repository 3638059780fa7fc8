"""csd_lib.cli.commands: each command on parsed arguments; bad combinations fail before any model loads."""
import json

import pytest

from csd_lib.cli.commands import cmd_bench, cmd_generate, cmd_predict
from csd_lib.cli.parser import parser
from csd_lib.engine.cascade import generate
from csd_lib.families.family import load_family
from csd_lib.measure.records import read_records


def args(*argv):
    return parser("csd").parse_args(list(argv))


@pytest.mark.parametrize("argv", [["generate"], ["generate", "--prompt", "w", "--prompts-file", "p.jsonl"]])
def test_generate_needs_exactly_one_prompt_source(argv, no_loading):
    with pytest.raises(ValueError, match="give exactly one of --prompt TEXT or --prompts-file F.jsonl"):
        cmd_generate(args(*argv))


def test_generate_checks_the_prompts_file_first(tmp_path, no_loading):
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "fine"}\n{"oops": 1}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=f"{p}:2 has no string 'prompt'"):
        cmd_generate(args("generate", "--family", "tiny-t5", "--prompts-file", str(p)))


def test_generate_json_lines_are_the_apis_generations(tmp_path, capsys):
    prompts = ["Question: Ann has 3 pens. She buys 2 more. How many pens?", "Tom has 5 apples."]
    p = tmp_path / "p.jsonl"
    p.write_text("".join(json.dumps({"prompt": q}) + "\n" for q in prompts), encoding="utf-8")
    cmd_generate(args("generate", "--family", "tiny-t5", "--prompts-file", str(p), "--max-new-tokens", "8",
                      "--json", "--events"))
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    fam = load_family("tiny-t5")
    assert [x["token_ids"] for x in lines] == [generate(fam, q, "csd", max_new_tokens=8).token_ids for q in prompts]
    assert all(x["method"] == "csd" and x["events"] and x["plan"]["max_new_tokens"] == 8 for x in lines)
    cmd_generate(args("generate", "--family", "tiny-t5", "--prompt", prompts[1], "--method", "sd",
                      "--max-new-tokens", "5"))
    out = capsys.readouterr().out
    assert "\x1b[" not in out  # not a terminal: no colour codes
    assert out.splitlines()[-1].startswith("[sd] 5 tokens, ") and "tokens/target call" in out


def test_bench_with_a_cost_file_from_another_machine_says_how_it_differs(tmp_path, capsys):
    from csd_lib import config
    given = json.loads((config.RESULTS_DIR / "costs-tiny-t5-cpu.json").read_text(encoding="utf-8"))
    given["env"] = {**given["env"], "cpu_model": "Another CPU"}  # a constructed fingerprint
    path = tmp_path / "c.json"
    path.write_text(json.dumps(given), encoding="utf-8")
    cmd_bench(args("bench", "--family", "tiny-t5", "--n", "1", "--methods", "ar,sd", "--max-new-tokens", "6",
                   "--out", str(tmp_path / "out.jsonl"), "--costs", str(path), "--threads", "1"))
    err = capsys.readouterr().err
    assert f"note: --costs {path} is used as given, but cpu model" in err and "'Another CPU' there" in err
    assert "reference steps here over there: target step" in err


@pytest.mark.parametrize("argv,message", [
    (["--clock", "cpu", "--threads", "2"], "--clock cpu needs --threads 1"),
    (["--methods", "ar,sd", "--k", "[[1, 2], [0, 3]]"], "--k is for csd or csd-tree, which --methods ar,sd does not run"),
    (["--methods", "ar,csd", "--sd-k", "3"], "--sd-k is for sd or tree-sd, which --methods ar,csd does not run"),
    (["--lenience", "0.5"], r"lenience must be a finite number >= 1 .*got 0.5"),
    (["--k", "[[1, 2]"], "--k is not valid JSON"),
])
def test_bench_refuses_bad_combinations_before_loading(tmp_path, argv, message, no_loading):
    base = ["bench", "--family", "tiny-t5", "--n", "1", "--out", str(tmp_path / "out.jsonl")]
    with pytest.raises(ValueError, match=message):
        cmd_bench(args(*base, *argv))


@pytest.mark.parametrize("argv", [["--methods", "csd-tree", "--k", "[[1, 2], [0, 3]]"],
                                  ["--methods", "csd-tree", "--lenience", "2"],
                                  ["--methods", "tree-sd", "--sd-k", "3"]])
def test_bench_settings_reach_the_tree_methods_that_use_them(tmp_path, argv, no_loading):
    """csd-tree runs csd's K and lenience, tree-sd SD's draft length: given without csd (sd), they are taken."""
    with pytest.raises(AssertionError, match="a family was loaded"):  # past every argument check
        cmd_bench(args("bench", "--family", "tiny-t5", "--n", "1", "--costs", "none", "--out",
                       str(tmp_path / "out.jsonl"), *argv))


def test_bench_refuses_an_unreadable_results_file(tmp_path, no_loading):
    out = tmp_path / "out.jsonl"
    out.write_text("not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{out}:1 is not a JSON record"):
        cmd_bench(args("bench", "--family", "tiny-t5", "--n", "1", "--out", str(out), "--costs", "none"))


def test_bench_writes_records_summary_and_table(tmp_path, capsys):
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    cmd_bench(args("bench", "--family", "tiny-t5", "--n", "1", "--methods", "ar,sd", "--max-new-tokens", "6",
                   "--out", str(out), "--summary-json", str(summary), "--costs", "none", "--threads", "1"))
    recs = read_records(out)
    assert sorted(r["method"] for r in recs) == ["ar", "sd"] and all(r["example"] == 0 for r in recs)
    s = json.loads(summary.read_text(encoding="utf-8"))
    assert set(s) == {"ar", "sd"} and s["sd"]["mismatches"] == 0 and s["sd"]["n"] == 1
    assert s["sd"]["speedup_walltime_predicted"] is None  # --costs none: no prediction
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("clock: wall") and [r.split()[0] for r in table[4:6]] == ["ar", "sd"]
    assert table[1].startswith("machine: cpu: ") and "one-token step: target" in table[1]  # the run's fingerprint
    assert s["sd"]["machine"]["reference"]["target"] > 0
    assert table[6].startswith("latency") and [r.split()[0] for r in table[9:]] == ["ar", "sd"]  # TTFT and ITL


@pytest.mark.parametrize("argv,message", [
    (["--drafters", "a,b"], "--drafters needs --target"),
    (["--target", "some/model", "--family", "tiny-t5"], "give --family or --target/--drafters, not both"),
])
def test_predict_refuses_bad_combinations(argv, message, no_loading):
    with pytest.raises(ValueError, match=message):
        cmd_predict(args("predict", *argv))


def test_generate_a_tree_method(capsys):
    """--method csd-tree with --tree on tiny-llama: the API's generation, equal to AR; a bad budget fails first."""
    prompt = "Question: Ann has 3 pens. She buys 2 more. How many pens?"
    cmd_generate(args("generate", "--family", "tiny-llama", "--method", "csd-tree", "--tree", "[2,2]",
                      "--branch-below", "0.9", "--max-new-tokens", "24", "--prompt", prompt, "--json"))
    out = json.loads(capsys.readouterr().out)
    ar = generate(load_family("tiny-llama"), prompt, "ar", max_new_tokens=24)
    assert out["token_ids"] == ar.token_ids and out["plan"]["tree"] == [2, 2] and out["plan"]["branch_below"] == 0.9
    assert out["stats"]["nodes_per_target_call"] > 0


def test_generate_refuses_a_bad_tree_before_loading(no_loading):
    with pytest.raises(ValueError, match="tree budget"):
        cmd_generate(args("generate", "--family", "tiny-llama", "--method", "tree-sd", "--tree", "[0]", "--prompt", "w"))
    with pytest.raises(ValueError, match="tree methods"):
        cmd_generate(args("generate", "--family", "tiny-llama", "--method", "sd", "--tree", "[2]", "--prompt", "w"))


def test_generate_a_batch_gives_each_row_its_ar_tokens(tmp_path, capsys):
    prompts = ["Tom has 3 apples and buys 4 more. How many apples?", "What is 12 + 5?",
               "A box holds 6 eggs. How many eggs are in 4 boxes? Think step by step."]
    p = tmp_path / "p.jsonl"
    p.write_text("".join(json.dumps({"prompt": q}) + "\n" for q in prompts), encoding="utf-8")
    cmd_generate(args("generate", "--family", "tiny-t5", "--method", "csd", "--batch-size", "2", "--prompts-file",
                      str(p), "--max-new-tokens", "12", "--json"))
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    fam = load_family("tiny-t5")
    assert [x["row"] for x in lines] == [0, 1, 2] and all(x["plan"]["batch_size"] == 2 for x in lines)
    assert [x["token_ids"] for x in lines] == [generate(fam, q, "ar", max_new_tokens=12).token_ids for q in prompts]


def test_generate_refuses_a_batched_tree_before_loading(no_loading):
    with pytest.raises(ValueError, match="batched generation does not run"):
        cmd_generate(args("generate", "--family", "tiny-llama", "--method", "csd-tree", "--batch-size", "2",
                          "--prompt", "w"))

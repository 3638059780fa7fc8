"""Bad input: each case raises ValueError with advice; the CLI prints one line, no traceback.

The table of bad numbers, names and files across the API and the CLI is tests/cli/test_bad_inputs.py.
"""
import functools
import json
import os

import pytest

from csd_lib import generate, load_family, random_family
from csd_lib.cli.main import main
from csd_lib.engine.plan import validate_k


@functools.lru_cache(maxsize=None)
def fam():
    return random_family("llama", vocab_size=32, n_drafters=2, seed=0)


@pytest.mark.parametrize("k,msg", [
    ([[1, 2], [0, 1]], "3x3"),                          # wrong size for the drafters
    ([[1, 2, 3], [0, 1], [0, 0, 1]], "3x3"),            # not square
    ([[1, -2, 3], [0, 1, 2], [0, 0, 1]], "negative"),
    ([[1, 2.5, 3], [0, 1, 2], [0, 0, 1]], "not an integer"),
    ([[1, True, 3], [0, 1, 2], [0, 0, 1]], "not an integer"),
    ("[[1,2", "not valid JSON"),
    (7, "3x3"),
])
def test_bad_k(k, msg):
    with pytest.raises(ValueError, match=msg):
        generate(fam(), [3, 4, 5], "csd", k=k, max_new_tokens=4)


def test_k_as_json_string_is_accepted():
    assert validate_k("[[1,2],[0,3]]", 2) == [[1, 2], [0, 3]]


@pytest.mark.parametrize("kw,msg", [
    (dict(lenience=0.5), "lenience must be a finite number >= 1"),
    (dict(lenience=float("nan")), "lenience"),
    (dict(temperature=-0.1), "temperature must be a finite number >= 0"),
    (dict(max_new_tokens=0), "max_new_tokens must be an integer >= 1"),
    (dict(method="beam"), "unknown method 'beam'"),
    (dict(method="sd", drafter="huge"), "unknown drafter"),
    (dict(method="staged", lenience=2.0), "without lenience"),
])
def test_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg):
        generate(fam(), [3, 4, 5], **{"max_new_tokens": 4, **kw})


@pytest.mark.parametrize("prompt", ["", "   ", []])
def test_empty_prompt(prompt):
    with pytest.raises(ValueError, match="empty"):
        generate(fam(), prompt, "csd", max_new_tokens=4)


def test_prompt_plus_new_tokens_over_limit():
    with pytest.raises(ValueError, match="exceeds the model limit"):
        generate(fam(), list(range(3, 30)) * 20, "ar", max_new_tokens=10)


def test_staged_needs_two_drafters():
    with pytest.raises(ValueError, match="two neural drafters"):
        generate(random_family("llama", 32, n_drafters=1), [3, 4], "staged", max_new_tokens=4)


def test_unknown_family():
    with pytest.raises(ValueError, match="unknown family 'gpt-5'.*tiny-t5"):
        load_family("gpt-5")


@pytest.mark.parametrize("args,msg", [
    (["generate", "--family", "tiny-t5", "--method", "csd", "--k", "[[1,2]]", "--prompt", "x"], "bad K"),
    (["generate", "--family", "tiny-t5", "--prompt", ""], "empty"),
])
def test_cli_errors_after_loading_are_one_line(args, msg, capsys):
    """Errors found once the family is loaded also end in one line (more in test_bad_inputs.py)."""
    assert main(args) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


# -- settings a method would silently ignore (refused by make_plan) ---------------------------------

@pytest.mark.parametrize("k", [[[3]], 3, "[[1,"])
def test_k_for_ar_is_refused(k):
    with pytest.raises(ValueError, match="'ar'"):
        generate(fam(), [3, 4, 5], "ar", k=k, max_new_tokens=4)


@pytest.mark.parametrize("k", [0, [[0]]])
def test_k_zero_for_sd_is_refused(k):
    with pytest.raises(ValueError, match="SD needs a draft length k >= 1"):
        generate(fam(), [3, 4, 5], "sd", k=k, max_new_tokens=4)


def test_cli_k_zero_for_sd_is_refused(capsys):
    assert main(["generate", "--family", "tiny-t5", "--method", "sd", "--k", "0", "--max-new-tokens", "4",
                 "--prompt", "x"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines()[-1].startswith("error: ") and "Traceback" not in err


# -- the command line: results on stdout, notes on stderr --------------------------------------------

def test_cli_tiny_temperature_samples_like_greedy(capsys):
    """--temperature 1e-300 once overflowed the softmax (nan); now it is the argmax, as greedy."""
    args = ["generate", "--family", "tiny-t5", "--method", "csd", "--max-new-tokens", "8", "--prompt", "w3 w4",
            "--json"]
    assert main([*args, "--temperature", "1e-300", "--seed", "1"]) == 0
    tiny = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    assert tiny["token_ids"] == json.loads(capsys.readouterr().out)["token_ids"]


def test_cli_bench_stdout_is_the_table_only(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    args = ["bench", "--family", "tiny-t5", "--n", "1", "--methods", "ar,mag", "--max-new-tokens", "4",
            "--costs", "none", "--out", str(out), "--summary-json", str(tmp_path / "s.json")]
    assert main(args) == 0
    stdout, err = capsys.readouterr()
    lines = stdout.splitlines()  # clock and load, machine, head, rule, ar, mag, then the latency block's five
    assert lines[0].startswith("clock: wall") and lines[1].startswith("machine: ") and lines[2].startswith("method")
    assert [ln.split()[0] for ln in lines[4:6]] == ["ar", "mag"] and lines[6].startswith("latency") and len(lines) == 11
    assert "load_task: synth-gsm8k/test: 1 examples" in err
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["split"], r["seed"], r["task"]) for r in recs} == {("test", 0, "synth-gsm8k")}
    # another --max-new-tokens: refused, or a new file with --new-out
    assert main([*args[:-4], "--max-new-tokens", "5", *args[-4:]]) == 2
    assert "max_new_tokens is 4 there, 5 now" in capsys.readouterr().err
    assert main([*args[:-4], "--max-new-tokens", "5", "--new-out", *args[-4:]]) == 0
    assert f"writing {tmp_path / 'r-2.jsonl'}" in capsys.readouterr().err
    assert {json.loads(line)["max_new_tokens"] for line in (tmp_path / "r-2.jsonl").read_text().splitlines()} == {5}


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes any folder")
def test_cli_bench_read_only_summary_folder_is_refused_before_the_run(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    out = tmp_path / "r.jsonl"
    assert main(["bench", "--family", "tiny-t5", "--n", "1", "--out", str(out), "--summary-json",
                 str(ro / "s.json")]) == 2
    assert "is not writable" in capsys.readouterr().err and not out.exists()

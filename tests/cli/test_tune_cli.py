"""``python -m csd_lib tune`` and the tuned defaults of generate and bench: which settings ran is said, a flag
given wins, bad input is one line before anything loads, and a tuned generation equals AR."""
import json

import pytest

from csd_lib import config
from csd_lib.cli.main import main
from csd_lib.price.tuned import load_tuned, machine_class, save_tuned

K = [[2, 3, 10], [0, 1, 10], [0, 0, 10]]
PROMPT = "Q: Tom has 3 apples and buys 4 more. How many apples?"


def store(policy="ewif"):
    return save_tuned({"family": "tiny-t5", "machine_class": machine_class(), "date": "2026-12-07T23:00:00+00:00",
                       "csd": {"k": K, "lenience": 2.0, "draft_policy": policy, "confidence": None},
                       "sd": {"k": 6, "draft_policy": policy, "confidence": None}})


def generate(capsys, *flags):
    assert main(["generate", "--family", "tiny-t5", "--prompt", PROMPT, "--max-new-tokens", "12", "--json",
                 *flags]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), [line for line in err.splitlines() if line.startswith("K, k and policy:")]


def test_generate_says_which_settings_ran_and_flags_win(capsys):
    g, said = generate(capsys)
    assert g["plan"]["k"] != K and said == [said[0]] and f"the preset (no tuned setting for machine class " \
        f"{machine_class()}; `python -m csd_lib tune --family tiny-t5` takes about" in said[0]
    path = store()
    g, said = generate(capsys)
    assert (g["plan"]["k"], g["plan"]["lenience"], set(g["plan"]["draft_policy"])) == (K, 2.0, {"ewif"})
    assert said == [f"K, k and policy: tuned on 2026-12-07 for machine class {machine_class()} ({path})"]
    g, said = generate(capsys, "--k", "[[1,0,10],[0,1,10],[0,0,10]]", "--draft-policy", "fixed")
    assert (g["plan"]["k"], set(g["plan"]["draft_policy"]), g["plan"]["lenience"]) == \
        ([[1, 0, 10], [0, 1, 10], [0, 0, 10]], {"fixed"}, 2.0)
    assert said[0].endswith("given: k, draft_policy")
    ar, _ = generate(capsys, "--method", "ar")
    sd, said = generate(capsys, "--method", "sd")
    assert sd["plan"]["k"] == [[6]]  # SD's tuned draft length
    assert sd["token_ids"] == ar["token_ids"]


def status(argv) -> int:
    """main's exit status, an argparse usage error's included."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def test_bad_tune_input_is_one_line_before_anything_loads(capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    for argv, message in ((["--family", "nope"], "invalid choice: 'nope'"), (["--budget", "0"], "must be >= 1"),
                          (["--out", str(tmp_path / "file")], "is a file, not a folder"),
                          (["--task", "spec-bench"], "error: ")):
        assert status(["tune", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.slow
def test_tune_end_to_end_then_generate_uses_it_losslessly(capsys, tmp_path):
    assert main(["tune", "--family", "tiny-t5", "--budget", "1", "--n", "1", "--max-new-tokens", "8"]) == 0
    out, err = capsys.readouterr()
    assert "about" in err.splitlines()[0] or any("about" in line for line in err.splitlines()[:3])
    data, path = load_tuned("tiny-t5")
    assert path.is_relative_to(config.tuned_dir()) and data["split"] == "val" and data["task"] == "synth-gsm8k"
    assert {data["torch"], data["transformers"], data["date"]} and f"stored for machine class {machine_class()}" in out
    assert data["csd"]["draft_policy"] in ("fixed", "schedule", "confidence", "ewif")
    g, said = generate(capsys)
    assert g["plan"]["k"] == data["csd"]["k"] and said[0].startswith("K, k and policy: tuned on ")
    assert set(g["plan"]["draft_policy"]) == {data["csd"]["draft_policy"]}
    ar, _ = generate(capsys, "--method", "ar")
    assert g["token_ids"] == ar["token_ids"]  # the tuned cascade is lossless

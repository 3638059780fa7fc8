"""Bad input: each case raises ValueError with advice; the CLI prints one line, no traceback.

The table of bad numbers, names and files across the API and the CLI is tests/test_bad_inputs.py.
"""
import functools

import pytest

from csd_lib import generate, load_family, random_family
from csd_lib.__main__ import main
from csd_lib.plan import validate_k


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

"""csd_lib.engine.inputs: what a caller hands the API is checked before torch sees it, one clear ValueError each."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from csd_lib.engine.inputs import FAMILY_PARTS, check_family, check_prompt


def test_check_family_returns_a_family_as_is():
    fam = SimpleNamespace(**{a: None for a in FAMILY_PARTS})
    assert check_family(fam) is fam


def test_check_family_a_name_says_how_to_load_it():
    with pytest.raises(ValueError, match=r"family 'tiny-t5' is a name.*fam = load_family\('tiny-t5'\)"):
        check_family("tiny-t5")


def test_check_family_names_the_missing_parts():
    with pytest.raises(ValueError, match="got a SimpleNamespace without drafters, mag"):
        check_family(SimpleNamespace(tokenizer=None, target=None))
    with pytest.raises(ValueError, match="got a dict without tokenizer, target, drafters, mag"):
        check_family({"tokenizer": 1})


def test_check_prompt_text_and_ids():
    assert check_prompt("  some text ", 10) == "  some text "
    assert check_prompt((3, 4, 0), 10) == [3, 4, 0]
    for arr in (np.array([1, 9], dtype=np.int16), torch.tensor([1, 9]), torch.tensor([1, 9], dtype=torch.uint8)):
        ids = check_prompt(arr, 10)
        assert ids == [1, 9] and all(type(t) is int for t in ids)
    assert check_prompt([np.int64(2)], 3) == [2] and type(check_prompt([np.int64(2)], 3)[0]) is int


@pytest.mark.parametrize("prompt,message", [
    ("", "the prompt is empty; pass some text"),
    (" \n\t", "the prompt is empty; pass some text"),
    ([], "the prompt is empty; pass at least one token"),
    (np.zeros(0, dtype=np.int64), "the prompt is empty; pass at least one token"),
    ([1, 10], r"prompt token id 10 is out of range \[0, 10\)"),
    ([-1], r"prompt token id -1 is out of range \[0, 10\)"),
    ([1, 2.0], "prompt ids must be ints, got float 2.0"),
    ([1, True], "prompt ids must be ints, got bool True"),
    ([np.bool_(True)], "prompt ids must be ints, got bool"),
    (["w3"], "prompt ids must be ints, got str 'w3'"),
    (torch.tensor([[1, 2]]), r"prompt ids must be 1-D, got shape \(1, 2\)"),
    (np.array([1.0, 2.0]), "prompt ids must be integers, got an array of float64"),
    (torch.tensor([1.0]), "prompt ids must be integers, got an array of torch.float32"),
    (torch.tensor([True]), "prompt ids must be integers, got an array of torch.bool"),
    (42, "prompt must be text .str. or token ids .a list of ints., got int 42"),
    ({"prompt": "x"}, "got dict {'prompt': 'x'}"),
])
def test_check_prompt_errors(prompt, message):
    with pytest.raises(ValueError, match=message):
        check_prompt(prompt, 10)


def test_a_long_bad_value_is_shortened_in_the_message():
    with pytest.raises(ValueError) as e:
        check_prompt({"k": "x" * 200}, 10)
    shown = str(e.value).split("got dict ", 1)[1]
    assert shown == repr({"k": "x" * 200})[:37] + "..."

"""csd_lib.families.medusa: the shipped tiny-llama Medusa heads load into the family and run method 'medusa'."""
import pytest
import torch

from csd_lib import generate, load_family
from csd_lib.engine.plan import medusa_budget
from csd_lib.families.medusa import MedusaHeads, load_medusa


@pytest.fixture(scope="module")
def fam():
    return load_family("tiny-llama")


def test_the_family_loads_its_heads(fam):
    assert isinstance(fam.medusa, MedusaHeads) and fam.medusa.n_heads == 4
    assert sorted(fam.medusa.trees) == [16, 32]
    assert sum(medusa_budget(fam.medusa.trees[16])) == 16
    h = torch.zeros(2, fam.medusa.hidden_size)
    assert fam.medusa(h).shape == (4, 2, fam.target.vocab_size)


def test_medusa_on_tiny_llama_equals_ar_in_fewer_target_calls(fam):
    prompt = "Tom has 3 apples and buys 4 more. How many apples does he have?"
    ar = generate(fam, prompt, "ar", max_new_tokens=40)
    g = generate(fam, prompt, "medusa", max_new_tokens=40)
    assert g.token_ids == ar.token_ids
    assert g.stats.calls["target"] < ar.stats.calls["target"] and g.provenance_counts().get("medusa", 0) > 0
    assert g.plan.tree == medusa_budget(fam.medusa.trees[16])


def test_nothing_is_drafted_under_an_eos_candidate(fam):
    """A synth-gsm8k prompt where a Medusa candidate path holds EOS before its end: the output stops at EOS."""
    from csd_lib.families.tasks import load_task
    prompt = load_task("synth-gsm8k", "test", 5)[4].prompt
    g = generate(fam, prompt, "medusa", max_new_tokens=128)
    assert g.token_ids == generate(fam, prompt, "ar", max_new_tokens=128).token_ids
    assert any(fam.target.eos_token_id in e.tokens for e in g.events)


def test_heads_of_another_target_are_refused(tmp_path, fam):
    from csd_lib.zoo.medusa import save_medusa
    save_medusa(MedusaHeads(8, fam.target.vocab_size, 2), tmp_path / "m", {})
    with pytest.raises(ValueError, match="hidden size 8"):
        load_medusa(tmp_path / "m", target=fam.target)

"""The adapter: cache rollback through crop, vocabulary checks, prompt limits."""
import pytest
import torch

from csd_lib.families.toy import toy_model
from csd_lib.engine.models import LM, check_vocab


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_rollback_matches_from_scratch(arch):
    torch.manual_seed(0)
    prompt = torch.randint(3, 40, (10,)).tolist()
    lm = LM("target", toy_model(arch, 40, "target", 0, torch.float64))
    seq = lm.start(prompt)
    seq = seq + [5, 6, 7]
    lm.logits(seq, 0)
    draft = [8, 9, 10, 11, 12]
    lm.logits(seq + draft, len(draft))           # speculate 5
    accepted = seq + draft[:2] + [13]           # keep 2, correct the 3rd: the cache must roll back
    got = lm.logits(accepted + [14, 15], 2)
    assert lm.meter.tokens_fed < len(accepted) + 2 + len(seq) + len(draft) + 1  # reused the cache
    fresh = LM("fresh", lm.model)
    fresh.start(prompt)
    want = fresh.logits(accepted + [14, 15], len(accepted + [14, 15]) - 1)[-3:]
    assert torch.allclose(got, want, rtol=1e-9, atol=1e-9)


def test_rollback_by_several_steps_then_regrow():
    lm = LM("t", toy_model("llama", 40, "base", 1, torch.float32))
    seq = lm.start([3, 4, 5])
    lm.logits(seq + list(range(6, 20)), 13)
    a = lm.logits(seq + [6, 7], 1)
    fresh = LM("f", lm.model)
    fresh.start([3, 4, 5])
    assert torch.allclose(a, fresh.logits(seq + [6, 7], 1), atol=1e-5)


def test_vocab_mismatch_names_both_models():
    a = LM("target", toy_model("llama", 40, "base", 0))
    b = LM("small", toy_model("llama", 48, "small", 0))
    with pytest.raises(ValueError, match="'target'.*'small'"):
        check_vocab([a, b])


def test_tokenizer_mismatch_names_both_models():
    from csd_lib.families.toy import toy_tokenizer
    a = LM("target", toy_model("llama", 40, "base", 0))
    b = LM("small", toy_model("llama", 40, "small", 0))
    t1, t2 = toy_tokenizer(40, False), toy_tokenizer(40, False)
    t2.add_tokens(["extra"])
    with pytest.raises(ValueError, match="'a'.*'b'"):
        check_vocab([a, b], {"a": t1, "b": t2})


def test_prompt_longer_than_model_limit():
    lm = LM("t", toy_model("llama", 40, "small", 0), max_length=8)
    with pytest.raises(ValueError, match="at most 8"):
        lm.start(list(range(3, 13)))

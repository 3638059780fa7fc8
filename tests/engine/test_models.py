"""The adapter: cache rollback through crop, vocabulary checks, prompt limits, the transformers it runs on."""
import pytest
import torch
import transformers

from csd_lib.families.toy import toy_model
from csd_lib.engine.models import (CACHE_KEYWORDS, LM, TESTED_RANGE, TRANSFORMERS_TESTED, StackError, cache_keyword,
                                   check_vocab, transformers_ok)


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


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_cache_keyword_comes_from_the_forward_signature(arch):
    import inspect
    model = toy_model(arch, 40, "base", 0)
    kw = cache_keyword(model)
    assert kw in CACHE_KEYWORDS and kw in inspect.signature(model.forward).parameters

    class Swallows(torch.nn.Module):  # a forward that names no cache: **kwargs would swallow any keyword
        def forward(self, input_ids, **kwargs):
            return input_ids
    with pytest.raises(StackError, match=f"no KV cache argument.*transformers {transformers.__version__}"):
        cache_keyword(Swallows())


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_a_cache_the_forward_ignores_stops_in_one_line(arch):
    """What transformers 5.17 did with ``cache=``: swallowed it, so the cache never grew. The adapter stops."""
    lm = LM("target", toy_model(arch, 40, "target", 0))
    lm.__dict__["_cache_kw"] = "kv_cache_not_read"  # the forward's **kwargs swallows this name
    seq = lm.start([5, 6, 7, 8])
    with pytest.raises(StackError) as e:
        lm.logits(seq + [9], 1)
    msg = str(e.value)
    assert "\n" not in msg and f"transformers {transformers.__version__}" in msg and TESTED_RANGE in msg
    assert lm.meter.calls == 0  # nothing was counted as a valid call
    ok = LM("target", lm.model)
    assert ok.logits(ok.start([5, 6, 7, 8]) + [9], 1).shape[0] == 2  # the signature's keyword works
    assert ok._cache.get_seq_length() == len(ok._cached)


def test_transformers_ok_names_the_tested_range():
    lo, hi = TRANSFORMERS_TESTED
    assert transformers_ok() is None  # the installed one (the pin, or a stack_matrix.sh release)
    assert transformers_ok(lo) is None and transformers_ok(hi) is None and transformers_ok("5.17.0") is None
    for bad in ("4.57.1", "5.99.0", "5.999.0.dev0"):
        line = transformers_ok(bad)
        assert line and "\n" not in line and bad in line and TESTED_RANGE in line


def test_pyproject_admits_the_tested_range():
    """pyproject.toml states the range the tests run; requirements.txt pins its upper end."""
    import tomllib
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    deps = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert f"transformers{TESTED_RANGE}" in deps
    pins = (root / "requirements.txt").read_text(encoding="utf-8")
    assert f"\ntransformers=={TRANSFORMERS_TESTED[1]}\n" in pins

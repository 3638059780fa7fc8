"""check_identical: asserts greedy identity in fp32/fp64 on the CPU, reports divergences in bf16 or on a GPU
without raising."""
import dataclasses
import math

import pytest
import torch

from csd_lib import generate, random_family
from csd_lib.measure.lossless import NEAR_TIE_NOTE, check_identical

PROMPT = [5, 9, 17, 23, 5, 9, 17, 30, 41, 12]
N = 12


def outputs(fam):
    return [generate(fam, PROMPT, m, max_new_tokens=N) for m in ("ar", "sd", "csd")]


def doctor(gen, pos):
    """A copy of ``gen`` whose token at ``pos`` is changed."""
    ids = list(gen.token_ids)
    ids[pos] = 3 + (ids[pos] - 3 + 1) % 45
    return dataclasses.replace(gen, token_ids=ids)


@pytest.mark.parametrize("arch,dtype", [("t5", torch.float64), ("llama", torch.float32)])
def test_exact_dtypes_assert(arch, dtype):
    fam = random_family(arch, vocab_size=48, dtype=dtype, eos=None)
    ar, sd, csd = outputs(fam)
    report = check_identical(fam, ar, sd, csd, prompt=PROMPT)
    assert report.identical and report.methods == ("sd", "csd")
    assert str(report).startswith("identical") and NEAR_TIE_NOTE not in str(report)
    with pytest.raises(AssertionError, match=r"csd differs from AR at token 4"):
        check_identical(fam, ar, sd, doctor(csd, 4))
    short = dataclasses.replace(sd, token_ids=sd.token_ids[:7])  # stopped early: differs where it ends
    with pytest.raises(AssertionError, match=r"sd differs from AR at token 7"):
        check_identical(fam, ar, short, csd)


def test_bf16_reports_without_raising():
    fam = random_family("t5", vocab_size=48, dtype=torch.bfloat16, eos=None)
    assert fam.target.dtype == torch.bfloat16
    ar, sd, csd = outputs(fam)
    report = check_identical(fam, ar, doctor(sd, 2), doctor(csd, 5), prompt=PROMPT)
    assert not report.identical and report.dtype == "bfloat16" and report.device == "cpu"
    assert str(report).startswith("2 of 2 methods (sd, csd) differ from AR in bfloat16 on cpu:")
    (d_sd, d_csd) = report.divergences
    assert (d_sd.method, d_sd.position, d_csd.method, d_csd.position) == ("sd", 2, "csd", 5)
    assert d_sd.ref_token == ar.token_ids[2] and d_sd.token != d_sd.ref_token
    # the gap is the target's own top-2 logit gap after AR's prefix, in bf16
    lm = fam.target
    with torch.no_grad():
        for d in (d_sd, d_csd):
            dec = torch.tensor([[lm.decoder_start] + ar.token_ids[:d.position]])
            logits = lm.model(input_ids=torch.tensor([PROMPT]), decoder_input_ids=dec).logits[0, -1].float()
            top = logits.topk(2).values
            assert d.gap >= 0 and d.gap == pytest.approx(float(top[0] - top[1]), abs=0.05)
    for text in (str(report), report._repr_markdown_(), report._repr_html_()):
        assert "sd" in text and "token 2" in text and "token 5" in text
    assert NEAR_TIE_NOTE in str(report) and report._repr_markdown_().endswith("\n\n" + NEAR_TIE_NOTE)
    assert "<li>" in report._repr_html_()
    assert lm._cache is None  # the recompute released the target's cache


def test_bf16_identical_and_gap_needs_prompt():
    fam = random_family("llama", vocab_size=48, n_drafters=1, dtype=torch.bfloat16, eos=None)
    ar = generate(fam, PROMPT, "ar", max_new_tokens=N)
    same = dataclasses.replace(ar, method="sd")
    assert check_identical(fam, ar, same).identical
    report = check_identical(fam, ar, doctor(same, 1))
    assert math.isnan(report.divergences[0].gap) and "pass prompt=" in str(report)


def test_bad_input():
    fam = random_family("t5", vocab_size=48, n_drafters=1, eos=None)
    ar = generate(fam, PROMPT, "ar", max_new_tokens=4)
    with pytest.raises(ValueError, match="at least one other"):
        check_identical(fam, ar)
    sampled = generate(fam, PROMPT, "sd", max_new_tokens=4, temperature=1.0, seed=0)
    with pytest.raises(ValueError, match="greedy output only"):
        check_identical(fam, ar, sampled)


def test_repeated_methods_are_labelled_by_what_differs():
    fam = random_family("t5", vocab_size=48, dtype=torch.float64, eos=None)
    ar = generate(fam, PROMPT, "ar", max_new_tokens=N)
    runs = [generate(fam, PROMPT, "csd", lenience=lam, max_new_tokens=N) for lam in (1.0, 1000.0)]
    assert check_identical(fam, ar, *runs).methods == ("csd (lenience=1.0)", "csd (lenience=1000.0)")
    twice = [generate(fam, PROMPT, "sd", max_new_tokens=N) for _ in range(2)]
    assert check_identical(fam, ar, *twice).methods == ("sd #1", "sd #2")  # nothing tells them apart


def test_exact_dtype():
    from csd_lib.measure.lossless import exact_dtype
    assert exact_dtype(random_family("t5", vocab_size=48, dtype=torch.float32))
    assert exact_dtype(random_family("t5", vocab_size=48, dtype=torch.float64))
    assert not exact_dtype(random_family("t5", vocab_size=48, dtype=torch.bfloat16))
    spread = random_family("t5", vocab_size=48, dtype=torch.float32)
    spread.target.model.hf_device_map = {"encoder": "cpu", "decoder": 0}  # accelerate put part of it on GPU 0
    assert not exact_dtype(spread)
    spread.target.model.hf_device_map = {"": "cpu"}
    assert exact_dtype(spread)


def test_fp32_on_a_gpu_counts_and_explains_instead_of_raising():
    """GPU kernels for 1 and for m + 1 tokens round differently even in fp32: a flip there is reported.
    The device is simulated: the target's device label says cuda (nothing runs on it here)."""
    fam = random_family("llama", vocab_size=48, dtype=torch.float32, eos=None)
    ar, sd, csd = outputs(fam)
    fam.target.device = torch.device("cuda")
    from csd_lib.measure.lossless import exact_dtype
    assert not exact_dtype(fam)
    report = check_identical(fam, ar, sd, doctor(csd, 4))  # no prompt: the gap would need the GPU
    assert not report.identical and (report.dtype, report.device) == ("float32", "cuda")
    assert str(report).startswith("1 of 2 methods (sd, csd) differ from AR in float32 on cuda:")
    (d,) = report.divergences
    assert (d.method, d.position, d.ref_token) == ("csd", 4, ar.token_ids[4]) and math.isnan(d.gap)
    assert NEAR_TIE_NOTE in str(report) and "fp32 and fp64 on the CPU are exact" in NEAR_TIE_NOTE
    assert str(check_identical(fam, ar, sd, csd)) == "identical: sd, csd return AR's tokens (float32 on cuda)"

"""The device and dtype policy (config.policy, placement.plan_memory), table-tested on fake devices,
plus the loading checks that need no GPU: fp32 'wo' layers, finite logits, the accelerate path."""
import json
from dataclasses import replace

import pytest
import torch

from csd_lib import config
from csd_lib.config import DeviceInfo, policy
from csd_lib.families.placement import plan_memory
from csd_lib.families.toy import toy_model
from csd_lib.engine.models import LM
from csd_lib.families.hub import check_loaded, count_params, load_lm
from csd_lib.families import placement

GiB = 2**30
CPU = DeviceInfo("cpu", "cpu")
MPS = DeviceInfo("mps", "mps")
P100 = DeviceInfo("cuda", "Tesla P100", (6, 0), 16 * GiB, 15 * GiB, 0)
T4 = DeviceInfo("cuda", "Tesla T4", (7, 5), int(14.75 * GiB), int(14.6 * GiB), 0)   # as torch sees a Colab T4
V100 = DeviceInfo("cuda", "Tesla V100", (7, 0), 32 * GiB, 31 * GiB, 0)
A100 = DeviceInfo("cuda", "A100-SXM4-40GB", (8, 0), 40 * GiB, 39 * GiB, 0)
H100 = DeviceInfo("cuda", "H100 80GB HBM3", (9, 0), 80 * GiB, 79 * GiB, 0)
H200 = DeviceInfo("cuda", "NVIDIA H200", (9, 0), 140 * GiB, 139 * GiB, 0)
F32, F16, B16 = torch.float32, torch.float16, torch.bfloat16

# (kind, arch, device found, dtype=, device=) -> (device type, dtype, fp32 modules)
TABLE = [
    ("tiny", "t5", CPU, None, None, "cpu", F32, ()),
    ("tiny", "t5", T4, None, None, "cpu", F32, ()),          # tiny families stay on the CPU
    ("tiny", "llama", H200, None, None, "cpu", F32, ()),
    ("tiny", "t5", MPS, None, None, "cpu", F32, ()),
    ("tiny", "t5", H200, None, "cuda", "cuda", F32, ()),     # ... unless the user passes a device
    ("tiny", "llama", T4, "bf16", "cuda", "cuda", B16, ()),
    ("tiny", "t5", CPU, "fp16", None, "cpu", F16, ("wo",)),
    ("real", "t5", CPU, None, None, "cpu", F32, ()),
    ("real", "llama", MPS, None, None, "mps", F32, ()),
    ("real", "t5", P100, None, None, "cuda", F32, ()),       # no fp16 tensor cores, no bf16
    ("real", "t5", T4, None, None, "cuda", F16, ("wo",)),    # no native bf16: fp16, T5's wo in fp32
    ("real", "llama", T4, None, None, "cuda", F16, ()),
    ("real", "t5", V100, None, None, "cuda", F16, ("wo",)),
    ("real", "llama", V100, None, None, "cuda", F16, ()),
    ("real", "t5", A100, None, None, "cuda", B16, ()),
    ("real", "llama", A100, None, None, "cuda", B16, ()),
    ("real", "t5", H100, None, None, "cuda", B16, ()),
    ("real", "t5", H200, None, None, "cuda", B16, ()),
    ("real", "t5", T4, "fp32", None, "cuda", F32, ()),       # an explicit dtype wins
    ("real", "t5", T4, torch.bfloat16, None, "cuda", B16, ()),
    ("real", "t5", A100, "float16", None, "cuda", F16, ("wo",)),
    ("real", "t5", H200, None, "cpu", "cpu", F32, ()),       # an explicit device wins
    ("real", "llama", A100, "bf16", "cpu", "cpu", B16, ()),
]


@pytest.mark.parametrize("kind,arch,info,dtype,device,want_dev,want_dt,keep", TABLE)
def test_policy_table(kind, arch, info, dtype, device, want_dev, want_dt, keep):
    pol = policy(kind, arch, info, dtype=dtype, device=device)
    assert (pol.device.type, pol.dtype, pol.keep_fp32) == (want_dev, want_dt, keep)


def test_policy_says_why():
    assert any("launch-bound" in n for n in policy("tiny", "t5", T4).notes)
    assert any("no native bf16" in n for n in policy("real", "t5", T4).notes)
    assert any("emulated" in n for n in policy("real", "t5", T4, dtype="bf16").notes)
    assert policy("real", "t5", A100).notes == () and policy("tiny", "t5", CPU).notes == ()


def test_policy_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown dtype"):
        policy("real", "t5", CPU, dtype="fp8")
    with pytest.raises(ValueError, match="'tiny' or 'real'"):
        policy("huge", "t5", CPU)


def test_describe_device_on_this_machine():
    info = config.describe_device("cpu")
    total, free = config.host_memory()
    assert info.type == "cpu" and info.total_mem == total and 0 < info.free_mem <= info.total_mem  # host RAM
    assert info.host_free == info.free_mem
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            config.describe_device("cuda")


@pytest.mark.parametrize("bad", ["bogus", "meta", "cuda:x", 3.5])
def test_pick_device_names_the_valid_forms(bad):
    with pytest.raises(ValueError, match=r"unknown device .*'cpu', 'cuda', 'cuda:N'.*'mps'"):
        config.pick_device(bad)
    assert config.pick_device("cpu").type == "cpu" and config.pick_device("cuda:1").index == 1


# -- memory sizing ------------------------------------------------------------------------

def _bytes(params, dtype):
    return [placement.param_bytes(int(p), 0, dtype) for p in params]


XXL, LARGE, BASE, SMALL, V7B, V68M = 11.3e9, 0.78e9, 0.25e9, 0.077e9, 6.74e9, 0.068e9
IDS = {XXL: "google/flan-t5-xxl", LARGE: "google/flan-t5-large", BASE: "google/flan-t5-base",
       SMALL: "google/flan-t5-small", V7B: "lmsys/vicuna-7b-v1.3", V68M: "double7/vicuna-68m"}


def _cache(params, dtype):
    """KV cache bytes of the models at the default length, from their stored published configs."""
    from csd_lib.families.archs import published_config
    return sum(placement.kv_cache_bytes(published_config(IDS[p]), dtype) for p in params)


def test_kv_cache_bytes_from_the_config():
    from csd_lib.families.archs import published_config
    vicuna = published_config("lmsys/vicuna-7b-v1.3")
    assert placement.kv_cache_bytes(vicuna, F16) == 1 * GiB                     # 32 x 2 x 32 x 128 x 2048 x 2
    assert placement.kv_cache_bytes(published_config("google/flan-t5-xxl"), F32, 1024) == 24 * 2 * 64 * 64 * 1024 * 4
    gqa = dict(num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2, hidden_size=256)
    assert placement.kv_cache_bytes(gqa, B16, 10) == 2 * 2 * 2 * 32 * 10 * 2                    # grouped KV heads


BUSY_V100 = DeviceInfo("cuda", "V100-16GB", (7, 0), 16 * GiB, 12 * GiB, 0, host_free=50 * GiB)
CPU24 = DeviceInfo("cpu", "cpu", None, 24 * GiB, 22 * GiB, host_free=22 * GiB)
MAC16 = DeviceInfo("mps", "mps", None, 16 * GiB, 12 * GiB, host_free=12 * GiB)


@pytest.mark.parametrize("info,params,dtype,fits,device_map", [
    (T4, [XXL, BASE, SMALL], F16, False, None),          # FLAN-T5-XXL cannot fit a 16 GB T4
    (T4, [LARGE, BASE, SMALL], F16, True, None),         # flan-t5-colab does
    (T4, [V7B, V68M], F16, True, None),                  # 12.7 GiB of weights + 1 GiB of cache: fits, whole
    (V100, [XXL, BASE, SMALL], F16, True, None),         # 32 GB: all of it fits in fp16
    (BUSY_V100, [V7B, V68M], F16, True, "auto"),         # 12 GiB free: the target is spread
    (A100, [XXL, BASE, SMALL], B16, True, None),
    (H200, [XXL, BASE, SMALL], F32, True, None),
    (DeviceInfo("cuda", "busy A100", (8, 0), 40 * GiB, 8 * GiB, 0), [XXL, BASE, SMALL], B16, True, "auto"),
    (DeviceInfo("cuda", "busy A100, small host", (8, 0), 40 * GiB, 8 * GiB, 0, host_free=4 * GiB),
     [XXL, BASE, SMALL], B16, False, None),              # the offloaded 13 GiB do not fit host RAM either
    (DeviceInfo("cuda", "full A100", (8, 0), 40 * GiB, 1 * GiB, 0), [XXL, BASE, SMALL], B16, False, None),
    (CPU24, [XXL, BASE, SMALL], F32, False, None),       # 42 GiB of fp32 weights: refused, never offloaded
    (CPU24, [XXL, BASE, SMALL], B16, False, None),       # 21.7 GiB in bf16, + 0.8 GiB of cache: still too much
    (DeviceInfo("cpu", "cpu", None, 32 * GiB, 30 * GiB), [XXL, BASE, SMALL], B16, True, None),
    (CPU24, [LARGE, BASE, SMALL], F32, True, None),
    (MAC16, [V7B, V68M], F32, False, None),              # unified memory is host RAM
    (MAC16, [V7B, V68M], F16, False, None),
    (DeviceInfo("cuda", "gpu"), [XXL, BASE, SMALL], F32, True, None),   # GPU memory unknown: not planned
])
def test_plan_memory(info, params, dtype, fits, device_map):
    cache = _cache(params, dtype)
    plan = plan_memory(_bytes(params, dtype), info, cache)
    assert (plan.fits, plan.target_device_map) == (fits, device_map)
    assert plan.need == sum(_bytes(params, dtype)) + cache + placement.HEADROOM   # every model counts, at its dtype
    if device_map:
        budget = plan.max_memory[info.index]
        assert 0 < budget < _bytes(params, dtype)[0]
        assert budget + sum(_bytes(params[1:], dtype)) + cache + placement.HEADROOM <= info.free_mem
        assert plan.max_memory["cpu"] <= (info.host_free or 2 * _bytes(params, dtype)[0])
        assert "accelerate" in plan.message
    if not fits:
        assert "more than" in plan.message


def test_host_ram_smaller_than_the_largest_model_is_said_before_loading():
    """On a GPU the weights go straight there, so host RAM below one model's size is a line saying what to do."""
    colab = replace(T4, host_free=int(11.5 * GiB))              # a Colab T4's host RAM, Vicuna-7B's 12.6 GiB
    note = plan_memory(_bytes([V7B, V68M], F16), colab, _cache([V7B, V68M], F16)).host_note
    assert "11.5 GiB available, less than the largest model's 12.6 GiB" in note and "restart the runtime" in note
    assert plan_memory(_bytes([LARGE, BASE, SMALL], F16), colab).host_note == ""          # FLAN-T5-large: 1.5 GiB
    assert plan_memory(_bytes([V7B, V68M], F16), replace(T4, host_free=None)).host_note == ""   # unknown: no line
    busy = replace(BUSY_V100, host_free=12 * GiB)                # the offloaded 2.2 GiB fit, the 12.6 GiB target does not
    plan = plan_memory(_bytes([V7B, V68M], F16), busy, _cache([V7B, V68M], F16))
    assert plan.target_device_map == "auto" and "less than the largest model's" in plan.host_note


def test_cpu_memory_not_given_is_this_machines(monkeypatch):
    """45 GiB on a CPU described without memory is planned against this machine's RAM."""
    monkeypatch.setattr(config, "host_memory", lambda: (24 * GiB, 22 * GiB))
    assert not plan_memory([45 * GiB], CPU).fits and plan_memory([45 * GiB], MPS).free == 22 * GiB
    assert plan_memory([20 * GiB], CPU).fits


def test_a_family_that_fits_is_never_offloaded():
    """Any family whose weights, cache and headroom fit the free memory goes whole onto the GPU."""
    for free in range(2, 80):
        info = DeviceInfo("cuda", "gpu", (8, 0), 80 * GiB, free * GiB, 0)
        for params in ([XXL, BASE, SMALL], [LARGE, BASE, SMALL], [V7B, V68M]):
            sizes, cache = _bytes(params, B16), _cache(params, B16)
            plan = plan_memory(sizes, info, cache)
            if sum(sizes) + cache + placement.HEADROOM <= info.free_mem:
                assert plan.fits and plan.target_device_map is None


def test_count_params_from_config_only(tmp_path):
    m = toy_model("t5", 64, "target", 0, torch.float32)
    m.save_pretrained(tmp_path)
    n, n_wo = count_params(str(tmp_path), ("wo",))
    assert n == sum(p.numel() for p in m.parameters())
    assert n_wo == sum(p.numel() for name, p in m.named_parameters() if ".wo." in name) > 0
    assert placement.param_bytes(n, n_wo, F16) == 2 * (n - n_wo) + 4 * n_wo


def test_count_params_keeps_published_untied_lm_head(tmp_path):
    from csd_lib.families import shadow
    cfg = shadow.published_config("google/flan-t5-small")
    assert cfg["tie_word_embeddings"] is False
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    n, _ = count_params(str(tmp_path))
    tied, _ = count_params(str(_write(tmp_path / "tied", dict(cfg, tie_word_embeddings=True))))
    assert n == shadow.config_params(cfg) == tied + cfg["vocab_size"] * cfg["d_model"]  # its own lm_head


def _write(d, cfg):
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


# -- loading checks on the CPU -----------------------------------------------------------

@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("t5")
    toy_model("t5", 64, "target", 0, torch.float32).save_pretrained(d)
    return str(d)


@pytest.mark.parametrize("dtype", [F32, F16, B16])
def test_small_t5_gives_finite_logits_in_each_policy_dtype(t5_dir, dtype):
    pol = policy("real", "t5", CPU, dtype=dtype)
    lm = load_lm("target", t5_dir, policy=pol)
    assert lm.dtype == dtype and check_loaded(lm.model, pol) is None
    wo = [p.dtype for n, p in lm.model.named_parameters() if ".wo." in n]
    assert wo and all(d == (F32 if dtype == F16 else dtype) for d in wo)   # fp16 keeps T5's wo in fp32
    seq = lm.start([5, 6, 7, 8])
    assert torch.isfinite(lm.logits(seq + [9, 10], 2)).all()


def test_non_finite_logits_reload_in_fp32(tmp_path, capsys):
    m = toy_model("t5", 64, "target", 0, torch.float32)
    with torch.no_grad():
        m.lm_head.weight.mul_(1e6)          # overflows fp16 (max 65504), fine in fp32
    m.save_pretrained(tmp_path)
    pol = policy("real", "t5", CPU, dtype="fp16")
    assert check_loaded(LM("x", toy_model("t5", 64, "target", 0, torch.float32)).model, pol) is None
    lm = load_lm("target", str(tmp_path), policy=pol)
    out, err = capsys.readouterr()
    assert lm.dtype == F32 and "reloading it in fp32" in err and out == ""      # a note on stderr, not stdout


def test_wo_not_kept_in_fp32_reloads_in_fp32(t5_dir, monkeypatch, capsys):
    from transformers import T5PreTrainedModel
    monkeypatch.setattr(T5PreTrainedModel, "_keep_in_fp32_modules", [])
    pol = policy("real", "t5", CPU, dtype="fp16")
    lm = load_lm("target", t5_dir, policy=pol)
    assert "wo layers were loaded in float16" in capsys.readouterr().err and lm.dtype == F32


@pytest.mark.parametrize("arch", ["t5", "llama"])
def test_accelerate_path_with_a_tiny_memory_budget(arch, tmp_path):
    pytest.importorskip("accelerate")
    m = toy_model(arch, 64, "target", 0, torch.float32)
    m.save_pretrained(tmp_path / "m")
    budget = sum(p.numel() for p in m.parameters()) * 4 // 2      # half the weights fit "in memory"
    pol = policy("real", arch, CPU)
    lm = load_lm("target", str(tmp_path / "m"), policy=pol, device_map="auto", max_memory={"cpu": budget},
                 offload_folder=str(tmp_path / "offload"))
    assert "disk" in set(lm.model.hf_device_map.values())          # accelerate really split it
    assert lm.device.type == "cpu"
    ref = LM("ref", m)
    a, b = lm.start([5, 6, 7]), ref.start([5, 6, 7])
    assert torch.allclose(lm.logits(a + [8, 9], 2), ref.logits(b + [8, 9], 2), atol=1e-5)


def test_family_too_large_for_the_gpu_names_a_preset_that_fits(saved_checkpoints, monkeypatch):
    """FLAN-T5-XXL-sized weights on a T4: stop before loading and say to use flan-t5-colab."""
    from csd_lib.families import family as families
    from csd_lib.families.family import load_family
    paths = saved_checkpoints("t5", ["target", "base", "small"])
    published = {32: XXL, 16: BASE, 8: SMALL}                  # by the tiny models' widths
    monkeypatch.setattr(config, "describe_device", lambda device=None: T4)
    real_count = placement.count_params
    monkeypatch.setattr(placement, "count_params", lambda cfg, keep=(): (
        int(published[cfg["d_model"]]), 0) if cfg["vocab_size"] == 48 else real_count(cfg, keep))
    loaded = []
    monkeypatch.setattr(families, "load_lm", lambda *a, **k: loaded.append(a))
    with pytest.raises(ValueError, match="cannot fit Tesla T4.*family='flan-t5-colab'"):
        load_family(target=paths[0], drafters=paths[1:])
    assert loaded == []                                        # nothing was loaded


@pytest.mark.parametrize("gpu,spread", [(BUSY_V100, True), (T4, False)])
def test_family_spread_by_accelerate_when_free_memory_is_short(saved_checkpoints, monkeypatch, gpu, spread):
    """7B-sized target on a V100 with 12 GiB free: the target gets device_map='auto', drafters do not.
    On a T4 (14.6 GiB free) the same family fits whole: nothing is offloaded."""
    from csd_lib.families import family as families
    from csd_lib.families.family import load_family
    paths = saved_checkpoints("llama", ["target", "small"])
    monkeypatch.setattr(config, "describe_device", lambda device=None: gpu)
    # sized as Vicuna-7B and Vicuna-68M (by the tiny models' widths), with the KV caches of their published configs
    monkeypatch.setattr(placement, "count_params",
                        lambda cfg, keep=(): (int(V7B if cfg["hidden_size"] == 32 else V68M), 0))
    real_plan, cache = placement.plan_memory, _cache([V7B, V68M], F16)
    monkeypatch.setattr(placement, "plan_memory", lambda sizes, info, c=0: real_plan(sizes, info, cache))
    calls = {}

    def fake_load(name, path, policy=None, **kw):
        calls[name] = (policy, kw)
        return LM(name, toy_model("llama", 48, name, 0, torch.float32))
    monkeypatch.setattr(families, "load_lm", fake_load)
    fam = load_family(target=paths[0], drafters=paths[1:])
    pol, kw = calls["target"]
    assert (pol.device.type, pol.dtype) == ("cuda", F16) and fam.policy is pol
    if spread:
        assert kw["device_map"] == "auto" and 0 < kw["max_memory"][0] < V7B * 2
    else:
        assert "device_map" not in kw                          # fits: never offloaded
    assert "device_map" not in calls["small"][1]               # the drafter goes whole onto the GPU


@pytest.fixture(scope="module")
def flan_small_width_dir(tmp_path_factory):
    """A random T5 at FLAN-T5-small's published width (gated-gelu, vocab 32128, untied head), one layer."""
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=1024, num_heads=6, num_layers=1,
                   num_decoder_layers=1, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("flan-width")
    T5ForConditionalGeneration(cfg).save_pretrained(d)
    return str(d)


@pytest.mark.parametrize("dtype", [F32, F16, B16])
def test_real_width_t5_in_each_policy_dtype(flan_small_width_dir, dtype):
    pol = policy("real", "t5", CPU, dtype=dtype)
    lm = load_lm("target", flan_small_width_dir, policy=pol)
    wo = {n: p.dtype for n, p in lm.model.named_parameters() if n.endswith(".wo.weight")}
    assert wo and set(wo.values()) == {F32 if dtype == F16 else dtype}   # gated-gelu's wo kept in fp32 in fp16
    assert lm.dtype == dtype and lm.vocab_size == 32128
    seq = lm.start([100, 200, 300, 1])
    assert torch.isfinite(lm.logits(seq + [400, 500], 2)).all()

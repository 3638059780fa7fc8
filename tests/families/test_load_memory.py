"""Loading a checkpoint holds no second copy in host memory: each weight is read straight into place.

The peak resident memory of a load (``VmHWM`` in ``/proc/self/status``, reset first through
``/proc/self/clear_refs`` where the kernel allows it) is measured in a fresh subprocess, after the
model's code is imported, on full-depth shadow checkpoints (random weights stored in fp16).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from csd_lib.families import shadow
from csd_lib.families.hub import load_lm, straight_to
from csd_lib import config

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 1.3  # peak host memory of a load, in units of the loaded model's bytes

# The subprocess: import the model's code on a 1-unit config (so imports are not counted), reset the
# peak, load with the policy of a CPU in ``dtype``, print the peak's growth and the model's bytes.
MEASURE = r"""
import json, sys
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM
from csd_lib import config
from csd_lib.families.hub import load_lm, model_arch

def status():
    return {l.split(":")[0]: int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("Vm")}

path, dtype = sys.argv[1:3]
cfg = AutoConfig.from_pretrained(path)
cls = AutoModelForSeq2SeqLM if cfg.is_encoder_decoder else AutoModelForCausalLM
tiny = dict(num_layers=1, num_decoder_layers=1, num_hidden_layers=1, vocab_size=32, d_model=8, hidden_size=8,
            d_ff=8, intermediate_size=8, d_kv=4, num_heads=1, num_attention_heads=1, num_key_value_heads=1)
cls.from_config(AutoConfig.from_pretrained(path, **tiny))
try:
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM := VmRSS
except OSError:
    pass  # then the growth below is an upper bound
before = status()["VmRSS"]
pol = config.policy("real", model_arch(cfg), config.DeviceInfo("cpu", "cpu"), dtype, "cpu")
lm = load_lm("target", path, policy=pol)
size = sum(p.numel() * p.element_size() for p in lm.model.parameters())
print(json.dumps(dict(growth=status()["VmHWM"] - before, size=size, dtype=str(lm.dtype))))
"""


@pytest.fixture(scope="module")
def full_shadows(tmp_path_factory):
    """Full-depth shadows of FLAN-T5-small (77 M parameters) and Vicuna-68m (68 M): 130-150 MB in fp16 each."""
    hub = tmp_path_factory.mktemp("hub")
    return {rid: shadow.build_shadow(hub, rid)["path"] for rid in ("google/flan-t5-small", "double7/vicuna-68m")}


def measure(path: str, dtype: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CSD_", "HF_"))}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, "-c", MEASURE, path, dtype], capture_output=True, text=True, cwd=ROOT,
                       timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("rid, dtype", [
    ("google/flan-t5-small", "fp16"),    # the T4 policy: T5's wo layers read from fp16 into fp32
    ("double7/vicuna-68m", "fp16"),
    ("google/flan-t5-small", "fp32"),    # the CPU policy: every weight cast from the stored fp16
])
def test_peak_host_memory_of_a_load_stays_below_the_models_size_times_1_3(full_shadows, rid, dtype):
    """In the stored dtype (as a GPU load in fp16 reads it) the peak stays below 1.3 x the model's bytes.

    A load that casts (fp16 files into fp32 on this CPU) also maps the checkpoint while it reads:
    those pages are the file's, shared with the page cache, and are counted on top; a second copy of
    the model would add another 1 x the model.
    """
    files = sum(f.stat().st_size for f in Path(full_shadows[rid]).glob("*.safetensors"))
    m = measure(full_shadows[rid], dtype)
    assert m["size"] > 100 * 2**20 and m["dtype"] == {"fp16": "torch.float16", "fp32": "torch.float32"}[dtype]
    limit = LIMIT * m["size"] + (files if dtype == "fp32" else 0)
    assert m["growth"] < limit, (f"peak grew {m['growth'] / 2**20:.0f} MiB loading {m['size'] / 2**20:.0f} MiB "
                                 f"of weights; limit {limit / 2**20:.0f} MiB")


# -- where the weights are read to ------------------------------------------------------------

class _Spy:
    """Stands in for an Auto class's ``from_pretrained``: records its arguments, returns a small model."""

    def __init__(self, model):
        self.model, self.kwargs = model, None

    def from_pretrained(self, path, **kwargs):
        self.kwargs = kwargs
        return self.model


@pytest.fixture
def spy(monkeypatch, tmp_path):
    from csd_lib.families import hub
    from csd_lib.families.toy import toy_model
    model = toy_model("llama", 64, "target", 0, torch.float32)
    model.save_pretrained(tmp_path)  # its config is read first
    s = _Spy(model)
    monkeypatch.setattr(hub, "_auto_class", lambda cfg: s)
    s.path = str(tmp_path)
    return s


def test_a_gpu_load_reads_each_weight_straight_onto_the_gpu(spy):
    pytest.importorskip("accelerate")
    pol = config.Policy(torch.device("cuda", 0), torch.float32)
    lm = load_lm("target", spy.path, policy=pol)
    assert spy.kwargs["device_map"] == {"": torch.device("cuda", 0)} and lm.model is spy.model
    assert straight_to(torch.device("cpu")) == {}  # on the CPU weights are read where they stay


def test_an_offload_plans_device_map_wins(spy):
    pol = config.Policy(torch.device("cuda", 0), torch.float32)
    load_lm("target", spy.path, policy=pol, device_map="auto", max_memory={0: 1, "cpu": 2})
    assert spy.kwargs["device_map"] == "auto" and spy.kwargs["max_memory"] == {0: 1, "cpu": 2}


def test_without_accelerate_the_model_is_moved_and_a_line_says_so(spy, monkeypatch, capsys):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "accelerate" else real(name, *a))
    pol = config.Policy(torch.device("meta"), torch.float32)  # any device but the CPU; meta needs no GPU
    lm = load_lm("target", spy.path, policy=pol)
    assert "device_map" not in spy.kwargs and lm.device.type == "meta"  # read into host RAM, then moved
    err = capsys.readouterr().err
    assert "pip install accelerate" in err and "host RAM" in err and len(err.strip().splitlines()) == 1

"""csd_lib.measure.machine: the device label and environment stored with every measured number."""
import json
import os
import platform

import torch
import transformers

from csd_lib.measure.machine import device_name, environment


def test_environment_names_the_software_and_the_machine():
    env = environment("cpu")
    assert set(env) == {"device", "torch", "transformers", "threads", "cpu_count", "cpu_model", "vector_extensions", "python",
                        "machine"}
    assert env["device"] == "cpu" and env["torch"] == torch.__version__
    assert env["transformers"] == transformers.__version__ and env["python"] == platform.python_version()
    assert env["threads"] == torch.get_num_threads() and env["cpu_count"] == os.cpu_count()
    assert isinstance(env["cpu_model"], str) and env["cpu_model"]
    assert json.loads(json.dumps(env)) == env  # stored as JSON with cost models and records


def test_threads_are_read_when_called():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert environment("cpu")["threads"] == 2
    finally:
        torch.set_num_threads(before)


def test_device_labels_are_file_name_safe(monkeypatch):
    assert device_name("cpu") == "cpu" and device_name(torch.device("cpu")) == "cpu"
    assert device_name("mps") == "mps"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda dev=None: "Tesla T4")
    assert device_name("cuda:0") == "cuda-tesla-t4"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda dev=None: "NVIDIA H200 NVL")
    assert device_name(torch.device("cuda", 1)) == "cuda-nvidia-h200-nvl"
    assert environment("cuda:0")["device"] == "cuda-nvidia-h200-nvl"

"""csd_lib.config: the one reader of the environment, the cache and data folders, device and dtype names."""
import os
import runpy
from pathlib import Path

import pytest
import torch

from csd_lib import config
from csd_lib.config import cache_dir, data_dir, host_memory, parse_dtype, pick_device


def _read_environment(monkeypatch, **env) -> dict:
    """Run config's module code afresh (not the imported module) under ``env`` and return what it read."""
    for k in list(os.environ):
        if k.startswith("CSD_") or k in ("CI", "XDG_CACHE_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    c = runpy.run_path(config.__file__)
    return dict(family=c["FAMILY"], fast=c["FAST"], seed=c["SEED"], data=c["DATA_DIR"], cache=c["CACHE_DIR"],
                sweep=c["FULL_SWEEP"], offline=c["HF_OFFLINE"], renderer=c["PLOTLY_RENDERER"], ci=c["IN_CI"])


def test_environment_variables_as_documented(monkeypatch):
    on = _read_environment(monkeypatch, CSD_FAMILY="tiny-llama", CSD_FAST="1", CSD_SEED="3", CSD_DATA_DIR="/d",
                           CSD_CACHE_DIR="/c", CSD_FULL_SWEEP="yes", TRANSFORMERS_OFFLINE="1",
                           CSD_PLOTLY_RENDERER="notebook", CI="true")
    assert on == dict(family="tiny-llama", fast=True, seed=3, data="/d", cache="/c", sweep=True, offline=True,
                      renderer="notebook", ci=True)


def test_unset_empty_zero_and_false_mean_the_defaults(monkeypatch):
    assert _read_environment(monkeypatch) == dict(family="tiny-t5", fast=False, seed=0, data=None, cache=None,
                                                  sweep=False, offline=False, renderer=None, ci=False)
    off = _read_environment(monkeypatch, CSD_FAST="false", CSD_SEED="", CSD_DATA_DIR="", CSD_FULL_SWEEP="0",
                            HF_HUB_OFFLINE="0", CI="0")
    assert off == dict(family="tiny-t5", fast=False, seed=0, data=None, cache=None, sweep=False, offline=False,
                       renderer=None, ci=False)
    assert _read_environment(monkeypatch, HF_HUB_OFFLINE="1")["offline"]


def test_cache_dir_order(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setattr(config, "XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.setattr(config, "CACHE_DIR", None)
    assert cache_dir() == tmp_path / "xdg" / "csd-workbook"
    monkeypatch.setattr(config, "XDG_CACHE_HOME", None)
    assert cache_dir() == Path.home() / ".cache" / "csd-workbook"


def test_data_dir_only_when_the_folder_exists(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path
    monkeypatch.setattr(config, "DATA_DIR", str(tmp_path / "missing"))
    assert data_dir() is None
    monkeypatch.setattr(config, "DATA_DIR", None)
    assert data_dir() is None


def test_data_root_holds_the_shipped_families_and_tasks():
    assert config.MODELS_DIR.parent == config.DATA_ROOT and config.TASKS_DIR.parent == config.DATA_ROOT
    assert (config.MODELS_DIR / "tiny-t5.json").is_file() and (config.MODELS_DIR / "tiny-t5-target").is_dir()
    assert any(config.TASKS_DIR.glob("*.jsonl"))


@pytest.mark.parametrize("name,dtype", [("fp32", torch.float32), ("float32", torch.float32), ("bf16", torch.bfloat16),
                                        ("bfloat16", torch.bfloat16), ("fp16", torch.float16),
                                        ("float64", torch.float64)])
def test_parse_dtype_names(name, dtype):
    assert parse_dtype(name) is dtype


def test_parse_dtype_passes_none_and_dtypes_and_names_the_choices():
    assert parse_dtype(None) is None and parse_dtype(torch.float16) is torch.float16
    with pytest.raises(ValueError, match=r"unknown dtype 'half'.*bf16.*fp32"):
        parse_dtype("half")


def test_pick_device_explicit_and_bad():
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device(torch.device("cuda", 1)) == torch.device("cuda", 1)  # a name, not a check of the hardware
    for bad in ("gpu", "xla", "cuda:x"):
        with pytest.raises(ValueError, match=f"unknown device '{bad}'.*'cpu', 'cuda', 'cuda:N'"):
            pick_device(bad)
    assert pick_device(None).type in config.DEVICE_TYPES


def test_host_memory_is_plausible():
    total, free = host_memory()
    assert total is not None and total > 2**27  # more than 128 MiB
    assert free is None or 0 < free <= total


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(config, "NO_COLOR", False)
    assert config.color_for(Terminal()) and not config.color_for(io.StringIO()) and not config.color_for(object())
    monkeypatch.setattr(config, "NO_COLOR", True)
    assert not config.color_for(Terminal())
    monkeypatch.setenv("NO_COLOR", "1")
    assert runpy.run_path(config.__file__)["NO_COLOR"] is True

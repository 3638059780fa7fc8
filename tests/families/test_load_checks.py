"""Checks before anything loads (memory from stored configs, method against the preset, folders),
an unreachable hub found in seconds, and quiet loads (no transformers noise, no ANSI into a pipe)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import huggingface_hub
import pytest

from csd_lib import config
from csd_lib.families import family as families
from csd_lib.config import DeviceInfo
from csd_lib.families.family import load_family

REPO = Path(__file__).resolve().parents[2]
GiB = 2**30
CPU24 = DeviceInfo("cpu", "cpu", None, 24 * GiB, 22 * GiB, host_free=22 * GiB)
CPU32 = DeviceInfo("cpu", "cpu", None, 32 * GiB, 30 * GiB, host_free=30 * GiB)


@pytest.fixture
def no_loading(monkeypatch, tmp_path):
    """An empty hub cache, offline; any download, cache lookup or weight load fails the test."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setattr(config, "HF_OFFLINE", True)
    for fn in ("missing_ids", "load_lm", "_load_tiny"):
        monkeypatch.setattr(families, fn, lambda *a, **k: pytest.fail("got past the checks"))


@pytest.mark.parametrize("info,alt", [(CPU24, "family='flan-t5-colab'"), (CPU32, "dtype='bfloat16'")])
def test_family_too_large_for_host_ram_is_refused_before_any_download(no_loading, monkeypatch, info, alt):
    """flan-t5 in fp32 (42 GiB) on a CPU with 22 or 30 GiB free: refused from the stored configs, naming what fits."""
    monkeypatch.setattr(config, "describe_device", lambda device=None: info)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=rf"cannot fit this machine's RAM: .*weights 42\.7 GiB.*{alt}") as e:
        load_family("flan-t5", device="cpu")
    assert "not in the local Hugging Face cache" not in str(e.value) and time.perf_counter() - t0 < 30


def test_mps_uses_unified_memory(no_loading, monkeypatch):
    monkeypatch.setattr(config, "describe_device", lambda device=None: DeviceInfo("mps", "mps", None, 16 * GiB,
                                                                                  12 * GiB, host_free=12 * GiB))
    with pytest.raises(ValueError, match="cannot fit this Mac's memory.*family='flan-t5-colab'"):
        load_family("vicuna", device="mps")


@pytest.mark.parametrize("name,method,ok", [("vicuna", "staged", False), ("vicuna", "sd", True),
                                            ("tiny-llama", "staged", False), ("tiny-t5", "staged", True),
                                            ("flan-t5", "staged", True), ("vicuna", "csd", True)])
def test_check_method_from_the_preset(name, method, ok):
    if ok:
        families.check_method(name, method)
    else:
        with pytest.raises(ValueError, match="needs two neural drafters; family '.*' has 1; use 'sd' or 'csd'"):
            families.check_method(name, method)


def test_check_method_for_your_own_models(tmp_path):
    t = tmp_path / "t"
    t.mkdir()
    with pytest.raises(ValueError, match="needs a neural drafter; family 'custom-t' has 0; use 'mag' or 'csd'"):
        families.check_method(None, "sd", target=str(t))
    with pytest.raises(ValueError, match="unknown method"):
        families.check_method("vicuna", "beam")


def test_cli_refuses_a_method_before_loading(no_loading, capsys):
    from csd_lib.cli.main import main
    t0 = time.perf_counter()
    assert main(["generate", "--family", "vicuna", "--method", "staged", "--prompt", "hi"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: method 'staged' needs two neural drafters") and err.count("\n") == 1
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("bad", ["/path/that/does/not/exist", "./nope", "../nope", "~/nope-csd", "a/b/c"])
def test_target_that_is_no_folder(no_loading, capsys, bad):
    with pytest.raises(ValueError, match="no such folder"):
        load_family(target=bad)
    with pytest.raises(ValueError, match="no such folder"):
        families.check_method(None, "ar", target="google/flan-t5-small", drafters=[bad])
    from csd_lib.cli.main import main
    with pytest.raises(SystemExit) as e:  # refused by the argument's own check, before anything loads
        main(["generate", "--target", bad, "--prompt", "hi"])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "no such folder" in err and "repo" not in err.lower()


def test_pad_may_differ_between_tokenizers(saved_checkpoints):
    """Pad plays no part in single-prompt decoding: a drafter tokenizer without one is accepted."""
    def drop_pad(size, tok):
        if size == "small":
            tok.pad_token = None
    paths = saved_checkpoints("llama", ["target", "small"], drop_pad)
    from transformers import AutoTokenizer
    assert AutoTokenizer.from_pretrained(paths[1]).pad_token_id is None
    fam = load_family(target=paths[0], drafters=paths[1:])
    assert len(fam.drafters) == 1


# -- the hub unreachable, and quiet loads, on a shadow family ----------------------------

@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from csd_lib.families.shadow import build_shadows
    out = tmp_path_factory.mktemp("shadow-hub")
    build_shadows(out, ["flan-t5-colab"], max_layers=1, verbose=False)
    return out


def _env(hub, tmp_path, **extra) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("CSD_", "HF_", "TRANSFORMERS_"))}
    e.update(HF_HUB_CACHE=str(hub), TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1",
             CSD_CACHE_DIR=str(tmp_path / "cache"), **extra)
    return e


LOAD = """
import sys, time
from csd_lib import load_family
t0 = time.perf_counter()
try:
    load_family(sys.argv[1], device="cpu")
    print("loaded", time.perf_counter() - t0)
except ValueError as e:
    print("refused", time.perf_counter() - t0, e)
"""


@pytest.mark.slow
@pytest.mark.parametrize("case", ["full cache", "empty cache"])
def test_unreachable_hub_is_found_in_seconds(hub, tmp_path, case):
    """No HF_HUB_OFFLINE and a hub that refuses connections (loopback only): a full cache loads offline,
    an empty one is refused in one line naming HF_HUB_OFFLINE and HF_HUB_CACHE; both well within 30 s."""
    cache = hub if case == "full cache" else tmp_path / "empty-hub"
    env = _env(cache, tmp_path, HF_ENDPOINT="http://127.0.0.1:9")
    p = subprocess.run([sys.executable, "-c", LOAD, "flan-t5-colab"], env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    result = [ln for ln in p.stdout.splitlines() if ln.startswith(("loaded", "refused"))][-1]
    word, seconds, *msg = result.split(maxsplit=2)
    assert float(seconds) < 30, p.stderr[-2000:]                 # before: 5 retries per file, minutes
    if case == "full cache":
        assert word == "loaded" and "cannot be reached" in p.stderr
    else:
        assert word == "refused" and "cannot be reached" in msg[0]
        assert "HF_HUB_OFFLINE=1" in msg[0] and "HF_HUB_CACHE" in msg[0]


@pytest.mark.slow
def test_cli_load_is_quiet_through_a_pipe(hub, tmp_path):
    """No tied-weights warning, no '> 512 ... indexing errors', no ANSI codes, no notes on stdout."""
    prompt = " ".join(["Natalia sold clips to 48 of her friends."] * 80)   # > 512 tokens
    env = _env(hub, tmp_path, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    p = subprocess.run([sys.executable, "-m", "csd_lib", "generate", "--family", "flan-t5-colab", "--device", "cpu",
                        "--dtype", "float16", "--method", "ar", "--max-new-tokens", "2", "--prompt", prompt],
                       env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "\x1b[" not in p.stdout + p.stderr
    assert "tied weights" not in p.stderr and "indexing errors" not in p.stderr and "[transformers]" not in p.stderr
    lines = p.stdout.splitlines()
    assert lines[-2].startswith("legend:") and lines[-1].startswith("[ar] 2 tokens")
    assert not any(ln.startswith(("load_family:", "load_lm:", "real_bigram:")) for ln in lines)   # notes: stderr
    assert "load_family: flan-t5-colab on cpu in float16" in p.stderr and "real_bigram:" in p.stderr

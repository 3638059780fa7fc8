"""Real presets load through the same from_pretrained path, tested on a fake offline HF cache."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from csd_lib.families.presets import REAL_PRESETS
from csd_lib.families.toy import toy_model, toy_tokenizer

SCRIPT = """
import json, sys
from csd_lib import load_family, generate
fam = load_family(sys.argv[1])
ar = generate(fam, "w5 w6 w7 w5 w6", "ar", max_new_tokens=12)
csd = generate(fam, "w5 w6 w7 w5 w6", "csd", max_new_tokens=12)
print(json.dumps({"same": ar.token_ids == csd.token_ids, "n": len(ar.token_ids),
                  "drafters": [d.model_id for d in fam.drafters], "target": fam.target.model_id,
                  "k": fam.default_k, "lenience": fam.default_lenience}))
"""


def fake_cache(root: Path, preset: str) -> None:
    """Save tiny random models under the preset's real repo ids, in HF's hub cache layout."""
    spec = REAL_PRESETS[preset]
    arch = "llama" if preset == "vicuna" else "t5"
    for i, rid in enumerate([spec["target"], *spec["drafters"]]):
        snap = root / "hub" / f"models--{rid.replace('/', '--')}" / "snapshots" / ("0" * 40)
        snap.mkdir(parents=True)
        toy_model(arch, 40, ["target", "base", "small"][i], i, eos=1).save_pretrained(snap)
        toy_tokenizer(40, arch == "t5").save_pretrained(snap)
        refs = snap.parent.parent / "refs"
        refs.mkdir(exist_ok=True)
        (refs / "main").write_text("0" * 40)


def run(preset, env_extra, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "CSD_CACHE_DIR": str(tmp_path / "csd-cache"), **env_extra}
    env.pop("CSD_DATA_DIR", None)
    return subprocess.run([sys.executable, "-c", SCRIPT, preset], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.mark.slow  # a subprocess per preset (about 12 s each); the fast tier checks loading in test_load_checks
@pytest.mark.parametrize("preset", ["flan-t5", "vicuna"])
def test_real_preset_loads_from_offline_cache(preset, tmp_path):
    fake_cache(tmp_path / "hf", preset)
    r = run(preset, {"HF_HOME": str(tmp_path / "hf")}, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    spec = REAL_PRESETS[preset]
    assert out["same"] and out["n"] == 12
    assert out["target"] == spec["target"] and out["drafters"] == spec["drafters"]
    assert out["k"] == spec["k"] and out["lenience"] == spec["lenience"]
    assert list((tmp_path / "csd-cache").glob(f"{preset}-bigram-*.npy"))   # bigram built and cached


def test_missing_real_model_offline_error_names_ids(tmp_path):
    (tmp_path / "empty").mkdir()   # flan-t5-colab: it fits this machine's RAM, so the missing ids are what stops it
    r = run("flan-t5-colab", {"HF_HOME": str(tmp_path / "empty")}, tmp_path)
    assert r.returncode != 0
    for rid in ("google/flan-t5-large", "google/flan-t5-base", "google/flan-t5-small"):
        assert rid in r.stderr
    assert "tiny-t5" in r.stderr and "network is off" in r.stderr

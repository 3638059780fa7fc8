"""A built wheel (not an editable install) carries the tiny families, not the repository's tooling, and runs
outside the repository."""
import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from csd_lib import config, generate, load_family

ROOT = config.REPO_ROOT
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_is_listed():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "csd_lib").rglob("__init__.py")}
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"
    assert PYPROJECT["tool"]["setuptools"]["package-dir"]["csd_lib._data"] == "data"


def test_colab_tooling_stays_out_of_the_package():
    """scripts/colab.py rewrites notebooks for scripts/set_repo_url.py: csd_lib neither holds nor imports it."""
    assert (ROOT / "scripts" / "colab.py").is_file() and not list((ROOT / "csd_lib").rglob("colab.py"))
    for f in (ROOT / "csd_lib").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [getattr(node, "module", None) or ""] + [a.name for a in node.names]
                assert not any("colab" in n.split(".") for n in names), f"{f} imports colab"


@pytest.mark.slow  # builds and installs a 40 MB wheel
def test_wheel_runs_outside_the_repo(tmp_path):
    src = tmp_path / "src"  # a copy, so that the build leaves no build/ or egg-info in the checkout
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("csd_lib", "data"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(pip + ["wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist")],
                   check=True, env=env, cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("csd_workbook-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("csd_lib/_data/models/tiny-t5.json", "csd_lib/_data/models/tiny-t5-bigram.npy",
                   "csd_lib/_data/models/tiny-t5-target/model.safetensors",
                   "csd_lib/_data/models/tiny-llama-small/tokenizer.json",
                   "csd_lib/_data/tasks/synth-gsm8k-test.jsonl", "csd_lib/_data/hf_configs/google/flan-t5-small/config.json",
                   "csd_lib/_data/shadow_words.txt",
                   "csd_lib/viz/__init__.py", "csd_lib/zoo/card.py"):
        assert needed in names, needed
    assert not [n for n in names if n.endswith(".md") or "__pycache__" in n], "docs or caches in the wheel"
    assert not [n for n in names if n.endswith("colab.py")], "notebook tooling (scripts/colab.py) in the wheel"

    site = tmp_path / "site"
    subprocess.run(pip + ["install", "--no-deps", "-q", "--target", str(site), str(wheel)], check=True, env=env)
    work = tmp_path / "elsewhere"
    work.mkdir()
    script = ("import json, csd_lib\n"
              "from csd_lib import config, generate, load_family\n"
              "fam = load_family('tiny-t5')\n"
              "g = generate(fam, 'Tom has 3 apples and buys 4 more.', 'csd', max_new_tokens=5)\n"
              "print(json.dumps(dict(file=csd_lib.__file__, models=str(config.MODELS_DIR), ids=g.token_ids)))\n")
    run_env = dict(env, PYTHONPATH=str(site), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", script], cwd=work, env=run_env, check=True,
                         capture_output=True, text=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    assert res["file"].startswith(str(site)) and res["models"] == str(site / "csd_lib" / "_data" / "models")
    fam = load_family("tiny-t5")  # the checkout's own copy gives the same greedy tokens
    ar = generate(fam, "Tom has 3 apples and buys 4 more.", "ar", max_new_tokens=5)
    assert res["ids"] == ar.token_ids and len(ar.token_ids) == 5

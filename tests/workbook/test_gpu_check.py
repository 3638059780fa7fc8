"""The GPU check (scripts/gpu_check.sh, gpu_check.py) and its carried packages (scripts/gpu_wheels.sh).

No GPU here: the check is proven by its CPU dry run (1 layer, tiny lengths, every step of the plan).
"""
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_check)
# The GPU plan's steps in order: the largest presets first, flan-t5-colab's identity in each dtype, the notebooks last.
PLAN_STEPS = ["env",
              "shadows:vicuna", "costs:vicuna-policy", "predict:vicuna-policy", "predict-2-layers:vicuna",
              "bench:vicuna-policy",
              "shadows:flan-t5", "costs:flan-t5-policy", "predict:flan-t5-policy", "predict-2-layers:flan-t5",
              "bench:flan-t5-policy",
              "shadows:flan-t5-colab", "costs:flan-t5-colab-bf16", "predict:flan-t5-colab-bf16",
              "bench:flan-t5-colab-bf16",
              "costs:flan-t5-colab-fp16", "bench:flan-t5-colab-fp16",
              "costs:flan-t5-colab-fp32", "bench:flan-t5-colab-fp32",
              "notebook:00", "notebook:07"]


def _pinned(name: str) -> str:
    """The version requirements.txt pins ``name`` to."""
    line = next(ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if ln.startswith(f"{name}=="))
    return line.split("==")[1].split()[0]


def check(*args, timeout, env=None):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout, env=env)


@pytest.mark.parametrize("args, says", [
    (["--plan", "vicuna,foo"], "--plan item 'foo': unknown preset 'foo'"),
    (["--plan", "flan-t5-colab:fp8"], "unknown dtype 'fp8'; use one of fp32, bf16, fp16"),
    (["--plan", "nb:42"], "--plan item 'nb:42': no single notebooks/42_*.ipynb"),
    (["--plan", " , "], "--plan is empty"),
    (["--budget-s", "0"], "--budget-s, --cost-seconds, --cell-timeout must be positive"),
    (["--n-grid", "0,4"], "expected integers >= 1, got '0,4'"),
    (["--prompt-tokens", "0"], "--nb-new-tokens and --prompt-tokens at least 1"),
])
def test_bad_arguments_are_refused_in_one_line_before_any_step(args, says, tmp_path):
    p = check("--out", str(tmp_path / "out"), *args, timeout=60)
    assert p.returncode == 2 and says in p.stderr, p.stderr
    assert not (tmp_path / "out" / "gpu_check.json").exists()


def test_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    p = check("--out", str(tmp_path / "f"), timeout=60)
    assert p.returncode == 2 and "is a file; give a folder" in p.stderr, p.stderr


@pytest.mark.slow
def test_dry_run_runs_every_step_and_records_each_in_one_json(tmp_path):
    """The dry run on this CPU: the GPU plan's every step ran and passed, in its order, with its measurements.

    The same plan as on a GPU (notebooks on flan-t5-colab, flan-t5 last) on 1-layer shadows with
    tiny lengths: about 6.5 minutes of one core's time (13 minutes on a busy shared 2-core machine).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CSD_", "HF_"))}
    env.update(OUT=str(tmp_path / "out"), PYTHON=sys.executable, OMP_NUM_THREADS="1")
    p = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run", "--work", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=gpu_check.DRY["budget_s"] + 300, env=env)
    res = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    steps = {s["name"]: s for s in res["steps"]}
    bad = {n: (s["status"], s.get("why") or s.get("tail", "")[-800:]) for n, s in steps.items() if s["status"] != "ok"}
    assert p.returncode == 0 and not bad, (bad, p.stdout[-3000:])
    assert res["dry_run"] and "shadow checkpoints" in res["checkpoints"] and res["machine"]["torch"]
    assert list(steps) == PLAN_STEPS
    assert res["machine"]["transformers"]["tested"] == gpu_check.tested_transformers()
    fp16, bf16 = steps["costs:flan-t5-colab-fp16"]["result"], steps["costs:flan-t5-colab-bf16"]["result"]
    assert fp16["keep_fp32"] == ["wo"] and fp16["wo_fp32"] is True  # the T4 policy: T5's wo stays fp32
    assert {m["weights"]["other"] == ["float16"] for m in fp16["models"].values()} == {True}
    assert bf16["keep_fp32"] == [] and {m["dtype"] for m in bf16["models"].values()} == {"bfloat16"}
    for name in ("predict:vicuna-policy", "predict:flan-t5-policy"):
        cmp = steps[name]["compare_2_layers"]
        assert any(r["method"] == "ar" for r in cmp) and all(r["ratio"] > 0 for r in cmp)
    for name, s in steps.items():
        if name.startswith("costs"):  # per model: wall time per call; GPU-busy time only on a GPU (none here)
            r = s["result"]
            assert r["calls"].keys() == r["models"].keys(), name
            assert all(c["wall_ms"] > 0 and c["gpu_busy_ms"] is None and c["busy_fraction"] is None
                       for per_n in r["calls"].values() for c in per_n.values()), name
            # the CPU holds the weights, so they count; no second copy of them
            assert 0 < r["host_anon_peak_gib"] < 1.3 * r["weights_gib"] + 0.2, name
        if name.startswith("predict:"):  # pricing is CPU work: unpaced, its estimate the measured PREDICT_CPU_S
            assert s["paced"] is False and s["cpu_s"] <= gpu_check.PREDICT_CPU_S * gpu_check.LIMIT_FACTOR, name
    for name, s in steps.items():
        if name.startswith("bench"):
            assert {"ar", "sd", "csd"} <= set(s["result"]), name
            if name.endswith(("-policy", "-fp32")):  # fp32 on a CPU: lossless, every method returns AR's tokens
                assert {m: r["mismatches"] for m, r in s["result"].items()} == {"ar": 0, "sd": 0, "csd": 0}, name
        if name.startswith("notebook"):
            r = s["result"]
            assert r["family"] == "flan-t5-colab" and r["caps"] == {"CSD_MAX_PROMPTS": "1", "CSD_MAX_NEW_TOKENS": "4"}
            assert r["cells_run"] == r["code_cells"] and r["error"] is None, name
    assert res["elapsed_s"] == pytest.approx(sum(s.get("seconds", 0) for s in res["steps"]), rel=0.2)


@pytest.mark.slow
def test_wheel_archive_holds_what_the_machine_lacks_under_the_carry_limit(tmp_path):
    """scripts/gpu_wheels.sh: Python 3.12 packages, none the machine has, within what the device tool carries;
    here for a machine whose transformers (4.0.0) is untested, so the pinned one is packed, pruned."""
    env = {**os.environ, "PYTHON": sys.executable, "MACHINE_TRANSFORMERS": "4.0.0"}
    p = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_wheels.sh"), str(tmp_path / "wh")], capture_output=True,
                       text=True, cwd=ROOT, timeout=1200, env=env)
    if p.returncode == 3:
        pytest.skip("no package index reachable: " + p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, p.stdout + p.stderr
    manifest = (tmp_path / "wh" / "MANIFEST.txt").read_text().split()
    names = {line.rsplit("-", 1)[0].lower() for line in manifest}
    assert {"plotly", "ipywidgets", "nbclient", "nbformat", "ipykernel", "jupyter_client", "pyzmq", "tornado"} <= names
    assert not names & {"torch", "numpy", "pygments", "packaging", "debugpy", "jedi", "tokenizers", "huggingface_hub"}
    assert f"transformers-{_pinned('transformers')}" in manifest and "packing transformers==" in p.stdout
    with tarfile.open(tmp_path / "wh" / "site.tar.xz") as tar:
        files = tar.getnames()
    assert any(f.endswith(".cpython-312-x86_64-linux-gnu.so") or "abi3" in f for f in files if f.endswith(".so"))
    assert not any("/plotly/labextension/" in f or "/labextensions/" in f for f in files)
    models = {f.split("/")[3] for f in files if f.startswith("./transformers/models/") and f.count("/") > 3}
    assert models == {"auto", "encoder_decoder", "t5", "llama"}
    size = (tmp_path / "wh" / "site.tar.xz").stat().st_size
    assert size < 40 * 2 ** 20 and "limit" in p.stdout


def test_a_step_that_would_overrun_the_budget_is_skipped_and_the_json_says_why(tmp_path):
    p = check("--out", str(tmp_path / "out"), "--plan", "nb:07,vicuna", "--budget-s", "5", "--work", str(tmp_path),
              timeout=60)
    res = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert p.returncode == 0 and [s["name"] for s in res["steps"]] == [
        "env", "shadows:flan-t5-colab", "notebook:07", "shadows:vicuna", "costs:vicuna-policy",
        "predict:vicuna-policy", "predict-2-layers:vicuna", "bench:vicuna-policy"]
    assert {s["status"] for s in res["steps"]} == {"skipped"}
    est = gpu_check.ESTIMATE_S["shadows"]["flan-t5-colab"]
    assert f"would overrun: about {est} s needed, 5 s left of the 5 s budget" in res["steps"][1]["why"]
    assert res["steps"][2]["why"] == "the shadows of flan-t5-colab were not built"
    assert res["steps"][4]["why"] == "the shadows of vicuna were not built"
    assert not list(tmp_path.glob("gpu-check-*"))  # the temporary hub is removed


def test_the_gpu_plan_is_estimated_to_fit_its_budget_with_a_margin(tmp_path):
    """Every step of the GPU plan, vicuna first, and their estimates well inside the budget: none is skipped
    as 'would overrun' at the estimated pace. (Here a budget of 1 s skips them all, each with its estimate.)"""
    p = check("--out", str(tmp_path / "out"), "--budget-s", "1", "--work", str(tmp_path), timeout=60)
    res = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert p.returncode == 0 and [s["name"] for s in res["steps"]] == PLAN_STEPS
    assert {s["pace"] for s in res["steps"]} == {1.0}
    total = sum(s["est_s"] for s in res["steps"])
    assert total <= 0.9 * gpu_check.FULL["budget_s"], total
    shell = (ROOT / "scripts" / "gpu_check.sh").read_text()
    assert f'GPU_CHECK_TIMEOUT:-{int(gpu_check.FULL["budget_s"]) + 20}' in shell  # a step in flight, then stopped
    assert {s["name"] for s in res["steps"] if s.get("paced") is False} == {n for n in PLAN_STEPS
                                                                          if n.startswith("predict:")}
    assert int(gpu_check.FULL["budget_s"]) + 20 <= 8 * 60


# -- the transformers gate --------------------------------------------------------------------------

def _fake_transformers(folder: Path, version: str) -> Path:
    """A folder holding an importable-looking transformers of ``version`` (a package and its metadata)."""
    (folder / "transformers").mkdir(parents=True)
    (folder / "transformers" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    dist = folder / f"transformers-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: transformers\nVersion: {version}\n")
    return folder


def test_the_tested_range_is_pyprojects_and_the_installed_transformers_is_in_it():
    import tomllib
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    deps = [Requirement(d) for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    spec = SpecifierSet(gpu_check.tested_transformers())
    assert [d.specifier for d in deps if d.name == "transformers"] == [spec] and "5.17.0" in spec
    assert gpu_check.version_gate() is None and gpu_check.transformers_here()[0] == _pinned("transformers")
    assert "outside the tested range" in gpu_check.version_gate("4.0.0")


def test_an_untested_transformers_without_a_carried_one_is_refused_in_one_line_before_any_step(tmp_path):
    site = _fake_transformers(tmp_path / "site", "4.0.0")
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHON": sys.executable, "OUT": str(tmp_path / "out"),
           "GPU_CHECK_SITE": str(tmp_path / "none.tar.xz")}
    p = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh")], capture_output=True, text=True, cwd=ROOT,
                       timeout=60, env=env)
    out = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 3 and len(out) == 1, out
    assert out[0].startswith("gpu_check: refused: transformers 4.0.0") and gpu_check.tested_transformers() in out[0]
    assert "no wheel of a tested one was carried" in out[0] and "gpu_wheels.sh" in out[0]
    assert not (tmp_path / "out" / "gpu_check.json").exists()


def test_a_carried_tested_transformers_is_unpacked_before_the_untested_one(tmp_path):
    """gpu_check.sh unpacks the archive first on the path; the check then starts (every step skipped: 1 s budget)."""
    site = _fake_transformers(tmp_path / "site", "4.0.0")
    carried = _fake_transformers(tmp_path / "carried", _pinned("transformers"))
    with tarfile.open(tmp_path / "site.tar.xz", "w:xz") as tar:
        tar.add(carried, arcname=".")
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHON": sys.executable, "OUT": str(tmp_path / "out"),
           "GPU_CHECK_SITE": str(tmp_path / "site.tar.xz")}
    p = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--budget-s", "1", "--work", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=60, env=env)
    res = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert p.returncode == 0 and "refused" not in p.stdout + p.stderr and res["steps"][0]["name"] == "env"


@pytest.mark.slow
def test_dry_run_under_the_lent_machines_transformers_without_a_carried_one(tmp_path):
    """transformers 5.17.0 (the lent GPU machine's) installed to a folder first on the path, no archive: outside
    the tested range the check refuses in seconds, in one line; inside it the check starts."""
    # the stack matrix's folder for that release (installed once, git-ignored)
    p = subprocess.run(["bash", str(ROOT / "scripts" / "stack_matrix.sh"), "--site", "5.17.0"], capture_output=True,
                       text=True, timeout=600, cwd=ROOT)
    if p.returncode != 0:
        pytest.skip("transformers 5.17.0 could not be installed (no package index?): " + p.stderr[-300:])
    cache = Path(p.stdout.strip().splitlines()[-1])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CSD_", "HF_"))}
    env.update(PYTHONPATH=str(cache), PYTHON=sys.executable, OUT=str(tmp_path / "out"),
               GPU_CHECK_SITE=str(tmp_path / "none.tar.xz"))
    t0 = time.monotonic()
    p = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run", "--budget-s", "1", "--work",
                        str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    took = time.monotonic() - t0
    out = (p.stdout + p.stderr).strip().splitlines()
    if gpu_check.version_gate("5.17.0"):
        assert p.returncode == 3 and len(out) == 1 and took < 20, (took, out)
        assert out[0].startswith("gpu_check: refused: transformers 5.17.0") and str(cache) in out[0]
        assert not (tmp_path / "out" / "gpu_check.json").exists()
    else:  # tested: the check starts on it (every step skipped by the 1 s budget) and records it
        res = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
        assert p.returncode == 0 and "refused" not in "\n".join(out) and res["steps"][0]["name"] == "env"

"""scripts/tune_tiny.py writes a K and SD's k per task (results/tune.json's by_task and preset_by_task) and the tuned K
into a presets file, keeping the tasks and families it does not run."""
import importlib.util
import json
from pathlib import Path

import pytest

from csd_lib.engine.plan import validate_k

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "tune_tiny.py"


@pytest.mark.slow
def test_tune_tiny_writes_per_task_k_and_keeps_other_tasks(tmp_path):
    spec = importlib.util.spec_from_file_location("tune_tiny", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "tune.json"
    out.write_text((SCRIPT.parent.parent / "results" / "tune.json").read_text())  # the shipped results: synth-gsm8k
    presets = tmp_path / "tuned_presets.json"
    shipped = (SCRIPT.parent.parent / "data" / "tuned_presets.json").read_text()
    presets.write_text(shipped)
    assert mod.main(["--families", "tiny-t5", "--tasks", "synth-mmlu", "--grid", "tiny", "--n", "1",
                     "--budget", "1", "--max-new-tokens", "8", "--reps", "1", "--out", str(out),
                     "--presets", str(presets)]) == 0
    rep = json.loads(out.read_text())
    per = rep["preset_by_task"]["tiny-t5"]
    assert set(per) == {"synth-gsm8k", "synth-mmlu"}                 # the kept task stays
    assert set(rep["preset_by_task"]["tiny-llama"]) == {"synth-gsm8k"}  # and the family not run
    for task in ("synth-gsm8k", "synth-mmlu"):
        validate_k(per[task]["k"], 3)
        assert per[task]["sd_k"] >= 1
        assert str(per[task]["sd_k"]) in rep["tiny-t5"]["by_task"][task]["sd_sweep"]
    assert per["synth-mmlu"]["lenience"] == 3.0
    assert "| tiny-t5 | synth-mmlu (n = 1) |" in rep["summary_md"] and "| tiny-t5 | synth-gsm8k" in rep["summary_md"]
    # the tuned K of the task run lands in the presets file; the family's own K and other families stay
    before, after = json.loads(shipped), json.loads(presets.read_text())
    assert after["tiny-t5"]["by_task"]["synth-mmlu"]["k"] == per["synth-mmlu"]["k"]
    assert after["tiny-t5"]["k"] == before["tiny-t5"]["k"] and after["tiny-llama"] == before["tiny-llama"]

from types import SimpleNamespace

import pytest

from csd_lib.families.task_choice import benchmark_tasks, data_origin
from csd_lib.families.tasks import Example


def test_embedded_families_get_the_synthetic_tasks_and_real_ones_gsm8k():
    assert benchmark_tasks(SimpleNamespace(name="tiny-t5-paper")) == ["synth-gsm8k", "synth-mmlu"]
    assert benchmark_tasks(SimpleNamespace(name="flan-t5-colab")) == ["gsm8k", "mmlu"]


def test_data_origin_names_a_stand_in():
    synth = [Example("p", "r", "1", "synth-gsm8k", "synthetic:test:seed0:0")]
    real = [Example("p", "r", "1", "gsm8k", "/data/gsm8k/test.jsonl:0")]
    assert data_origin("synth-gsm8k", synth) == "synthetic"
    assert data_origin("gsm8k", synth).startswith("synthetic stand-in for gsm8k")
    assert data_origin("gsm8k", real) == "real data (/data/gsm8k/test.jsonl)"
    with pytest.raises(ValueError):
        data_origin("gsm8k", [])

"""MaG's cached bigram table is looked up under the name it is saved under, wherever its corpus comes from."""
import importlib.util
import json
import sys

import pytest

from csd_lib import config
from csd_lib.families import tasks
from csd_lib.families.family import real_bigram
from csd_lib.families.toy import toy_tokenizer


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "DATA_DIR", None)
    return tmp_path / "cache"


def _twice(monkeypatch, tok) -> list[str]:
    """Build the table, then load it again with every corpus loader failing: the second load must find it by name."""
    first = real_bigram("fam/x", tok, 48)
    with monkeypatch.context() as m:
        m.setattr(tasks, "load_task", lambda *a, **k: pytest.fail("the cached table was missed: a corpus was loaded"))
        assert (real_bigram("fam/x", tok, 48) == first).all()
    return sorted(p.name for p in config.cache_dir().glob("*.npy"))


def test_online_without_datasets_finds_the_synthetic_table(cache, monkeypatch):
    monkeypatch.setattr(config, "HF_OFFLINE", False)
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` fails: the hub cannot serve GSM8K
    assert tasks.bigram_sources("gsm8k") == ["synth-gsm8k-train"] and tasks.bigram_corpus("gsm8k", n=5)[1] == \
        "synth-gsm8k-train"
    names = _twice(monkeypatch, toy_tokenizer(48, True))
    assert len(names) == 1 and names[0].startswith("fam--x-bigram-synth-gsm8k-train-48-"), names


def test_a_data_dir_without_the_task_finds_the_synthetic_table(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(config, "HF_OFFLINE", True)
    (tmp_path / "data" / "mmlu").mkdir(parents=True)  # another task's data only
    monkeypatch.setattr(config, "DATA_DIR", str(tmp_path / "data"))
    names = _twice(monkeypatch, toy_tokenizer(48, True))
    assert len(names) == 1 and "-bigram-synth-gsm8k-train-" in names[0], names


def test_local_train_data_is_found_under_the_real_name(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(config, "HF_OFFLINE", True)
    d = tmp_path / "data" / "gsm8k"
    d.mkdir(parents=True)
    (d / "train.jsonl").write_text("".join(json.dumps({"question": f"w{i} w5", "answer": f"w6\n#### {i}"}) + "\n"
                                           for i in range(3)))
    monkeypatch.setattr(config, "DATA_DIR", str(tmp_path / "data"))
    assert tasks.bigram_sources("gsm8k") == ["gsm8k-train"] and tasks.bigram_corpus("gsm8k")[1] == "gsm8k-train"
    names = _twice(monkeypatch, toy_tokenizer(48, True))
    assert len(names) == 1 and "-bigram-gsm8k-train-" in names[0], names


def test_online_with_a_failing_hub_finds_the_synthetic_table_without_asking_again(cache, monkeypatch):
    """A table built when the hub could not serve the train split is used on the next load: the hub (which
    retries for about 25 s offline) is not asked again."""
    monkeypatch.setattr(config, "HF_OFFLINE", False)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "datasets" else
                        find_spec(name, *a))  # `datasets` installed
    monkeypatch.setattr(tasks, "_from_hub", lambda task, split: None)  # the hub fails today
    assert tasks.bigram_sources("gsm8k") == ["gsm8k-train", "synth-gsm8k-train"]
    names = _twice(monkeypatch, toy_tokenizer(48, True))  # the second load asks for no corpus
    assert len(names) == 1 and "-bigram-synth-gsm8k-train-" in names[0], names

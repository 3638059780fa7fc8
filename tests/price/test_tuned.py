"""Tuned settings per machine class: the store, the lookup that fills what a user did not give, and the estimate."""
import json

import pytest

from csd_lib import config
from csd_lib.price.tuned import (check_tuned, estimate_seconds, load_tuned, machine_class, save_tuned, tuned_path,
                                 tuned_settings)

K = [[2, 3, 10], [0, 1, 10], [0, 0, 10]]


def result(family="tiny-t5", machine="cpu-x-1t-0000aaaa", csd_policy="ewif", sd_policy="ewif"):
    return {"family": family, "machine_class": machine, "date": "2026-12-07T23:00:00+00:00", "task": "synth-gsm8k",
            "csd": {"k": K, "lenience": 3.0, "draft_policy": csd_policy, "confidence": 0.7 if csd_policy ==
                    "confidence" else None, "speedup": 2.0, "fixed_speedup": 1.9},
            "sd": {"k": 7, "draft_policy": sd_policy, "confidence": None, "speedup": 1.5, "fixed_speedup": 1.4}}


def test_round_trip_under_the_machine_class_and_family(tmp_path):
    path = save_tuned(result(), tmp_path)
    assert path == tmp_path / "cpu-x-1t-0000aaaa" / "tiny-t5.json"
    assert [p.name for p in path.parent.iterdir()] == ["tiny-t5.json"]  # atomic: no temporary file stays
    data, where = load_tuned("tiny-t5", "cpu-x-1t-0000aaaa", tmp_path)
    assert data == result() and where == path
    assert load_tuned("tiny-llama", "cpu-x-1t-0000aaaa", tmp_path)[0] is None
    assert load_tuned("tiny-t5", "cpu-y-1t-0000bbbb", tmp_path)[0] is None


def test_default_store_is_the_tuned_dir_never_the_repository(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "TUNED_DIR", None)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "c"))
    assert tuned_path("tiny-t5", "m") == tmp_path / "c" / "tuned" / "m" / "tiny-t5.json"
    monkeypatch.setattr(config, "TUNED_DIR", str(tmp_path / "t"))
    assert tuned_path("tiny-t5", "m") == tmp_path / "t" / "m" / "tiny-t5.json"
    assert config.REPO_ROOT not in tuned_path("tiny-t5").parents


@pytest.mark.parametrize("edit,message", [
    (lambda d: d.update(family="tiny-llama"), "holds no tuned settings of tiny-t5"),
    (lambda d: d["csd"].update(k="[[1]]"), "not a matrix"),
    (lambda d: d["sd"].update(k=0), "sd k 0"),
    (lambda d: d["csd"].update(lenience=0.5), "lenience"),
    (lambda d: d["sd"].update(draft_policy="often"), "draft policy"),
    (lambda d: d.pop("date"), "KeyError"),
])
def test_bad_files_are_refused_in_one_line(tmp_path, edit, message):
    data = result()
    edit(data)
    path = tuned_path("tiny-t5", "m", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=message) as e:
        load_tuned("tiny-t5", "m", tmp_path)
    assert "\n" not in str(e.value) and "python -m csd_lib tune --family tiny-t5" in str(e.value)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_tuned("tiny-t5", "m", tmp_path)
    if data["family"] == "tiny-t5":
        with pytest.raises(ValueError):
            save_tuned(data, tmp_path)  # a bad result is never stored
    used, note = tuned_settings("tiny-t5", "csd", machine="m", root=tmp_path)
    assert used["k"] is None and note.startswith("the preset (the tuned file is refused")


def test_lookup_uses_the_tuned_file_only_for_its_class_and_family(tmp_path):
    save_tuned(result(), tmp_path)
    used, note = tuned_settings("tiny-t5", "csd", machine="cpu-x-1t-0000aaaa", root=tmp_path)
    assert used == {"k": K, "lenience": 3.0, "sd_k": None, "draft_policy": "ewif", "confidence": None}
    assert note.startswith("tuned on 2026-12-07 for machine class cpu-x-1t-0000aaaa (")
    assert tuned_settings("tiny-t5", "sd", machine="cpu-x-1t-0000aaaa", root=tmp_path)[0]["k"] == 7
    for fam, machine in (("tiny-llama", "cpu-x-1t-0000aaaa"), ("tiny-t5", "cpu-y-1t-0000bbbb")):
        used, note = tuned_settings(fam, "csd", machine=machine, root=tmp_path)
        assert set(used.values()) == {None}
        assert note.startswith(f"the preset (no tuned setting for machine class {machine}; "
                               f"`python -m csd_lib tune --family {fam}") and "min)" in note
    used, note = tuned_settings("tiny-t5", "mag", machine="cpu-x-1t-0000aaaa", root=tmp_path)
    assert set(used.values()) == {None} and "not tuned" in note


def test_given_settings_win(tmp_path):
    save_tuned(result(csd_policy="confidence"), tmp_path)
    used, note = tuned_settings("tiny-t5", "csd", k=[[1, 0, 10], [0, 1, 10], [0, 0, 10]], draft_policy="schedule",
                                machine="cpu-x-1t-0000aaaa", root=tmp_path)
    assert used["k"] == [[1, 0, 10], [0, 1, 10], [0, 0, 10]] and used["draft_policy"] == "schedule"
    assert used["lenience"] == 3.0 and used["confidence"] is None  # the tuned threshold goes with its policy only
    assert note.endswith("given: k, draft_policy")
    used, _ = tuned_settings("tiny-t5", "csd", machine="cpu-x-1t-0000aaaa", root=tmp_path)
    assert (used["draft_policy"], used["confidence"]) == ("confidence", 0.7)


def test_bench_takes_one_policy_only_where_both_were_tuned_to_it(tmp_path):
    save_tuned(result(csd_policy="ewif", sd_policy="schedule"), tmp_path)
    used, _ = tuned_settings("tiny-t5", "bench", machine="cpu-x-1t-0000aaaa", root=tmp_path)
    assert (used["k"], used["sd_k"], used["draft_policy"]) == (K, 7, None)
    save_tuned(result(), tmp_path)
    assert tuned_settings("tiny-t5", "bench", machine="cpu-x-1t-0000aaaa", root=tmp_path)[0]["draft_policy"] == "ewif"


def test_check_tuned_accepts_a_result_and_the_class_names_threads():
    assert check_tuned(result(), "tiny-t5", "x") == result()
    assert "-1t-" in machine_class()  # tests run one torch thread (tests/conftest.py)


def test_estimate_grows_with_the_work():
    small, large = estimate_seconds("tiny-t5", 1, 1, 16), estimate_seconds("tiny-t5", 8, 8, 128)
    assert 0 < small < large

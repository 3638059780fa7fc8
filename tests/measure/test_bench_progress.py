"""A bench says what its run will take before the timed work, and its bar weighs each run by its predicted cost."""
from dataclasses import dataclass

import pytest

from csd_lib import random_family
from csd_lib.families.family import CpuProbe
from csd_lib.measure import bench
from csd_lib.measure.bench import duration, run_bench


@dataclass
class Ex:
    prompt: str
    task: str = "toy"
    source: str = "test"


EXAMPLES = [Ex("w5 w6 w7 w8 w5 w6"), Ex("w9 w10 w11 w9 w10")]
PREDICTED = {"ar": 0.5, "sd": 2.0, "csd": 7.5}


class Bar:
    """A stand-in for :func:`csd_lib.logs.seconds_bar` that keeps its total and its updates."""
    made: list = []

    def __init__(self, total, desc, disable=False, leave=True):
        self.total, self.desc, self.done = total, desc, []
        Bar.made.append(self)

    def update(self, s):
        self.done.append(s)

    def close(self):
        pass


@pytest.fixture
def bars(monkeypatch):
    Bar.made = []
    monkeypatch.setattr(bench, "seconds_bar", Bar)
    return Bar.made


def test_the_bar_weighs_each_run_by_its_predicted_seconds(tmp_path, bars, caplog):
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    caplog.set_level("INFO", logger="csd_lib.measure.bench")
    run_bench(fam, EXAMPLES, ["ar", "sd", "csd"], tmp_path / "r.jsonl", 6, repeats=2, predicted=PREDICTED)
    warm, timed = bars
    assert warm.total == pytest.approx(sum(PREDICTED.values())) and sorted(warm.done) == sorted(PREDICTED.values())
    assert timed.total == pytest.approx(2 * 2 * sum(PREDICTED.values()))  # examples x repeats x every method
    assert sum(timed.done) == pytest.approx(timed.total) and sorted(set(timed.done)) == sorted(PREDICTED.values())
    said = [r for r in caplog.records if "runs and a warm-up take about" in r.getMessage()]
    # 12 runs and one warm-up run of each method (its 6 tokens: the warm-up runs min(32, 6))
    assert len(said) == 1 and said[0].levelname == "INFO" and f"about {duration(5 * 10.0)}" in said[0].getMessage()


def test_without_a_price_the_warm_up_is_the_estimate_and_a_cpu_family_is_warned(tmp_path, bars, caplog):
    fam = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    fam.cpu_probe = CpuProbe({"target": 0.1}, {"target": 0.01}, {"target": 0.02}, 10)  # as a hub family on the CPU
    caplog.set_level("INFO", logger="csd_lib.measure.bench")
    run_bench(fam, EXAMPLES, ["ar", "csd"], tmp_path / "r.jsonl", 6)
    said = [r for r in caplog.records if "take about" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "WARNING" and "warm-up time" in said[0].getMessage()
    (timed,) = bars  # the warm-up's own bar counts runs: nothing priced it
    assert len(timed.done) == 4 and sum(timed.done) == pytest.approx(timed.total)


def test_durations_read_as_people_say_them():
    assert [duration(s) for s in (42, 600, 9000)] == ["42 s", "10 min", "2.5 h"]

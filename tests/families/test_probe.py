"""The load probe: every model timed on one prompt, on CPU time with one thread, read as wall time at the machine's load."""
import pytest
import torch

from csd_lib import random_family
from csd_lib.families import family
from csd_lib.families.family import PROBE_BLOCK, CpuProbe, probe_calls


def test_the_probe_times_every_model_and_picks_its_clock(monkeypatch):
    fam = random_family("t5", vocab_size=32, n_drafters=2, seed=0, dtype=torch.float32)
    probe = probe_calls(fam.models, [3, 4, 5, 6, 7])
    assert set(probe.start) == set(probe.step) == set(probe.block) == {"target", "base", "small"}
    assert probe.prompt_tokens == 5 and all(v > 0 for v in [*probe.start.values(), *probe.step.values()])
    assert probe.clock == ("cpu" if torch.get_num_threads() == 1 else "wall")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)  # CPU time adds up threads: wall time then
    assert probe_calls(fam.models[:1], [3, 4]).clock == "wall"
    assert all(lm._cache is None for lm in fam.models)  # each model's cache is released


def test_cpu_time_is_read_at_the_machines_load(monkeypatch):
    probe = CpuProbe({"target": 1.0}, {"target": 0.1}, {"target": 0.4}, 20, clock="cpu")
    monkeypatch.setattr(family.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(family.os, "getloadavg", lambda: (6.0, 5.0, 4.0))
    assert probe.wall_per_second() == 3.0 and probe.ar_seconds(11) == pytest.approx(3.0 * (1.0 + 10 * 0.1))
    monkeypatch.setattr(family.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert probe.wall_per_second() == 1.0  # an idle machine: a core of its own
    wall = CpuProbe({"target": 1.0}, {"target": 0.1}, {"target": 0.4}, 20)
    monkeypatch.setattr(family.os, "getloadavg", lambda: (6.0, 5.0, 4.0))
    assert wall.wall_per_second() == 1.0
    text = probe.warning("vicuna")
    assert "3.00 s to start" in text and "0.30 s per new token" in text and f"4.0 times that to score {PROBE_BLOCK}" in text

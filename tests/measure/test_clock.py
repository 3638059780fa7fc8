"""Bench clocks (wall or process CPU time), the load a run saw, and --mag-lenience."""
import json
import re

import pytest
import torch

from csd_lib import random_family
from csd_lib.cli import commands
from csd_lib.cli.main import main as cli_main
from csd_lib.measure.records import read_records
from csd_lib.measure.bench import run_bench
from csd_lib.engine.models import CLOCKS
from csd_lib.measure.records import BenchRecord
from csd_lib.report.summary import format_table, run_conditions, summarize, summary_json


class Ex:
    def __init__(self, prompt, task="toy", source="test"):
        self.prompt, self.task, self.source = prompt, task, source


EXAMPLES = [Ex("w5 w6 w7 w8 w5 w6"), Ex("w9 w10 w11 w9 w10")]


def fam():
    return random_family("llama", vocab_size=40, n_drafters=2, seed=1)


@pytest.fixture
def threads():
    """Set torch's thread count for one test, restored afterwards."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def bench(out, **kw):
    return run_bench(kw.pop("family", None) or fam(), kw.pop("examples", EXAMPLES), kw.pop("methods", ["ar", "sd", "csd"]),
                     out, 6, warmup=0, progress=False, **kw)


def test_cpu_clock_times_every_record_and_forward_and_is_put_back(tmp_path, threads):
    threads(1)
    f = fam()
    recs = bench(tmp_path / "r.jsonl", family=f, clock="cpu")
    assert {r["clock"] for r in recs} == {"cpu"} and len(recs) == 6
    for r in recs:  # forward time read from the same clock as the whole generation: a part of it
        assert 0 <= sum(r["stats"]["forward_time"].values()) <= r["stats"]["wall_time"]
    assert all(lm.meter.clock is CLOCKS["wall"] for lm in f.models)  # the family's clock is put back
    assert {r["clock"] for r in bench(tmp_path / "w.jsonl")} == {"wall"}  # the default


def test_hf_baseline_reads_the_same_clock(tmp_path, threads, monkeypatch):
    threads(1)
    ticks = iter(range(1000))
    monkeypatch.setitem(CLOCKS, "cpu", lambda: float(next(ticks)))  # a clock that counts its own readings
    recs = bench(tmp_path / "r.jsonl", methods=["ar", "hf-pld"], examples=EXAMPLES[:1], clock="cpu")
    hf = next(r for r in recs if r["method"] == "hf-pld")
    # read from the patched clock at the start, at each streamed chunk (its tokens' commit time) and at the end
    t = hf["commit_times"]
    assert t == sorted(t) and t[0] >= 1 and hf["stats"]["wall_time"] == max(t) + 1


def test_cpu_clock_is_refused_with_several_threads(tmp_path, threads):
    threads(2)
    with pytest.raises(ValueError, match="clock 'cpu' needs one torch thread"):
        bench(tmp_path / "r.jsonl", clock="cpu")
    with pytest.raises(ValueError, match="unknown clock 'gpu'"):
        bench(tmp_path / "r.jsonl", clock="gpu")
    assert not (tmp_path / "r.jsonl").exists()


def run_cli(argv) -> int:
    """The CLI's exit status, whether main returns it or argparse exits with it."""
    try:
        return cli_main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("argv,msg", [
    (["--clock", "cpu"], "error: --clock cpu needs --threads 1"),
    (["--clock", "cpu", "--threads", "2"], "error: --clock cpu needs --threads 1"),
    (["--clock", "cpu", "--threads", "1", "--methods", "ar,sd", "--mag-lenience", "lenient"],
     "error: --mag-lenience is for csd or csd-tree, which --methods ar,sd does not run"),
    (["--clock", "sundial"], "argument --clock: invalid choice: 'sundial'"),
])
def test_cli_refuses_before_anything_loads(tmp_path, capsys, monkeypatch, argv, msg):
    monkeypatch.setattr(commands, "load_from_args", lambda args: pytest.fail("a model was loaded"))
    out = tmp_path / "r.jsonl"
    code = run_cli(["bench", "--family", "tiny-t5", "--n", "1", "--out", str(out), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and msg in err[-1] and not out.exists()
    if msg.startswith("error:"):
        assert len(err) == 1


def test_resume_refuses_another_clock_and_reads_old_lines_as_wall(tmp_path, threads):
    threads(1)
    out = tmp_path / "r.jsonl"
    bench(out)
    before = out.read_bytes()
    with pytest.raises(ValueError, match=re.escape("line 1: clock is 'wall' there, 'cpu' now")):
        bench(out, clock="cpu")
    assert out.read_bytes() == before
    old = [{k: v for k, v in r.items() if k != "clock"} for r in read_records(out)]  # lines from before clocks
    out.write_text("".join(json.dumps(r) + "\n" for r in old))
    assert bench(out) == old  # resumed as wall: nothing run again
    with pytest.raises(ValueError, match="clock is 'wall' there, 'cpu' now"):
        bench(out, clock="cpu")
    assert BenchRecord.from_dict(old[0]).clock == "wall"


def test_summary_states_the_clock_and_the_load(tmp_path, threads):
    threads(1)
    recs = bench(tmp_path / "r.jsonl", clock="cpu")
    for r, load in zip(recs, [3.0, 1.0, 2.0, 5.0, None, 4.0]):  # as if the machine's load had moved
        r["load1"] = load
    seen = run_conditions(recs)
    assert seen == {"clock": "cpu", "load1": {"start": 3.0, "end": 4.0, "min": 1.0, "median": 3.0, "max": 5.0,
                                              "n": 5}}
    s = summarize(recs)
    js = summary_json(s)
    for m in ("ar", "sd", "csd"):
        assert js[m]["clock"] == "cpu" and js[m]["load1"] == seen["load1"]
        assert 0 <= js[m]["outside_share"] < 1  # kept, from the same clock
    head = format_table(s).splitlines()[0]
    assert head.startswith("clock: cpu (process CPU time)") and "start 3.00, end 4.00" in head
    assert "min 1.00, median 3.00, max 5.00 over 5 lines" in head
    mixed = run_conditions([*recs, {**recs[0], "clock": "wall", "load1": None}])
    assert mixed["clock"] == "cpu+wall"
    none = run_conditions([{**r, "load1": None} for r in recs])
    assert none["load1"]["n"] == 0 and none["load1"]["median"] is None
    assert "not recorded" in format_table(summarize([{**r, "load1": None} for r in recs])).splitlines()[0]


def test_mag_lenience_reaches_csd_plan_only_and_is_compared_on_resume(tmp_path):
    out = tmp_path / "r.jsonl"
    recs = bench(out, mag_lenience=True)
    plans = {r["method"]: r["plan"] for r in recs}
    assert plans["csd"]["mag_lenience"] is True and plans["sd"]["mag_lenience"] is False
    assert BenchRecord.from_dict(next(r for r in recs if r["method"] == "csd")).plan.mag_lenience is True
    with pytest.raises(ValueError, match="csd's mag_lenience is True there, False now"):
        bench(out, mag_lenience=False)
    with pytest.raises(ValueError, match="csd's mag_lenience is True there, False now"):
        bench(out)  # the default is the paper's rule
    paper = bench(tmp_path / "p.jsonl")
    assert next(r for r in paper if r["method"] == "csd")["plan"]["mag_lenience"] is False
    with pytest.raises(ValueError, match="mag_lenience must be True"):
        bench(tmp_path / "x.jsonl", mag_lenience="yes")


def test_cli_mag_lenience_and_clock_reach_the_run(tmp_path, monkeypatch):
    seen = {}

    def fake_run(fam_, examples, methods, out, **kw):
        seen.update(kw)
        return []
    monkeypatch.setattr(commands, "load_from_args", lambda args: fam())
    monkeypatch.setattr(commands, "run_bench", fake_run)
    monkeypatch.setattr(commands, "resume_problem", lambda *a, **kw: None)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: seen.setdefault("threads", n))
    assert cli_main(["bench", "--family", "tiny-t5", "--n", "1", "--methods", "csd", "--mag-lenience", "lenient",
                     "--clock", "cpu", "--threads", "1", "--costs", "none", "--out", str(tmp_path / "r.jsonl")]) == 0
    assert seen["mag_lenience"] is True and seen["clock"] == "cpu" and seen["threads"] == 1
    seen.clear()
    assert cli_main(["bench", "--family", "tiny-t5", "--n", "1", "--methods", "csd", "--costs", "none",
                     "--out", str(tmp_path / "r.jsonl")]) == 0
    assert seen["mag_lenience"] is None and seen["clock"] == "wall"


def test_benchmarks_md_names_each_runs_clock_and_load():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("make_benchmarks_md",
                                                  Path(__file__).parents[2] / "scripts" / "make_benchmarks_md.py")
    md = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(md)
    old = [{"example": i, "method": "ar", "load1": x} for i, x in enumerate([2.0, 1.0, 3.0])]  # no clock: wall
    assert md.conditions(old) == ("wall time (`--clock wall`); 1-minute load average on 2 cores at start 2.0, at end "
                                  "3.0, median 2.0, range 1.0–3.0")
    assert md.conditions([{**r, "clock": "cpu", "load1": None} for r in old]) == \
        "process CPU time (`--clock cpu`); load not recorded"

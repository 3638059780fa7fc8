"""The CLI prices a run before it starts: generate warns for a hub family on the CPU, bench says its time."""
import pytest

from csd_lib import load_family
from csd_lib.cli import commands
from csd_lib.cli.commands import cmd_bench, cmd_generate
from csd_lib.cli.parser import parser
from csd_lib.families.family import probe_cpu


def args(*argv):
    return parser("csd").parse_args(list(argv))


@pytest.fixture
def cpu_hub_family(monkeypatch):
    """tiny-t5 with a load probe, as a hub family on the CPU carries one."""
    fam = load_family("tiny-t5")
    fam.cpu_probe = probe_cpu(fam.models, fam.tokenizer, fam.prompt_style)
    monkeypatch.setattr(commands, "load_from_args", lambda a: fam)
    return fam


def test_generate_warns_with_the_runs_time_before_it_starts(cpu_hub_family, caplog):
    caplog.set_level("INFO", logger="csd_lib.cli.commands")
    cmd_generate(args("generate", "--family", "tiny-t5", "--method", "csd", "--prompt", "Q: 3 + 4? A:",
                      "--max-new-tokens", "6"))
    said = [r for r in caplog.records if r.getMessage().startswith("generate: 1 prompt(s) by csd at 6 new tokens")]
    assert len(said) == 1 and said[0].levelname == "WARNING" and "priced from a probe of 3 model(s)" in said[0].getMessage()


def test_bench_logs_its_priced_run_before_the_work(cpu_hub_family, tmp_path, caplog):
    caplog.set_level("INFO")
    cmd_bench(args("bench", "--family", "tiny-t5", "--task", "synth-gsm8k", "--n", "1", "--max-new-tokens", "6",
                   "--methods", "ar,sd", "--out", str(tmp_path / "b.jsonl"), "--costs", "none"))
    text = [r.getMessage() for r in caplog.records]
    how = next(i for i, t in enumerate(text) if t.startswith("bench: each run priced from a probe"))
    told = next(i for i, t in enumerate(text) if "2 runs and a warm-up take about" in t)
    assert how < told and caplog.records[told].levelname == "WARNING"  # a hub family on the CPU is warned

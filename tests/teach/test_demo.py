"""csd_lib.teach.demo.run_demo: the README's first command, on one prompt of the embedded tiny-t5 family."""
from csd_lib.teach.demo import DEMO_METHODS, run_demo


def test_run_demo_prints_identity_trace_and_table(capsys):
    summary = run_demo("tiny-t5", n_prompts=1, max_new_tokens=12)
    out = capsys.readouterr().out
    assert list(summary) == DEMO_METHODS  # tiny-t5 has two drafters: staged runs too
    for m in DEMO_METHODS[1:]:
        assert summary[m]["n"] == 1 and summary[m]["mismatches"] == 0 and summary[m]["errors"] == 0
        assert f"  {m:<7} 1/1 prompts identical" in out
    assert out.startswith("family tiny-t5: target ")
    assert "Per-level provenance: " in out and "legend: " in out
    table = out[out.index("method "):].splitlines()
    assert [r.split()[0] for r in table[2:2 + len(DEMO_METHODS)]] == DEMO_METHODS
    lat = table[2 + len(DEMO_METHODS):]  # the latency block: its title, head, rule, one row per method
    assert lat[0].startswith("latency") and [r.split()[0] for r in lat[3:]] == DEMO_METHODS

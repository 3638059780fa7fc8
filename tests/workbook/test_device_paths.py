"""Notebook 07's model cells, solutions 00 and 07 and the model card's timing make every tensor on its model's device.

Each runs with torch's default device set to 'meta' while every model sits on the CPU (the families
are built on the CPU, then a forward pre-hook on each model checks its inputs): a tensor made without
``device=`` lands on 'meta' and fails, as a CPU tensor fed to a model on a GPU would. Sizes are cut
with the notebooks' knobs (``config.n_prompts``, ``config.new_tokens``).
"""
import ast
import contextlib
import json
import logging
import re
from pathlib import Path

import pytest
import torch

import csd_lib
from csd_lib import config

ROOT = Path(__file__).resolve().parents[2]


def _check_inputs(module, args, kwargs):
    """Raise when a tensor argument of ``module``'s forward (or one inside a mapping) is off its weights' device."""
    dev = next(module.parameters()).device
    values = [*args, *kwargs.values()]
    values += [v for x in values if isinstance(x, dict) for v in x.values()]  # e.g. T5's encoder_outputs
    for t in values:
        if isinstance(t, torch.Tensor) and t.device != dev:
            raise RuntimeError(f"{type(module).__name__} got an input on {t.device}, its weights are on {dev}")


@contextlib.contextmanager
def meta_default(monkeypatch):
    """Inside: torch's default device is 'meta'; ``csd_lib.load_family`` and ``random_family`` build on the CPU and
    hook every model (and Medusa heads) with :func:`_check_inputs`. Yields the families built."""
    built, hooks = [], []

    def on_cpu(build):
        def wrapped(*args, **kwargs):
            with torch.device("cpu"):
                fam = build(*args, **kwargs)
            mods = {id(lm.model): lm.model for lm in fam.models} | ({0: fam.medusa} if fam.medusa is not None else {})
            hooks.extend(m.register_forward_pre_hook(_check_inputs, with_kwargs=True) for m in mods.values())
            built.append(fam)
            return fam
        return wrapped
    monkeypatch.setattr(csd_lib, "load_family", on_cpu(csd_lib.load_family), raising=False)
    monkeypatch.setattr(csd_lib, "random_family", on_cpu(csd_lib.random_family), raising=False)
    torch.set_default_device("meta")
    try:
        yield built
    finally:
        torch.set_default_device(None)
        for h in hooks:
            h.remove()


@pytest.fixture
def short(monkeypatch):
    """The notebooks' knobs at one prompt and 8 new tokens, on tiny-t5."""
    monkeypatch.setattr(config, "MAX_PROMPTS", 1)
    monkeypatch.setattr(config, "MAX_NEW_TOKENS", 8)
    monkeypatch.setattr(config, "FAMILY", "tiny-t5")


def _run(sources: list[tuple[str, str]], ns: dict, after: dict | None = None) -> dict:
    """Execute (name, source) pairs in ``ns``; ``after`` {name: {var: value}} overrides variables once that part ran."""
    for name, src in sources:
        exec(compile(src, name, "exec"), ns)
        ns.update((after or {}).get(name, {}))
    return ns


def _touches_models(src: str) -> bool:
    return bool(re.search(r"\b(fam|toy)\b|review\(|effective_q\(", src)) and "_setup()" not in src


@pytest.fixture
def notebook_setup_undone():
    """The notebook's setup quiets some of the library's loggers for the whole process: they are set back."""
    from csd_lib.viz.notebook import QUIET_IN_NOTEBOOKS
    levels = {name: logging.getLogger(name).level for name in QUIET_IN_NOTEBOOKS}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_notebook_07_cells_that_touch_models(short, monkeypatch, notebook_setup_undone):
    """Every code cell of notebook 07 that runs a model or a review (the sampling test at 20 samples a method)."""
    nb = json.loads((ROOT / "notebooks" / "07_lossless.ipynb").read_text(encoding="utf-8"))
    cells = [(f"07 cell {i}", "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    # the sampling asserts (``assert tvs[...]``) hold at the notebook's N_SAMPLES, not at the 20 run here
    picked = [(n, s) for n, s in cells if _touches_models(s) and "assert tvs" not in s]
    assert len(picked) >= 6 and any("sample_joint" in s for _, s in picked), [n for n, _ in picked]
    sets = next(n for n, s in picked if "N_SAMPLES =" in s)
    with meta_default(monkeypatch) as built:
        ns = _run(picked, {"__name__": "nb07", "display": print}, after={sets: {"N_SAMPLES": 20}})  # Jupyter's display
    assert [f.name for f in built] == ["tiny-t5", "random-llama"]
    assert ns["table"].same.all() and len(ns["table"]) == len(ns["configs"])  # greedy identity, one prompt each
    assert set(ns["emp"]) == {"AR", "CSD, l=3", "CSD naive, l=3"} and all(abs(e.sum() - 1) < 1e-9 for e in ns["emp"].values())


def _solution_parts(name: str, parts: set[int] | None = None) -> list[tuple[str, str]]:
    """A solution's setup (before its first ``# 1.``) and its numbered parts in ``parts`` (None: all), as sources."""
    path = ROOT / "solutions" / name
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines()
    heads = [(i + 1, int(m.group(1))) for i, ln in enumerate(lines) if (m := re.match(r"# (\d)\. ", ln))]
    out = []
    for node in ast.parse(src).body:
        part = max((n for line, n in heads if line < node.lineno), default=0)
        if part == 0 or parts is None or part in parts:
            out.append((f"{name} part {part}", "\n" * (node.lineno - 1) + ast.get_source_segment(src, node)))
    return out


def test_solution_00(short, monkeypatch, capsys):
    with meta_default(monkeypatch) as built:
        _run(_solution_parts("00_start_here.py"), {"__name__": "sol00"})
    assert [f.name for f in built] == ["tiny-t5"]
    assert "ex4 tiny-t5" in capsys.readouterr().out


def test_solution_07_tensor_parts(short, monkeypatch, capsys):
    """Its setup (a toy family), part 3 (tensors it builds itself) and part 4 (a loaded family); parts 1 and 2
    sample hundreds of times per method, the notebook test above runs that code small."""
    with meta_default(monkeypatch) as built:
        _run(_solution_parts("07_lossless.py", {3, 4}), {"__name__": "sol07"})
    assert [f.name for f in built] == ["random-llama", "tiny-t5"]
    out = capsys.readouterr().out
    assert "ex3 l=2.00: P(emit x) = 0.600" in out
    assert "identical: csd return AR's tokens" in out


def test_step_latency_feeds_the_model_on_its_device():
    from csd_lib.families.toy import toy_model
    from csd_lib.zoo.card import step_latency
    for arch in ("llama", "t5"):
        model = toy_model(arch, 48, "small", 0, torch.float32)
        hook = model.register_forward_pre_hook(_check_inputs, with_kwargs=True)
        torch.set_default_device("meta")
        try:
            s = step_latency(model, n_cache=8, n_new=2, n_prompt=4, warmup=1, reps=3, blocks=1)
        finally:
            torch.set_default_device(None)
            hook.remove()
        assert 0 < s < 10

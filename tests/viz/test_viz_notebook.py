"""csd_lib.viz.notebook.setup_notebook: threads for the tiny families, the plotly renderer, no loading bars."""
import plotly.io as pio
import pytest
import torch

from csd_lib import config
from csd_lib.viz.notebook import setup_notebook


@pytest.fixture(autouse=True)
def restore():
    threads, renderer = torch.get_num_threads(), pio.renderers.default
    yield
    torch.set_num_threads(threads)
    pio.renderers.default = renderer


def test_tiny_families_get_one_thread(monkeypatch):
    monkeypatch.setattr(config, "PLOTLY_RENDERER", None)
    torch.set_num_threads(2)
    setup_notebook("flan-t5")
    assert torch.get_num_threads() == 2  # a real family keeps torch's threads
    setup_notebook("tiny-llama")
    assert torch.get_num_threads() == 1


def test_renderer_from_the_environment(monkeypatch):
    pio.renderers.default = "json"
    monkeypatch.setattr(config, "PLOTLY_RENDERER", None)
    setup_notebook()
    assert pio.renderers.default == "json"  # unset: plotly's own choice stays
    monkeypatch.setattr(config, "PLOTLY_RENDERER", "notebook")
    setup_notebook()
    assert pio.renderers.default == "notebook"


def test_weight_loading_bars_hidden_download_bars_kept():
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars
    from transformers.utils import logging as hf_logging
    enable_progress_bars()
    hf_logging.enable_progress_bar()
    try:
        setup_notebook()
        assert not hf_logging.is_progress_bar_enabled()
        assert not are_progress_bars_disabled()
    finally:
        hf_logging.enable_progress_bar()
        enable_progress_bars()


def test_show_in_output_sets_one_output_and_never_displays_outside(monkeypatch):
    import ipywidgets as w
    import plotly.graph_objects as go
    import plotly.io as pio
    from csd_lib.viz import show_in_output
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a))
    out = w.Output()
    for renderer in ("plotly_mimetype", "notebook"):
        monkeypatch.setattr(pio.renderers, "default", renderer)
        show_in_output(out, go.Figure(go.Bar(y=[1, 2])))
        show_in_output(out, go.Figure(go.Bar(y=[3, 4])))  # replaces, never appends
        (only,) = out.outputs
        data = only["data"]
        assert "application/vnd.plotly.v1+json" in data or "Plotly.newPlot" in data.get("text/html", "")
        assert "3" in str(data) and only["output_type"] == "display_data"
    show_in_output(out, "plain text")
    assert [o["data"]["text/plain"] for o in out.outputs] == ["'plain text'"]
    assert shown == []


def test_load_task_notes_quiet_in_notebooks_warnings_kept(capsys):
    import logging

    from csd_lib import load_task
    tasks_log = logging.getLogger("csd_lib.families.tasks")
    level = tasks_log.level
    try:
        tasks_log.setLevel(logging.NOTSET)
        load_task("synth-gsm8k", "test", n=1)
        assert "load_task:" in capsys.readouterr().err  # the CLI's default: the note shows
        setup_notebook()
        load_task("synth-gsm8k", "test", n=1)
        assert "load_task:" not in capsys.readouterr().err
        tasks_log.warning("load_task: a warning")
        assert "a warning" in capsys.readouterr().err
    finally:
        tasks_log.setLevel(level)

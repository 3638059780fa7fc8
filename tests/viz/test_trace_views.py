"""Trace views, live panel and MaG replays of notebooks 00-03 (random tiny families, fast)."""
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from csd_lib import generate, random_family, viz
from csd_lib.teach.replay import mag_proposer, prompt_lookup_proposer, replay, replay_summary
from csd_lib.engine.mag import BIGRAM, MATCH, MaG

PROMPT = [5, 6, 7, 8, 5, 6, 9, 10, 5, 6]


@pytest.fixture(scope="module")
def fam():
    return random_family("t5", vocab_size=32, n_drafters=2, seed=3, drafter_is_target=True)


@pytest.fixture(scope="module")
def csd(fam):
    return generate(fam, PROMPT, "csd", max_new_tokens=40)


def test_token_origins_cover_every_token_once(csd):
    origins = viz.token_origins(csd)
    assert len(origins) == len(csd.token_ids)
    assert all(o["step"] is not None for o in origins)
    top = [e for e in csd.events if e.depth == 0]
    for o, prov in zip(origins, csd.provenance):
        assert (o["how"] == "appended") == prov.startswith("target")
        if o["how"] == "accepted":
            assert 0 <= o["prob"] <= 1
    assert max(o["step"] for o in origins) == len(top) - 1


def test_trace_html_spans_carry_level_colours(fam, csd):
    h = viz.trace_html(csd, fam.tokenizer)
    assert h.startswith('<div class="csd-trace"')
    spans = re.findall(r'<span class="csd-tok" data-level="([^"]+)"[^>]*background-color:(#[0-9a-f]{6})', h)
    assert len(spans) == len(csd.token_ids)
    assert [lv for lv, _ in spans] == csd.provenance
    assert all(viz.LEVEL_COLORS[lv] == col for lv, col in spans)
    decos = re.findall(r'<span class="csd-tok" data-level="([^"]+)"[^>]*text-decoration:([a-z ]+) #', h)
    assert len(decos) == len(spans) and all(viz.LEVEL_UNDERLINE[lv] == d for lv, d in decos)


def test_save_trace_html_is_atomic_and_standalone(fam, csd, tmp_path):
    path = tmp_path / "sub" / "trace.html"
    viz.save_trace_html(csd, fam.tokenizer, path)
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and 'id="csd-trace"' in text and "csd-tok" in text
    assert not list(path.parent.glob("*.tmp"))


def test_trace_figure_replays_every_target_review(fam, csd):
    fig = viz.trace_figure(csd, fam.tokenizer)
    assert isinstance(fig, go.Figure)
    steps = fig.layout.sliders[0].steps
    top = [e for e in csd.events if e.depth == 0]
    assert len(steps) == 1 + len(top) and steps[0].label == "all"
    n = len(fig.data)
    for st in steps:
        vis = st.args[0]["visible"]
        assert len(vis) == n and any(vis)
    # the "all" view shows every output token, coloured by its level
    out = [t for t in fig.data if t.name == "output"][0]
    assert len(out.x) == len(csd.token_ids)
    assert list(out.marker.color) == [viz.level_color(p) for p in csd.provenance]
    assert viz.trace_figure(csd, fam.tokenizer, max_steps=2).layout.sliders[0].steps.__len__() == 3


ROWS = [PROMPT, [13, 28, 3], [20, 21, 22, 23, 24, 25]]  # mixed lengths


@pytest.fixture(scope="module")
def batch(fam):
    from csd_lib.engine.batch import generate_batch
    return generate_batch(fam, ROWS, "csd", batch_size=3, max_new_tokens=20)


def test_a_row_of_a_batch_is_drawn_like_batch_1(fam, batch):
    """Each row's trace is batch 1's trace of that row (same boxes, colours, replay), titled with its row and prompt."""
    for r, g in enumerate(batch):
        assert viz.batch_row(batch, r) is g
        one, fig = viz.trace_figure(g, fam.tokenizer), viz.row_trace_figure(batch, fam.tokenizer, r, ROWS)
        assert [t.to_plotly_json() for t in fig.data] == [t.to_plotly_json() for t in one.data]
        prompt = fam.tokenizer.decode(ROWS[r], skip_special_tokens=True)
        title = fig.layout.title.text
        assert title.startswith(f'row {r} of 3, prompt "{prompt}": ') and title.endswith(one.layout.title.text)
        steps = fig.layout.sliders[0].steps
        assert len(steps) == 1 + sum(e.depth == 0 for e in g.events)  # the replay follows this row's reviews
        assert all(st.args[1]["title.text"] == f"row {r}: " + o.args[1]["title.text"]
                   for st, o in zip(steps[1:], one.layout.sliders[0].steps[1:]))
        h = viz.row_trace_html(batch, fam.tokenizer, r, ROWS)
        assert f'data-row="{r}"' in h and f"row {r} of 3, prompt &quot;{prompt}&quot;" in h
        spans = re.findall(r'<span class="csd-tok" data-level="([^"]+)"', h)
        assert spans == g.provenance and 'data-row' not in viz.trace_html(g, fam.tokenizer)
    assert len({tuple(g.provenance) for g in batch}) == len(batch)  # the rows differ: each trace is its own


def test_a_row_out_of_range_is_refused_in_one_line(fam, batch):
    for bad in (3, -1, 1.0, True, "0"):
        with pytest.raises(ValueError, match=r"^row .* is not a row of this batch: it has 3 rows, numbered 0 to 2$"):
            viz.row_trace_html(batch, fam.tokenizer, bad, ROWS)
    with pytest.raises(ValueError, match="2 prompts for a batch of 3 rows"):
        viz.row_trace_figure(batch, fam.tokenizer, 0, ROWS[:2])
    long = ["w5 " * 40, "w6", "w7"]
    assert viz.row_label(batch, 0, long, fam.tokenizer).endswith('\u2026"') and len(viz.row_label(batch, 0, long, fam.tokenizer)) < 90


def test_trace_views_of_ar_and_special_tokens(fam):
    g = generate(fam, PROMPT, "ar", max_new_tokens=8)
    fig = viz.trace_figure(g, fam.tokenizer)
    assert len(fig.layout.sliders[0].steps) == 1 + len(g.token_ids)
    assert viz.trace.esc("</s>") == "&lt;/s&gt;"  # plotly would swallow a raw tag


def test_stats_html_identity_row(fam, csd):
    ar = generate(fam, PROMPT, "ar", max_new_tokens=40)
    h = viz.stats_html(csd, ar)
    assert "identical to AR (greedy)</th><td>yes" in h
    s = generate(fam, PROMPT, "csd", temperature=1.0, seed=0, max_new_tokens=10)
    assert "n/a (sampling" in viz.stats_html(s, ar)


def test_figures_build(fam, csd):
    ar = generate(fam, PROMPT, "ar", max_new_tokens=40)
    assert isinstance(viz.calls_figure({"ar": ar, "csd": [csd, csd]}), go.Figure)
    assert viz.total_calls([csd, csd])["target"] == 2 * csd.stats.calls["target"]
    merged = viz.merged_acceptance([csd, csd])
    for key, ps in csd.stats.acceptance.items():
        assert merged[key].reached == [2 * r for r in ps.reached]
    assert isinstance(viz.pair_acceptance_figure({"csd": csd}), go.Figure)
    assert isinstance(viz.cor44_figure(0.7, 0.6, 0.2, 10), go.Figure)
    curve = {"unconditional": [0.8, 0.6, 0.5], "conditional": [0.8, 0.75, 0.8], "alpha": 0.78}
    assert isinstance(viz.acceptance_figure({"small->target": curve}), go.Figure)
    assert isinstance(viz.mag_hits_figure([dict(variant="a", hit_rate=0.3, mean_accepted=0.8)]), go.Figure)
    assert isinstance(viz.match_length_figure({"x": [0, 1, 2, 2, 30]}), go.Figure)
    h = viz.mag_step_html(fam.tokenizer, PROMPT, [5, 6], fam.mag, truth=[7, 8])
    assert "csd-mag-suffix" in h and "csd-mag-src" in h and "csd-tok" in h


def _ids(rng, n, v=8):
    return rng.integers(3, v, size=n).tolist()


def test_replay_mag_dominates_match_only():
    rng = np.random.default_rng(0)
    mag = MaG(rng.integers(3, 8, size=8).astype(np.int32), n=10)
    full, only = mag_proposer(mag), mag_proposer(mag, fallback=False)
    for _ in range(20):
        x, y = _ids(rng, 12), _ids(rng, 15)
        a, b = replay(full, x, y), replay(only, x, y)
        assert all(r["accepted"] >= s["accepted"] for r, s in zip(a, b))
        assert all(r["proposed"] == 10 for r in a)
    s = replay_summary(a, "mag")
    assert 0 <= s["hit_rate"] <= 1 and s["no_proposal"] == 0
    bigram = mag_proposer(mag, match=False)(np.array([3, 4]))
    assert bigram.provenance == [BIGRAM] * 10 and bigram.match_len == 0
    with pytest.raises(ValueError):
        mag_proposer(mag, match=False, fallback=False)


def test_replay_counts_an_exact_copy():
    mag = MaG(np.full(16, 3, dtype=np.int32), n=4)
    rows = replay(mag_proposer(mag), [5, 6, 7, 8, 9], [5, 6, 7, 8, 9])
    assert rows[1]["accepted"] == 4 and rows[1]["match_len"] >= 1
    assert rows[1]["from_match"] == 4


def test_prompt_lookup_matches_transformers():
    """Our re-implementation proposes what HF's PromptLookupCandidateGenerator proposes."""
    import torch
    from transformers.generation.candidate_generator import PromptLookupCandidateGenerator
    rng = np.random.default_rng(1)
    for n, ng in [(10, 2), (3, 1), (5, 3)]:
        hf = PromptLookupCandidateGenerator(num_output_tokens=n, max_matching_ngram_size=ng, max_length=10_000)
        ours = prompt_lookup_proposer(n, ng)
        for _ in range(40):
            hay = np.array(_ids(rng, int(rng.integers(2, 30)), v=7))
            cand, _ = hf.get_candidates(torch.tensor([hay.tolist()]))
            want = cand[0, len(hay):].tolist()
            got = ours(hay)
            assert got.tokens == want
            assert got.provenance == [MATCH] * len(want)

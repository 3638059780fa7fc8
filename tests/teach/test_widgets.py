"""The live panel without a browser: set widget values in code, read the readouts."""
import re

import pytest

from csd_lib import generate, load_family, random_family, viz
from csd_lib.teach.panel import SAMPLE_TEMPERATURE, pair_acceptance, parse_k, run_diff

ipywidgets = pytest.importorskip("ipywidgets")
from csd_lib.viz.rounds import round_events  # noqa: E402
from csd_lib.teach.panel import k_labels, live_panel  # noqa: E402

PROMPT = "w5 w6 w7 w5 w6"


@pytest.fixture
def agreeing():
    """Drafters that are the target: lenient draft-to-draft reviews accept the same tokens at any l."""
    return random_family("t5", vocab_size=32, n_drafters=2, seed=3, drafter_is_target=True)


def _hint(msg):
    return msg.split("):", 1)[1]


def test_parse_k_rejects_letters_and_fractions_like_negatives():
    assert parse_k([["5", "1", "10"], ["", " 2", "+3"], ["", "", "10"]]) == [[5, 1, 10], [0, 2, 3], [0, 0, 10]]
    msgs = {}
    for bad in ("a", "1.5", "", "-1"):
        with pytest.raises(ValueError) as e:
            parse_k([[bad, "10"], ["0", "10"]])
        msgs[bad] = str(e.value)
    assert "(negative)" in msgs["-1"] and all("(not an integer)" in msgs[b] for b in ("a", "1.5", ""))
    assert len({_hint(m) for m in msgs.values()}) == 1  # one message, whatever the mistake


def test_panel_k_cells_report_letters_and_redraw_the_tree(agreeing):
    p = live_panel(agreeing, PROMPT, max_new_tokens=12)
    assert p.runs == 1 and p.error.value == ""
    assert str(agreeing.default_k) in p.tree_figure.layout.title.text
    p.k_cells[0][0].value = "x"
    assert "not an integer" in p.error.value and p.runs == 1
    letter = _hint(re.sub(r"<[^>]+>", "", p.error.value))
    p.k_cells[0][0].value = -2  # code may still assign numbers
    assert "negative" in p.error.value and _hint(re.sub(r"<[^>]+>", "", p.error.value)) == letter
    p.k_cells[0][0].value = "1.5"
    assert "not an integer" in p.error.value and p.runs == 1
    p.k_cells[0][0].value = "7"
    assert p.error.value == "" and p.runs == 2
    k = [row[:] for row in agreeing.default_k]
    k[0][0] = 7
    assert [list(row) for row in p.last.plan.k] == k and str(k) in p.tree_figure.layout.title.text
    assert "K " in p.diff.value and "\u2192" in p.diff.value


def test_a_change_that_moves_nothing_says_only_timing_moved(agreeing):
    p = live_panel(agreeing, PROMPT, max_new_tokens=12)
    assert "first run" in p.diff.value
    p.controls["lenience"].value = agreeing.default_lenience + 3
    d = run_diff(p.last, p.previous)
    assert d["only_timing"] and d["tokens_changed"] == 0 and d["level_changed"] == 0
    assert "altered no token" in p.diff.value and "timing noise" in p.diff.value
    assert "lenience" in p.diff.value and "tokens different from greedy AR: <b>0</b>" in p.diff.value
    # a K change that moves the calls is reported as such, without the noise sentence
    p.k_cells[0][0].value = str(agreeing.default_k[0][0] + 4)
    d = run_diff(p.last, p.previous)
    assert d["calls_changed"] and not d["only_timing"]
    assert "altered no token" not in p.diff.value
    for m, (a, b) in d["calls_changed"].items():
        assert f"{m} {a} \u2192 {b}" in p.diff.value


def test_pairs_show_this_run_beside_the_previous(agreeing):
    p = live_panel(agreeing, PROMPT, max_new_tokens=12)
    p.k_cells[0][0].value = "0"  # the target's blocks now start with small
    cur, prev = pair_acceptance(p.last), pair_acceptance(p.previous)
    assert cur and cur != prev
    for key, (a, r) in cur.items():
        ps = p.last.stats.acceptance[key]
        assert (a, r) == (sum(ps.accepted), sum(ps.reached))
        row = re.search(rf"<td>{re.escape(key.replace('<', '&lt;'))}</td><td>([^<]*)</td><td>([^<]*)</td>", p.pairs.value)
        assert row and row.group(1) == f"{a}/{r} = {a / r:.2f}"
        pa = prev.get(key)
        assert row.group(2) == (f"{pa[0]}/{pa[1]} = {pa[0] / pa[1]:.2f}" if pa and pa[1] else "-")


def test_sample_mode_uses_the_default_temperature_and_ar_runs_once(agreeing, monkeypatch):
    import csd_lib.teach.panel as wmod
    calls = []
    real = wmod.generate
    monkeypatch.setattr(wmod, "generate", lambda fam, text, m, **kw: calls.append(m) or real(fam, text, m, **kw))
    p = live_panel(agreeing, PROMPT, max_new_tokens=12)
    assert p.controls["temperature"].disabled and p.last.plan.temperature == 0.0
    p.controls["decoding"].value = "sample"
    assert not p.controls["temperature"].disabled
    assert p.last.plan.temperature == SAMPLE_TEMPERATURE == p.controls["temperature"].value
    p.controls["seed"].value = 1
    p.controls["lenience"].value = 3.0
    assert calls.count("ar") == 1 and p.runs == 4  # greedy AR once per prompt and length
    p.controls["max_new_tokens"].value = 10
    assert calls.count("ar") == 2
    assert f"tokens different from greedy AR: <b>{run_diff(p.last, ar=generate(agreeing, PROMPT, 'ar', max_new_tokens=10))['vs_ar']}</b>" in p.diff.value


def test_panel_keeps_reporting_other_errors(agreeing):
    p = live_panel(agreeing, PROMPT, max_new_tokens=12)
    p.controls["method"].value = "staged"  # staged ignores the panel's lenience instead of failing
    assert p.error.value == "" and p.runs == 2
    p.controls["prompt"].value = "   "
    assert "empty" in p.error.value


def test_live_panel_one_drafter_family():
    f = random_family("llama", vocab_size=32, n_drafters=1, seed=2)
    assert k_labels(f) == (["target", "small"], ["small", "mag"])
    p = live_panel(f, PROMPT, max_new_tokens=8)
    assert p.error.value == "" and "csd-tok" in p.trace.value
    assert [r["reviewer"] for r in viz.cascade_tree(f)["rows"]] == ["target", "small"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny-t5", "tiny-llama"])
def test_default_sample_temperature_visibly_changes_the_text(name):
    from csd_lib.teach.panel import _default_prompt
    fam = load_family(name)
    prompt = _default_prompt(fam)
    greedy = generate(fam, prompt, "csd", max_new_tokens=64).token_ids
    differ = [generate(fam, prompt, "csd", temperature=SAMPLE_TEMPERATURE, seed=s, max_new_tokens=64).token_ids
              != greedy for s in range(5)]
    assert all(differ), f"{name}: temperature {SAMPLE_TEMPERATURE} left seeds {differ} equal to greedy"


# -- the round stepper: one target round unrolled (viz.round_figure) -------------------------

def _tops(g):
    return [e for e in g.events if e.depth == 0]


def _assert_figure_is_round(fig, g, r):
    """``fig`` draws exactly the reviews of target round ``r`` (1-based): one row each, every token boxed."""
    evs = round_events(g, r - 1)
    assert fig.layout.title.text.startswith(f"{g.method}, target round {r} of {len(_tops(g))}:")
    ticks = fig.layout.yaxis.ticktext
    assert len(ticks) == len(evs)
    start = evs[-1].start
    for y, (t, e) in enumerate(zip(ticks, evs)):
        assert t.startswith(f"{e.reviewer} reviews {'+'.join(dict.fromkeys(e.proposers)) or 'nothing'}")
        drafted = [b for b in fig.data if b.y[0] == y and b.marker.line.width != 3.5]
        assert [round(b.base[0] - 0.04) for b in drafted] == [e.start - start + j for j in range(len(e.tokens))]
        assert sum(b.opacity == 0.4 for b in drafted) == len(e.tokens) - e.n_accepted


def test_round_stepper_spans_the_target_rounds_and_draws_each(monkeypatch):
    import csd_lib.teach.panel as wmod
    drawn = []
    monkeypatch.setattr(wmod, "round_figure", lambda g, tok, r: drawn.append(r) or viz.round_figure(g, tok, r))
    f = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    p = live_panel(f, PROMPT, max_new_tokens=8)
    tops = _tops(p.last)
    assert p.n_rounds == len(tops) == p.last.stats.calls["target"] >= 3
    assert (p.round_slider.min, p.round_slider.max) == (1, len(tops))
    first = next(i for i, e in enumerate(tops) if e.n_accepted < len(e.tokens)) + 1
    assert p.round_slider.value == first and drawn == [first - 1]   # starts where the target rejected
    runs = p.runs
    for r in [*range(1, len(tops) + 1), 2]:
        p.round_slider.value = r
        _assert_figure_is_round(p.round_figure, p.last, r)
        assert f"round <b>{r}</b> of {len(tops)}" in p.round_label.value
        assert p.round_prev.disabled == (r == 1) and p.round_next.disabled == (r == len(tops))
    assert p.runs == runs and len(drawn) == len(tops) + 1   # stepping draws, it never reruns generate
    p.round_next.click()
    assert p.round_slider.value == 3 and "target round 3 of" in p.round_figure.layout.title.text
    p.round_prev.click()
    p.round_prev.click()
    assert p.round_slider.value == 1
    p.round_prev.click()   # already at the first round: stays
    assert p.round_slider.value == 1 and len(drawn) == len(tops) + 4


def test_round_stepper_follows_reruns_and_clamps(agreeing):
    p = live_panel(agreeing, PROMPT, max_new_tokens=12)
    p.k_cells[0][0].value = "0"   # shorter target blocks: more rounds
    many = p.n_rounds
    assert many == len(_tops(p.last)) >= 3 and p.round_slider.max == many
    p.round_slider.value = many
    _assert_figure_is_round(p.round_figure, p.last, many)
    before = p.round_figure
    p.controls["lenience"].value = agreeing.default_lenience + 1   # a rerun keeps the round, redraws it
    assert p.n_rounds == many and p.round_slider.value == many and p.round_figure is not before
    _assert_figure_is_round(p.round_figure, p.last, many)
    p.k_cells[0][0].value = "10"  # longer target blocks: fewer rounds, the slider clamps
    few = len(_tops(p.last))
    assert few < many and p.n_rounds == few == p.round_slider.max == p.round_slider.value
    _assert_figure_is_round(p.round_figure, p.last, few)
    assert p.round_next.disabled and f"of {few}" in p.round_label.value
    p.controls["method"].value = "ar"   # AR: one round per token, the target writing alone
    n = len(p.last.token_ids)
    assert p.n_rounds == n == p.round_slider.max and p.round_slider.value == few
    assert p.round_figure.layout.yaxis.ticktext == ("target reviews nothing",)


def test_mag_rule_control_reaches_the_plan_and_the_readout(agreeing):
    from csd_lib.engine.plan import MAG_LENIENCE
    p = live_panel(agreeing, PROMPT, max_new_tokens=12)
    rule = p.controls["mag_lenience"]
    assert "csd-mag-lenience" in rule._dom_classes and rule.value is MAG_LENIENCE
    assert p.last.plan.mag_lenience is MAG_LENIENCE
    tree = p.tree_figure.to_json()
    rule.value = not MAG_LENIENCE
    assert p.runs == 2 and p.last.plan.mag_lenience is (not MAG_LENIENCE)
    assert p.tree_figure.to_json() != tree  # the Algorithm-1 picture redraws MaG's edges under the new rule
    assert f"mag_lenience {MAG_LENIENCE} \u2192 {not MAG_LENIENCE}" in p.diff.value
    p.controls["method"].value = "sd"   # the rule is csd's: sd's plan keeps the default
    assert p.error.value == "" and p.last.plan.mag_lenience is MAG_LENIENCE


def test_the_panel_displays_as_its_box(agreeing):
    p = live_panel(agreeing, PROMPT, max_new_tokens=12)
    assert isinstance(p.box, ipywidgets.VBox) and "csd-live-panel" in p.box._dom_classes
    bundle = p._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == p.box.model_id


def test_csd_tree_is_offered_on_decoder_only_families_only():
    from csd_lib.teach.panel import panel_methods
    llama = random_family("llama", vocab_size=32, n_drafters=1, seed=2)
    t5 = random_family("t5", vocab_size=32, n_drafters=1, seed=2)
    assert "csd-tree" in panel_methods(llama) and "csd-tree" not in panel_methods(t5)
    p = live_panel(llama, PROMPT, max_new_tokens=12)
    assert p.method_note.value == ""
    p.controls["method"].value = "csd-tree"
    assert p.error.value == "" and p.last.plan.method == "csd-tree"
    assert any(e.parents for e in p.last.events if e.depth == 0)  # a tree was verified
    assert "identical to AR (greedy)</th><td>yes" in p.stats.value
    p.k_cells[0][0].value = 3                                      # K applies to csd-tree too
    assert p.last.plan.k[0][0] == 3 and "K [[3" in p.stats.value
    q = live_panel(t5, PROMPT, max_new_tokens=8)
    assert "csd-tree" not in q.controls["method"].options and "encoder-decoder" in q.method_note.value
    with pytest.raises(ValueError, match="decoder-only"):
        live_panel(t5, PROMPT, method="csd-tree")


# -- batches: the batch-size control and the row picker ----------------------------------------

def test_batch_prompts_lead_with_the_panel_prompt_and_mix_lengths(agreeing):
    from csd_lib.teach.panel import batch_prompts
    assert batch_prompts(agreeing, PROMPT, 1) == [PROMPT]
    assert batch_prompts(agreeing, PROMPT, 6) == [PROMPT, "w5 w6 w7 w5", "w5 w6 w7", "w5 w6", "w5", "w5 w6 w7 w5"]
    fam = load_family("tiny-t5")
    from csd_lib.families.tasks import load_task
    rows = batch_prompts(fam, "w", 4)
    assert rows == ["w"] + [e.prompt for e in load_task(fam.task, "test", 3)] and len(set(map(len, rows))) == 4


def test_row_picker_shows_each_row_and_the_stepper_follows_it(monkeypatch):
    import csd_lib.teach.panel as wmod
    f = random_family("llama", vocab_size=40, n_drafters=2, seed=1)
    p = live_panel(f, PROMPT, max_new_tokens=8)
    one = p.last
    assert p.batch == [one] and p.row_picker.layout.display == "none" and "data-row" not in p.trace.value
    assert p.controls["batch_size"].value == 1 and "batch_size" not in p.stats.value
    shown = []
    monkeypatch.setattr(wmod, "trace_html", lambda g, tok, title=None, row=None: shown.append((g, row)) or
                        viz.trace_html(g, tok, title, row))
    p.controls["batch_size"].value = 3
    assert p.runs == 2 and len(p.batch) == 3 and p.prompts == wmod.batch_prompts(f, PROMPT, 3)
    assert p.row_picker.layout.display is None and p.row_picker.options == tuple(
        (viz.row_label(p.batch, r, p.prompts, f.tokenizer, width=50), r) for r in range(3))
    assert p.batch[0].token_ids == one.token_ids and p.last is p.batch[0] and p.previous is one
    assert "batch_size 1 \u2192 3" in p.diff.value and "row 0 of 3, prompt &quot;w5 w6 w7 w5 w6&quot;" in p.trace.value
    assert "timing noise" not in p.diff.value  # the same tokens, but the row's calls now serve a batch
    assert len({tuple(g.token_ids) for g in p.batch}) == 3 and len({len(_tops(g)) for g in p.batch}) > 1
    for r in (2, 1, 2):
        runs, n = p.runs, len(shown)
        p.row_picker.value = r
        g = p.batch[r]
        assert p.runs == runs and p.row == r and p.last is g and shown[n:] == [(g, r)]  # no rerun, one redraw
        assert re.findall(r'class="csd-tok" data-level="([^"]+)"', p.trace.value) == g.provenance
        assert f'data-row="{r}"' in p.trace.value and f"row {r} of 3" in p.trace.value
        assert "identical to AR (greedy)</th><td>yes" in p.stats.value
        assert p.n_rounds == len(_tops(g)) == p.round_slider.max >= p.round_slider.value
        _assert_figure_is_round(p.round_figure, g, p.round_slider.value)
        p.round_slider.value = p.n_rounds
        _assert_figure_is_round(p.round_figure, g, p.n_rounds)
    p.controls["lenience"].value = f.default_lenience + 1  # a rerun keeps the row; previous is that row's last run
    assert p.row == 2 and p.previous is not None and p.last is p.batch[2] and p.previous.token_ids == p.last.token_ids
    p.controls["batch_size"].value = 2  # fewer rows: the row clamps
    assert p.row == 1 and p.last is p.batch[1] and len(p.row_picker.options) == 2
    p.controls["batch_size"].value = 1
    assert p.row == 0 and p.row_picker.layout.display == "none" and "data-row" not in p.trace.value
    assert p.last.token_ids == one.token_ids and "batch_size 2 \u2192 1" in p.diff.value


def test_a_row_out_of_range_is_refused_in_one_line(agreeing):
    p = live_panel(agreeing, PROMPT, max_new_tokens=8)
    p.controls["batch_size"].value = 2
    p.pick_row(1)
    last, runs = p.last, p.runs
    for bad in (2, -1, "1"):
        p.pick_row(bad)
        msg = re.sub(r"<[^>]+>", "", p.error.value)
        assert msg.count("\n") == 0 and "is not a row of this batch: it has 2 rows, numbered 0 to 1" in msg
        assert p.last is last and p.row == 1 and p.runs == runs  # nothing lost
    p.pick_row(0)
    assert p.error.value == "" and p.last is p.batch[0]


def test_a_batched_tree_method_is_an_error_readout():
    f = random_family("llama", vocab_size=32, n_drafters=1, seed=2)
    p = live_panel(f, PROMPT, method="csd-tree", max_new_tokens=8)
    p.controls["batch_size"].value = 2
    assert "token tree, which batched generation does not run" in p.error.value and p.runs == 1

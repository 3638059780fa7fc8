"""csd_lib.viz.trace on a hand-built generation: two target reviews, every token's origin known."""
import plotly.graph_objects as go

from csd_lib.engine.generation import TARGET_BONUS, TARGET_CORRECTION, Event, Generation
from csd_lib.engine.plan import Plan
from csd_lib.engine.stats import Stats
from csd_lib.families.toy import toy_tokenizer
from csd_lib.viz.palette import LEVEL_COLORS, LEVEL_ORDER
from csd_lib.viz.trace import (save_trace_html, stats_html, token_origins, token_pieces, trace_figure, trace_html,
                               trace_text)

TOK = toy_tokenizer(16, seq2seq=False)  # word wN is token N
IDS = [5, 6, 7, 8, 10]
PROV = ["small", "small", TARGET_CORRECTION, "small", TARGET_BONUS]


def make_generation(ids=IDS, temperature=0.0, wall=0.5):
    # review 1: small drafted 5 6 9, the target kept 5 6 and wrote 7; review 2: it kept 8 and added 10
    events = [Event(0, 0, "target", 0, [5, 6, 9], ["small"] * 3, ["small"] * 3, [1.0, 0.8, 0.1], 2, 7, False, 1.0),
              Event(1, 1, "small", 3, [], [], [], [], 0, 8, False, 1.0),  # a drafter's own step: depth 1
              Event(2, 0, "target", 3, [8], ["small"], ["small"], [0.9], 1, 10, True, 1.0)]
    stats = Stats(len(ids), wall, {"target": 2, "small": 4}, {"target": 0.2, "small": 0.1},
                  {"target": 100, "small": 10}, {}, previous_work_costs={"target": 1.0, "small": 0.02})
    return Generation(TOK.decode(ids), list(ids), list(PROV), events, stats, "sd", Plan.sd(3, temperature=temperature))


G = make_generation()


def test_token_pieces_concatenate_to_the_text():
    pieces = token_pieces(G, TOK)
    assert pieces == ["w5", " w6", " w7", " w8", " w10"] and "".join(pieces) == G.text


def test_token_origins_by_hand():
    o = token_origins(G)
    assert [(x["step"], x["how"]) for x in o] == [(0, "accepted"), (0, "accepted"), (0, "appended"),
                                                  (1, "accepted"), (1, "appended")]
    assert [x["prob"] for x in o] == [1.0, 0.8, None, 0.9, None]
    assert o[2]["replaced"] == 0.1 and o[4]["replaced"] is None  # 7 replaced the draft 9; 10 was a bonus
    assert all(x["reviewer"] == "target" for x in o)


def test_trace_text_plain_and_coloured():
    plain = trace_text(G, TOK, color=False)
    assert plain == ("[w5|small][ w6|small][ w7|target-correction][ w8|small][ w10|target-bonus]\n"
                     "legend: " + ", ".join(LEVEL_ORDER))
    coloured = trace_text(G, TOK)
    assert coloured.count("\x1b[0m") == len(IDS) + len(LEVEL_ORDER) and "[w5|" not in coloured


def test_trace_figure_traces_and_slider():
    fig = trace_figure(G, TOK)
    assert isinstance(fig, go.Figure)
    names = [t.name for t in fig.data]
    # legend: the 3 levels present (in LEVEL_ORDER) + 2 replay marks; the output; review 1: accepted, rejected,
    # appended; review 2: committed, accepted, appended
    assert names == ["small", TARGET_CORRECTION, TARGET_BONUS, "rejected draft (replay)",
                     "appended by the target (replay)", "output", "step 0: accepted", "step 0: rejected",
                     "step 0: appended", "step 1: committed", "step 1: accepted", "step 1: appended"]
    out = fig.data[5]
    assert list(out.marker.color) == [LEVEL_COLORS[p] for p in PROV] and len(out.x) == len(IDS)
    assert list(fig.data[7].text) == ["<s> w9</s>"]  # the rejected draft, struck
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["all", "1", "2"]
    assert steps[0].args[1]["title.text"] == "sd: 5 tokens, 2 target calls (2.50 tokens/call)"
    assert steps[1].args[1]["title.text"] == "review 1/2 by target: 3 drafted, 2 accepted, +1 correction"
    assert steps[2].args[1]["title.text"] == "review 2/2 by target: 1 drafted, 1 accepted, +1 bonus"
    vis = steps[1].args[0]["visible"]
    assert [n for n, v in zip(names, vis) if v] == names[:5] + names[6:9]


def test_trace_figure_max_steps():
    fig = trace_figure(G, TOK, max_steps=1, title="mine")
    assert len(fig.layout.sliders[0].steps) == 2 and fig.layout.title.text == "mine"
    assert "(first 1 of 2)" in fig.layout.sliders[0].currentvalue.prefix


def test_trace_html_one_span_per_token(tmp_path):
    h = trace_html(G, TOK)
    assert h.count('<span class="csd-tok"') == len(IDS)
    assert [h.count(f'data-step="{s}"') for s in (0, 1)] == [3, 2]
    assert f"background-color:{LEVEL_COLORS[TARGET_BONUS]}" in h and 'data-n-tokens="5"' in h
    assert "sd: 5 tokens, 2 target calls (2.50 tokens per target call)" in h
    p = tmp_path / "t" / "trace.html"
    save_trace_html(G, TOK, p, title="A <trace>")
    page = p.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<title>A &lt;trace&gt;</title>" in page
    assert h.replace("sd: 5 tokens, 2 target calls (2.50 tokens per target call)", "A &lt;trace&gt;") in page
    assert [x.name for x in p.parent.iterdir()] == ["trace.html"]


def test_stats_html_rows():
    h = stats_html(G)
    assert h.startswith('<table class="csd-stats-table"') and "target 2, small 4" in h
    assert "500 ms" in h
    assert f"{5 / (2 + 4 * 0.1):.2f}x" in h  # SWI model size: 5 tokens over 2 + 4 x 0.1
    assert f"{5 / (2 + 4 * 0.02):.2f}x" in h  # SWI previous work
    ar = make_generation(wall=1.5)
    assert "identical to AR (greedy)</th><td>yes" in stats_html(G, ar) and "3.00x" in stats_html(G, ar)
    other = make_generation(ids=[5, 6, 7, 8, 11])
    assert "identical to AR (greedy)</th><td>NO" in stats_html(G, other)
    sampled = make_generation(temperature=1.0)
    assert "n/a (sampling" in stats_html(sampled, ar)

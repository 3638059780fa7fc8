"""csd_lib.viz.mag: Max-Gram figures and one MaG call as HTML, on hand-made token sequences."""
import re

import numpy as np
import pytest

from csd_lib.engine.mag import BIGRAM, MATCH, MaG
from csd_lib.families.toy import toy_tokenizer
from csd_lib.viz.mag import mag_hits_figure, mag_step_html, match_length_figure
from csd_lib.viz.palette import LEVEL_COLORS

TOK = toy_tokenizer(16, seq2seq=False)  # word wN is token N
MAG = MaG(np.array([(v + 1) % 16 for v in range(16)], dtype=np.int32), n=3)  # bigram: v -> v + 1


def test_mag_hits_figure_two_bars_per_variant():
    rows = [dict(variant="match", hit_rate=0.25, mean_accepted=0.5), dict(variant="mag", hit_rate=0.5,
                                                                           mean_accepted=1.25, color="#123456")]
    fig = mag_hits_figure(rows)
    assert [(t.x[0], t.y[0]) for t in fig.data] == [("match", 0.25), ("match", 0.5), ("mag", 0.5), ("mag", 1.25)]
    assert [t.text[0] for t in fig.data] == ["0.25", "0.50", "0.50", "1.25"]
    assert fig.data[2].marker.color == fig.data[3].marker.color == "#123456"
    assert fig.data[0].marker.color not in LEVEL_COLORS.values()  # variants never take a level's colour
    assert [t.xaxis for t in fig.data] == ["x", "x2", "x", "x2"]  # hit rate left, tokens per call right


def test_match_length_figure_shares_by_hand():
    fig = match_length_figure({"prompt": [0, 1, 1, 3], "long": [25, 0]})
    a, b = fig.data
    assert list(a.x) == ["0", "1", "2", "3"] and list(a.y) == pytest.approx([0.25, 0.5, 0.0, 0.25])
    assert len(b.x) == 21 and b.x[-1] == "20+" and b.y[0] == 0.5 and b.y[-1] == 0.5  # 25 counts as 20+
    assert sum(b.y) == pytest.approx(1.0) and a.marker.pattern.shape != b.marker.pattern.shape


def test_mag_step_html_a_match_in_the_prompt():
    # hay 5 6 7 | 5 6: the suffix (5, 6) occurred at 0..1; MaG copies what followed: 7 5 6
    h = mag_step_html(TOK, [5, 6, 7], [5, 6], MAG, truth=[7, 5, 9])
    assert "longest suffix match: 2 tokens, found in the prompt (rule &#x27;recent&#x27;)" in h
    assert h.count('class="csd-mag-src"') == 2 and h.count('class="csd-mag-suffix"') == 2
    assert h.count(f"text-decoration:underline 3px {LEVEL_COLORS[MATCH]}") == 3  # the copied source tokens
    props = re.findall(r'data-level="([^"]+)"[^>]*>([^<]*)</span>', h)
    assert props == [(MATCH, " w7 \u2713"), (MATCH, " w5 \u2713"), (MATCH, " w6 \u2717")]
    assert "MaG proposes</b> (3 tokens)" in h


def test_mag_step_html_no_match_is_bigram_fill():
    h = mag_step_html(TOK, [5], [6], MAG)
    assert "no earlier occurrence of the last token: bigram fill only" in h
    props = re.findall(r'data-level="([^"]+)"[^>]*>([^<]*)</span>', h)
    assert [lv for lv, _ in props] == [BIGRAM] * 3 and [t.strip() for _, t in props] == ["w7", "w8", "w9"]
    assert "\u2713" not in h and "\u2717" not in h  # no truth given: no marks

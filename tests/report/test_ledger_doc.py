"""Ledger blocks of a document: rendered from the ledger rows, rebuilt in place, refused when empty."""
import pytest

from csd_lib.report.claims import claim_row
from csd_lib.report.intervals import paired_difference
from csd_lib.report.ledger_doc import _outside_blocks, ledger_block, quoted_rows, render_blocks


def _rows():
    up = paired_difference([1.0, 1.2, 1.1, 1.3], [0.0, 0.1, 0.2, 0.1])
    flat = paired_difference([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0])
    return ([claim_row("gap:a", up, notebook="03", family_name="fam", seed=s) for s in (1, 2, 3)]
            + [claim_row("gap:b", flat, notebook="03", family_name="fam", seed=1),
               claim_row("other", 0.5, notebook="04", family_name="fam", seed=1)])


def test_a_block_counts_verdicts_and_spans_the_values():
    block = ledger_block(_rows(), ["03/gap:*"])
    lines = block.splitlines()
    assert len(lines) == 4  # header, rule, one line per claim and family
    a = next(ln for ln in lines if "`03/gap:a`" in ln)
    assert "| 1-3 |" in a and "higher at 3 of 3 seeds" in a and "+1.050 at every seed" in a
    b = next(ln for ln in lines if "`03/gap:b`" in ln)
    assert "no difference at 1 of 1 seeds" in b and "[" in b  # one seed: its interval is quoted
    assert "04/other" not in block


def test_render_rebuilds_every_block_and_keeps_the_rest():
    doc = "intro 1.5\n<!-- ledger: 04/* -->\nstale 9.99\n<!-- /ledger -->\nend\n"
    out = render_blocks(doc, _rows())
    assert "stale" not in out and "`04/other`" in out and out.startswith("intro 1.5\n") and out.endswith("end\n")
    assert render_blocks(out, _rows()) == out
    assert _outside_blocks(out) == "intro 1.5\n\nend\n"


def test_a_document_without_a_block_or_a_pattern_without_a_claim_is_refused():
    with pytest.raises(ValueError, match="no '<!-- ledger"):
        render_blocks("no block here\n", _rows())
    with pytest.raises(ValueError, match="no claim matching 05/"):
        render_blocks("<!-- ledger: 05/* -->\n<!-- /ledger -->\n", _rows())
    assert len(quoted_rows(_rows(), ["03/*"])) == 4

"""The words that notebooks compute their claims with (csd_lib.claims)."""
import math

import pytest

from csd_lib.claims import compare, paper_k_entries, pct, trend


def test_compare_follows_the_numbers_and_the_tolerance():
    assert compare(2.0, 1.0) == "higher" and compare(1.0, 2.0) == "lower"
    assert compare(1.04, 1.0, tol=0.05) == "about the same"
    assert compare(1.06, 1.0, tol=0.05, more="up") == "up"
    assert compare(math.nan, 1.0, same="n/a") == "n/a"
    with pytest.raises(ValueError, match="tol must be >= 0"):
        compare(1, 2, tol=-1)


def test_trend_compares_the_first_value_with_the_rest():
    assert trend([0.5, 0.8, 0.9]) == "rises"
    assert trend([0.9, 0.5, 0.4]) == "falls"
    assert trend([0.95, 0.94, 0.96, 0.95], tol=0.03) == "stays flat"   # the flat 0.95 curve
    assert trend([0.5, math.nan, 0.9]) == "rises"
    with pytest.raises(ValueError, match="at least two"):
        trend([0.5, math.nan])


def test_pct():
    assert pct(0.125, 1) == "12.5%" and pct(1) == "100%"


def test_paper_notation_of_the_shipped_t5_setting():
    # docs/REFERENCE.md: the official T5 setting [[5,14,10],[0,1,10],[0,0,10]] is k11=5, k12=14, k22=1
    k = [[5, 14, 10], [0, 1, 10], [0, 0, 10]]
    e = {x["name"]: x for x in paper_k_entries(k, ["base", "small"])}
    assert [e[n]["value"] for n in ("k11", "k12", "k13", "k22", "k23", "k33")] == [5, 14, 10, 1, 10, 10]
    assert (e["k12"]["reviewer"], e["k12"]["drafter"]) == ("target", "small")
    assert (e["k22"]["reviewer"], e["k22"]["drafter"]) == ("base", "small")
    assert "k21" not in e   # below the diagonal: never read


def test_paper_notation_rejects_a_k_of_the_wrong_size():
    with pytest.raises(ValueError, match="must be 2x2"):
        paper_k_entries([[1, 2, 3], [0, 1, 2], [0, 0, 1]], ["small"])


def test_readme_side_by_side_table_matches_the_presets():
    """The README's paper-notation table quotes each family's default K: it must be the preset's."""
    import ast
    import re
    from pathlib import Path

    from csd_lib import load_family
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The paper and this workbook side by side", 1)[1].split("\n## ", 1)[0]
    for name in ("tiny-t5", "tiny-llama"):
        row = re.search(rf"^\| `{name}` [^|]*\| `(\[\[.*?\]\])` \|[^|]*\| ([\d.]+) \|", section, re.M)
        assert row, f"README side-by-side table has no row for {name}"
        fam = load_family(name)
        assert ast.literal_eval(row.group(1)) == fam.default_k, f"README quotes an old K for {name}: update the table"
        assert float(row.group(2)) == fam.default_lenience, f"README quotes an old lenience for {name}"

"""Leviathan et al. measured T5, not FLAN-T5: no previous-work table names its source FLAN-T5."""
from csd_lib.families.paper_costs import PREVIOUS_WORK


def test_leviathan_tables_say_t5():
    for name, table in PREVIOUS_WORK.items():
        assert "FLAN-T5" not in table.source, (name, table.source)
        if "Leviathan" in table.source:
            assert "T5" in table.source, (name, table.source)

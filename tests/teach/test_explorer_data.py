"""The explorer's recorded runs: the grid, the keys, and numbers equal to what the engine computes."""
import json

import pytest

from csd_lib import generate, load_family
from csd_lib.families.tasks import load_task
from csd_lib.teach.explorer_data import (FORMAT, Grid, explorer_grid, run_record, setting_key,
                                         write_explorer_data)

TINY = Grid(k11=(2, 4), k12=(5,), k22=(1,), lenience=(1.0, 5.0), mag_rules=(False, True), n_prompts=1,
            max_new_tokens=16, methods=("sd", "csd"))


@pytest.fixture(scope="module")
def recorded():
    return explorer_grid("tiny-t5", TINY)


def test_lattice_replaces_the_three_entries_and_keeps_the_rest():
    default = [[4, 5, 10], [0, 1, 10], [0, 0, 10]]
    ks = Grid(k11=(2, 6), k12=(0,), k22=(1, 3)).ks(default)
    assert [(k[0][0], k[0][1], k[1][1]) for k in ks] == [(2, 0, 1), (2, 0, 3), (6, 0, 1), (6, 0, 3)]
    assert all(k[0][2] == 10 and k[1][2] == 10 and k[2] == [0, 0, 10] for k in ks)
    assert default[0][0] == 4  # the family's K is not edited


def test_keys_name_the_setting_and_l1_has_one_mag_rule():
    k = [[4, 5, 10], [0, 1, 10], [0, 0, 10]]
    assert setting_key("csd", k, 5.0, True) == "csd|4,5,1|l5|mag-lenient"
    assert setting_key("csd", k, 1.0, True) == setting_key("csd", k, 1.0, False) == "csd|4,5,1|l1|mag-strict"
    assert setting_key("sd") == "sd"


def test_grid_has_every_setting_and_one_token_text_per_token(recorded):
    assert recorded["format"] == FORMAT and recorded["family"] == "tiny-t5"
    # sd, then 2 K x (l=1 strict, l=5 strict, l=5 lenient)
    assert len(recorded["settings"]) == 1 + 2 * 3
    toks = recorded["prompts"][0]["tokens"]
    assert 0 < len(toks) <= TINY.max_new_tokens
    names = [lv["name"] for lv in recorded["levels"]]
    for rows in recorded["settings"].values():
        assert len(rows[0]["prov"]) == len(toks) and max(int(c) for c in rows[0]["prov"]) < len(names)


def test_recorded_numbers_equal_a_fresh_engine_run(recorded):
    """Re-run one grid point with the engine: provenance, calls, acceptance and SWI are the same."""
    fam = load_family("tiny-t5")
    prompt = load_task(fam.task, "test", n=1, seed=0)[0].prompt
    k = TINY.ks(fam.default_k)[1]
    g = generate(fam, prompt, "csd", k=k, lenience=5.0, mag_lenience=True, max_new_tokens=TINY.max_new_tokens)
    rec = recorded["settings"][setting_key("csd", k, 5.0, True)][0]
    names = [lv["name"] for lv in recorded["levels"]]
    assert [names[int(c)] for c in rec["prov"]] == g.provenance
    assert rec["calls"] == g.stats.calls and rec["target_calls"] == g.stats.calls["target"]
    assert rec["swi_model_size"] == pytest.approx(g.stats.swi_model_size, abs=1e-4)
    assert rec["swi_previous_work"] == pytest.approx(g.stats.swi_previous_work, abs=1e-4)
    assert rec["reached"] == {p: s.reached for p, s in g.stats.acceptance.items()}
    assert rec == run_record(g, names)
    assert recorded["prompts"][0]["tokens"] and len(g.token_ids) == len(rec["prov"])


def test_settings_differ_where_the_engine_differs(recorded):
    """Changing K changes the target's calls or the provenance (the slider has something to show)."""
    a = recorded["settings"]["csd|2,5,1|l1|mag-strict"][0]
    b = recorded["settings"]["csd|4,5,1|l1|mag-strict"][0]
    assert (a["prov"], a["calls"]) != (b["prov"], b["calls"])


def test_written_as_json_or_as_a_script(recorded, tmp_path):
    n = write_explorer_data(tmp_path / "d.json", recorded)
    assert n == (tmp_path / "d.json").stat().st_size and json.loads((tmp_path / "d.json").read_text()) == recorded
    write_explorer_data(tmp_path / "d.js", recorded)
    text = (tmp_path / "d.js").read_text()
    assert text.startswith("window.CSD_EXPLORER = ") and json.loads(text[text.index("{"):text.rindex("}") + 1]) == recorded

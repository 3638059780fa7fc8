import pytest

from csd_lib.engine.kvariants import k_with, variants, without_mag, without_tail

K3 = [[4, 5, 10], [0, 1, 10], [0, 0, 10]]


def test_k_with_names_entries_in_paper_notation_and_copies():
    k = k_with(K3, k11=2, k12=7, k23=3)
    assert k == [[2, 7, 10], [0, 1, 3], [0, 0, 10]]
    assert K3 == [[4, 5, 10], [0, 1, 10], [0, 0, 10]]


@pytest.mark.parametrize("name", ["k21", "k14", "k00", "x11"])
def test_k_with_rejects_entries_off_the_upper_triangle(name):
    with pytest.raises(ValueError, match="on or above the diagonal"):
        k_with(K3, **{name: 1})


def test_without_tail_keeps_only_k11_in_the_top_row():
    assert without_tail(K3) == [[4, 0, 0], [0, 1, 10], [0, 0, 10]]
    assert without_tail([[8, 0], [0, 10]]) == [[8, 0], [0, 10]]


def test_without_mag_zeroes_the_last_column():
    assert without_mag(K3) == [[4, 5, 0], [0, 1, 0], [0, 0, 0]]


def test_variants_names_the_three_runs():
    v = variants(K3)
    assert list(v) == ["default K", "vertical only", "no MaG"]
    assert v["default K"] == K3 and v["default K"] is not K3


def test_base_mag_k_is_vertical_k_at_sds_draft_length():
    from types import SimpleNamespace

    from csd_lib.engine.kvariants import base_mag_k
    fam = SimpleNamespace(drafters=[1, 2], mag=SimpleNamespace(n=10), sd_k_for=lambda task: 16 if task else 5)
    assert base_mag_k(fam, "synth-gsm8k") == [[16, 0, 10], [0, 0, 10], [0, 0, 10]]  # the committed -vertical runs' K
    assert base_mag_k(fam) == [[5, 0, 10], [0, 0, 10], [0, 0, 10]]

import pytest

from csd_lib.teach.ties import tied_check

TIED = [(2.0, 0.0, 1.0), (2.0, 0.0, 5.0), (5.0, 7.0, 1.0)]


def test_every_tied_optimum_passes():
    for answer in TIED:
        v = tied_check(answer, TIED, rel=0.0, what="ex")
        assert v.ok and "one of 3 that tie" in v.message


def test_a_wrong_answer_fails_without_naming_the_optima():
    v = tied_check((8, 14, 1.0), TIED, rel=0.0, what="ex")
    assert v.ok is False and "3 values that tie" in v.message and "5.0, 7.0" not in v.message
    assert tied_check(None, TIED).ok is None
    assert tied_check(3.0, [3.1], rel=0.05).ok
    with pytest.raises(ValueError):
        tied_check(1, [])

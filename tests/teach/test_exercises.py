"""The 'check your answer' helper: missing, matching and wrong answers are told apart."""
import math

import pytest

from csd_lib.teach.exercises import Verdict, check


def test_missing_answer_is_not_a_verdict():
    v = check(None, 3)
    assert v.ok is None and "not answered" in repr(v)


@pytest.mark.parametrize("answer,expected,ok", [
    (0.74, 0.75, True), (0.70, 0.75, False), (4, 4, True), ("base", "base", True), ("small", "base", False),
    (True, 1, False), (math.nan, math.nan, True), (math.nan, 0.5, False),
])
def test_scalars(answer, expected, ok):
    assert check(answer, expected).ok is ok


def test_tolerances():
    assert check(0.70, 0.75, rel=0.1).ok and not check(0.70, 0.75).ok
    assert check(0.001, 0.0, abs_tol=0.01).ok and not check(0.001, 0.0).ok
    with pytest.raises(ValueError, match="tolerances"):
        check(1, 1, rel=-1)


def test_sequences_name_the_first_difference():
    assert check([1, 2.0], (1, 2.05)).ok
    v = check([1, 3, 5], [1, 2, 4])
    assert v.ok is False and "2 of 3" in v.message and "index 1" in v.message
    assert check([1, 2], [1, 2, 3]).ok is False and check(2, [2]).ok is False


def test_markdown_repr_marks_the_state():
    assert "correct" in check(1, 1)._repr_markdown_() and "not yet" in check(1, 2)._repr_markdown_()
    assert isinstance(check(1, 1), Verdict)

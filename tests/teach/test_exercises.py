"""The 'check your answer' helper: missing, matching and wrong answers are told apart."""
import math
import re

import pytest

from csd_lib.teach.exercises import Verdict, check, check_one_of


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


def test_a_first_wrong_try_hints_without_giving_the_answer():
    first = check(3, 17, what="reveal test", reveal_after=2)
    assert first.ok is False and "too low" in first.message and "17" not in first.message
    second = check(30, 17, what="reveal test", reveal_after=2)
    assert "too high" in second.message and "17" in second.message  # shown from the reveal_after-th wrong try
    seq = check([1, 9], [1, 4], what="reveal seq")
    assert "index 1" in seq.message and "too high" in seq.message and "4" not in seq.message
    assert "'base'" not in check("small", "base", what="reveal str").message
    assert "matches" in check(17, 17, what="reveal test").message  # a right answer always says so
    with pytest.raises(ValueError, match="reveal_after"):
        check(1, 1, reveal_after=0)


def test_reveal_after_one_shows_the_value_at_once():
    assert "the run gives 5" in check(4, 5, what="reveal now", reveal_after=1).message


def test_check_one_of_accepts_every_tied_answer():
    ties = [[4, 0, 10], [8, 0, 10]]
    assert all(check_one_of(t, ties, rel=0, what="ties").ok for t in ties)
    wrong = check_one_of([5, 0, 10], ties, rel=0, what="ties wrong")
    assert wrong.ok is False and "2 tied" in wrong.message and "[4, 0, 10]" not in wrong.message
    assert check_one_of(None, ties).ok is None
    assert "1 of 2" not in check_one_of(2, [2]).message and check_one_of(2, [2]).ok
    with pytest.raises(ValueError, match="at least one"):
        check_one_of(1, [])


def _check_cell(notebook: str, **answers):
    """Run a notebook's last code cell (its 'check your answer' cell) with ``answers`` set; the verdicts it shows."""
    import json
    from pathlib import Path
    import numpy as np
    from csd_lib.price import ewif
    cells = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
    src = "".join([c for c in cells if c["cell_type"] == "code"][-1]["source"])
    for name, value in answers.items():
        src, n = re.subn(rf"^{name} = None", f"{name} = {value!r}", src, flags=re.M)
        assert n == 1, f"{notebook}'s check cell sets no {name}"
    shown = []
    ns = {"np": np, "ewif": ewif, "display": shown.append}
    exec(compile(src, notebook, "exec"), ns)
    return shown + [eval(compile(src.strip().splitlines()[-1], notebook, "eval"), ns)]


def test_notebook_05_exercise_1_rejects_the_tie_at_alpha_equal_c():
    # at alpha = c = 0.3 and k = 1, EWIF = (1 + alpha) / (1 + c) = 1: SD only ties AR, so 0.30 is wrong
    assert _check_cell("05_ewif_theory.ipynb", my_answer=0.31)[-1].ok
    assert _check_cell("05_ewif_theory.ipynb", my_answer=0.30)[-1].ok is False
    assert _check_cell("05_ewif_theory.ipynb", my_answer=0.32)[-1].ok is False

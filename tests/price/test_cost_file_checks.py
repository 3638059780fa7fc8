"""Cost files that cannot price a family, predict's generation length, and predict's errors after its bar.

In the style of tests/cli/test_bad_inputs.py: each CLI case runs in process through ``main(argv)`` and must
end with exit status 2 and exactly one stderr line ``error: ...`` naming the file and what is wrong, before
any model loads, leaving its files unchanged and creating none.
"""
import json
import os
from pathlib import Path

import pytest

from csd_lib.cli.main import main
from csd_lib.price import predict
from csd_lib.price.costmodel import CostModel, cost_problem
from csd_lib.price.costs import load_costs, read_cost_file
from csd_lib.price.predict import predict_for_device

ROOT = Path(__file__).resolve().parents[2]
T5_COSTS = ROOT / "results" / "costs-tiny-t5-cpu.json"
LLAMA_COSTS = ROOT / "results" / "costs-tiny-llama-cpu.json"
RESULTS = ROOT / "results" / "tiny-t5-synth-gsm8k.jsonl"


def _edited(edit) -> bytes:
    """The committed tiny-t5 cost file with ``edit(dict)`` applied, as JSON bytes (NaN written as JSON allows)."""
    d = json.loads(T5_COSTS.read_text(encoding="utf-8"))
    edit(d)
    return json.dumps(d).encode()


FILES = {
    "nan.json": _edited(lambda d: d.update(mag=float("nan"))),
    "inf.json": _edited(lambda d: d["forward"]["base"]["coef"].__setitem__(1, float("inf"))),
    "negative.json": _edited(lambda d: d["forward"]["target"]["coef"].__setitem__(0, -0.5)),
    "negative_start.json": _edited(lambda d: d["start"].update(small=-1.0)),
    "llama.json": LLAMA_COSTS.read_bytes(),
    "two_models.json": json.dumps(CostModel.constant({"target": 1.0, "small": 0.1}).to_dict()).encode(),
}
PREDICT = ["predict", "--family", "tiny-t5", "--acceptance", "0.7,0.6,0.3"]
CASES = [  # id, argv ({d}: the case's folder), the message its one error line holds
    ("predict-nan", [*PREDICT, "--costs", "{d}/nan.json"],
     "--costs {d}/nan.json cannot price tiny-t5: its mag is not a finite number (nan)"),
    ("predict-inf", [*PREDICT, "--costs", "{d}/inf.json"],
     "--costs {d}/inf.json cannot price tiny-t5: its base coefficients are not all finite numbers ("),
    ("predict-negative", [*PREDICT, "--costs", "{d}/negative.json"],
     "--costs {d}/negative.json cannot price tiny-t5: its target call costs -0."),
    ("predict-negative-start", [*PREDICT, "--costs", "{d}/negative_start.json"],
     "--costs {d}/negative_start.json cannot price tiny-t5: it holds a negative cost"),
    ("predict-other-family", [*PREDICT, "--costs", "{d}/llama.json"],
     "--costs {d}/llama.json cannot price tiny-t5: it is the cost model of 'tiny-llama', not of 'tiny-t5'"),
    ("predict-missing-model", [*PREDICT, "--costs", "{d}/two_models.json"],
     "--costs {d}/two_models.json cannot price tiny-t5: it prices ['small', 'target'], not 'base' of tiny-t5"),
    ("bench-other-family", ["bench", "--family", "tiny-t5", "--n", "1", "--methods", "ar", "--costs",
                            "{d}/llama.json", "--out", "{d}/out.jsonl"],
     "--costs {d}/llama.json cannot price tiny-t5: it is the cost model of 'tiny-llama'"),
    ("tree-budgets-nan", ["predict", "--family", "tiny-llama", "--method", "tree-sd", "--acceptance",
                          "{d}/nowhere.jsonl", "--costs", "{d}/nan.json"],
     "--costs {d}/nan.json cannot price tiny-llama: its mag is not a finite number"),
]


@pytest.mark.parametrize("argv,msg", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_cost_file_that_cannot_price_is_one_line(tmp_path, capsys, argv, msg):
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code = main([a.format(d=tmp_path) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: "), err
    assert msg.format(d=tmp_path) in err[0]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing changed, nothing created


def test_the_committed_cost_files_pass_and_stored_ones_are_checked(tmp_path):
    for path in sorted((ROOT / "results").glob("costs-*.json")):
        cm = CostModel.from_dict(json.loads(path.read_text(encoding="utf-8")))
        assert cost_problem(cm, cm.family, list(cm.forward)) is None, path
    assert read_cost_file(T5_COSTS, "tiny-t5", ["target", "base", "small"]).family == "tiny-t5"
    (tmp_path / "costs-tiny-t5-cpu.json").write_bytes(FILES["nan.json"])
    with pytest.raises(ValueError, match="cannot be used: its mag is not a finite number"):
        load_costs("tiny-t5", path=tmp_path / "costs-tiny-t5-cpu.json")
    with pytest.raises(ValueError, match="cost model of 'tiny-t5', not of 'tiny-llama'"):
        load_costs("tiny-llama", path=T5_COSTS)
    constant = CostModel.constant({"target": 1.0, "base": 0.1, "small": 0.05})  # per-call constants fit any family
    assert cost_problem(constant, "flan-t5", ["target", "base", "small"]) is None


def test_predict_from_a_results_file_honours_max_new_tokens():
    own = predict_for_device("tiny-t5", str(RESULTS), cost_file=str(T5_COSTS), n_sim=300)
    short = predict_for_device("tiny-t5", str(RESULTS), cost_file=str(T5_COSTS), n_sim=300, max_new_tokens=16)
    assert short["tokens"] == 16 and own["tokens"] != 16
    assert any("priced at 16 tokens" in n for n in short["notes"])
    assert own["tokens"] > 16 and read_cost_file(T5_COSTS).start["target"] > 0  # the encoder's start, paid once
    assert short["best"]["ar"]["tokens_per_s"] < own["best"]["ar"]["tokens_per_s"]  # spread over fewer tokens


def test_an_error_while_pricing_is_printed_after_the_progress_bar(monkeypatch, capsys):
    calls = []

    def fail_late(*a, **kw):
        calls.append(1)
        if len(calls) > 3:
            raise ValueError("boom while pricing")
        return {"speedup": 1.0, "tokens_per_s": 1.0, "ar_tokens_per_s": 1.0}
    monkeypatch.setattr(predict, "price_plan", fail_late)
    code = main([*PREDICT, "--costs", str(T5_COSTS)])
    err = capsys.readouterr().err
    assert code == 2 and "predict: pricing plans" in err          # the bar was drawn, then the error
    assert err.endswith("\nerror: boom while pricing\n")           # on a line of its own, not inside the bar's


def _unreadable(tmp_path, kind: str) -> Path:
    """A cost file path that is ``kind``: a directory, a FIFO, or a file with a byte that is not UTF-8 on line 3."""
    path = tmp_path / f"costs-{kind}.json"
    if kind == "dir":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        lines = T5_COSTS.read_bytes().split(b"\n")
        lines[2] += b" \xe9"  # Latin-1's e-acute
        path.write_bytes(b"\n".join(lines))
    return path


BAD_FILES = [  # kind, what the one line says ({p}: the path)
    ("dir", "{p} is a directory, not a file; "),
    ("fifo", "{p} is a FIFO (named pipe), not a regular file; "),
    ("latin1", "{p}:3 is not UTF-8 text (byte 0xe9); save the "),
]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("kind,says", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_cost_file_that_cannot_be_read_is_one_clear_line(tmp_path, kind, says):
    """Cost files are read by the one input reader (csd_lib.fileio): a directory or a FIFO is refused without
    opening it (a FIFO would block), a byte that is not UTF-8 is named with its line; through the API and the CLI."""
    path = _unreadable(tmp_path, kind)
    with pytest.raises(ValueError) as e:
        read_cost_file(path, "tiny-t5", ["target", "base", "small"])
    assert says.format(p=path) in str(e.value) and "\n" not in str(e.value)
    assert "--costs none" in str(e.value) or kind == "latin1"
    with pytest.raises(ValueError) as e:
        load_costs("tiny-t5", path=path)
    assert says.format(p=path) in str(e.value) and "\n" not in str(e.value)


def test_a_stored_cost_file_that_is_not_json_names_itself(tmp_path):
    path = tmp_path / "costs-tiny-t5-cpu.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=f"the stored cost model {path} is not a cost model .*; re-measure it"):
        load_costs("tiny-t5", path=path)


def test_a_non_utf8_cost_file_on_the_command_line_is_one_line(tmp_path, capsys):
    path = _unreadable(tmp_path, "latin1")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code = main([*PREDICT, "--costs", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0] == f"error: {path}:3 is not UTF-8 text (byte 0xe9); save the " \
                                                     f"--costs file as UTF-8", err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before

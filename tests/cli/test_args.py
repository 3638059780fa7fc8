"""csd_lib.cli.args: the command line's file and value readers; each mistake is one error naming the path or
value and the fix."""
import argparse
import json
import re

import pytest
import torch

from csd_lib.fileio import check_output_path, read_text
from csd_lib.cli.args import (FileArg, arg_drafters, check_file_args, device_arg, finite_float, free_path,
                              method_list, positive_int, read_k, read_prompts, seed_int)
from csd_lib.cli.parser import parser
from csd_lib.measure.records import ALL_METHODS


def test_read_text_reads_utf8(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("größe\n".encode("utf-8"))
    assert read_text(str(p), "thing", "fix it") == "größe\n"


def test_read_text_missing_directory_and_not_utf8(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(ValueError, match=rf"^prompts file {missing} not found; pass a file$"):
        read_text(str(missing), "prompts file", "pass a file")
    with pytest.raises(ValueError, match=rf"^K file {tmp_path} is a directory, not a file; pass a file$"):
        read_text(str(tmp_path), "K file", "pass a file")
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"prompt": "ok"}\n{"prompt": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=rf"^{bad}:2 is not UTF-8 text \(byte 0xe9\); save the prompts file as UTF-8$"):
        read_text(str(bad), "prompts file", "pass a file")


def test_read_prompts(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "one"}\n\n  \n{"prompt": "two", "id": 7}\n', encoding="utf-8")
    assert read_prompts(str(p)) == ["one", "two"]  # blank lines skipped, other keys ignored


@pytest.mark.parametrize("text,message", [
    ('{"prompt": "ok"}\n{"prompt": \n', r":2 is not JSON \(.*\); each line must be \{\"prompt\": \"...\"\}"),
    ('["a list"]\n', r":1 has no string 'prompt'"),
    ('{"text": "x"}\n', r":1 has no string 'prompt'"),
    ('{"prompt": 5}\n', r":1 has no string 'prompt'"),
    ('{"prompt": "  "}\n', r":1 has an empty prompt; give it some text or delete the line"),
    ("\n\n", r" holds no prompts; each line must be"),
])
def test_read_prompts_errors_name_the_line(tmp_path, text, message):
    p = tmp_path / "p.jsonl"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"^{p}{message}"):
        read_prompts(str(p))


def test_read_prompts_missing_file_says_what_to_pass(tmp_path):
    with pytest.raises(ValueError, match=r"not found; pass a JSONL file where each line must be"):
        read_prompts(str(tmp_path / "none.jsonl"))


def test_read_k_inline_and_from_a_file(tmp_path):
    assert read_k(None) is None
    assert read_k("[[4, 5], [0, 10]]") == [[4, 5], [0, 10]]
    f = tmp_path / "k.json"
    f.write_text(json.dumps([[1, 2, 3], [0, 1, 2], [0, 0, 3]]), encoding="utf-8")
    assert read_k(f"@{f}") == [[1, 2, 3], [0, 1, 2], [0, 0, 3]]


def test_read_k_errors(tmp_path):
    with pytest.raises(ValueError, match=r"^--k is not valid JSON .*; e.g. --k '\[\[5,14,10\]"):
        read_k("[[1, 2]")
    f = tmp_path / "k.json"
    f.write_text("[[1, 2],\n [0, 3]", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{f}:2 is not valid JSON .*the file must hold one K matrix"):
        read_k(f"@{f}")
    with pytest.raises(ValueError, match=r"K file .*missing.json not found; pass --k @FILE with an existing JSON"):
        read_k(f"@{tmp_path / 'missing.json'}")


def test_check_output_path(tmp_path):
    check_output_path(str(tmp_path / "new" / "deeper" / "out.jsonl"), "--out")  # folders to be made are fine
    with pytest.raises(ValueError, match=rf"^--plot {tmp_path} is a directory, not a regular file; give a file path$"):
        check_output_path(str(tmp_path), "--plot")
    f = tmp_path / "file.txt"
    f.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^--out {f}/out.jsonl: {f} is a file, not a folder"):
        check_output_path(str(f / "out.jsonl"), "--out")


def test_free_path_counts_up(tmp_path):
    p = tmp_path / "run.jsonl"
    assert free_path(p) == p
    p.write_text("", encoding="utf-8")
    assert free_path(p) == tmp_path / "run-2.jsonl"
    (tmp_path / "run-2.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "run-3.jsonl").write_text("", encoding="utf-8")
    assert free_path(p) == tmp_path / "run-4.jsonl"


def test_number_readers():
    assert finite_float("2.5") == 2.5 and positive_int("3") == 3 and seed_int("0") == 0
    assert seed_int(str(2**64 - 1)) == 2**64 - 1
    for reader, text, message in [(finite_float, "abc", "'abc' is not a number"),
                                  (finite_float, "inf", "'inf' is not a finite number"),
                                  (finite_float, "nan", "'nan' is not a finite number"),
                                  (positive_int, "1.5", "'1.5' is not an integer"),
                                  (positive_int, "0", "'0' must be >= 1"),
                                  (seed_int, "-1", r"'-1' is not an integer in \[0, 2\*\*64\)"),
                                  (seed_int, str(2**64), r"is not an integer in \[0, 2\*\*64\)"),
                                  (seed_int, "x", "'x' is not an integer")]:
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            reader(text)


def test_device_arg():
    assert device_arg("cpu") == "cpu"
    with pytest.raises(argparse.ArgumentTypeError, match="'gpu' is not a torch device; use cpu, cuda, cuda:N or mps"):
        device_arg("gpu")
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(argparse.ArgumentTypeError, match=f"'cuda:{n}': this machine has {n} CUDA device"):
        device_arg(f"cuda:{n}")


def test_method_list():
    assert method_list(" ar, csd ,sd") == "ar,csd,sd"
    with pytest.raises(argparse.ArgumentTypeError, match=f"unknown method.s. fast; use .* {', '.join(ALL_METHODS)}"):
        method_list("ar,fast")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown method.s. ' , '"):
        method_list(" , ")


def test_arg_drafters_splits_a_comma_list():
    assert arg_drafters(argparse.Namespace(drafters="a/b, ./c ,")) == ["a/b", "./c"]
    assert arg_drafters(argparse.Namespace(drafters=None)) is None
    assert arg_drafters(argparse.Namespace()) is None


def test_a_utf8_file_with_a_byte_order_mark_is_read(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"prompt": "hi"}\n')
    assert read_prompts(str(p)) == ["hi"]


# -- file arguments: every one marked in the argument table, and checked from there ---------------------------

NOT_FILES = {"--target": "a model folder or hub id, which transformers reads",
             "--method": "its help names --acceptance FILE"}
NAMES_A_FILE = re.compile(r"\bfile\b|\bFILE\b|\bwrite|JSONL|folder|\.json|\.html")


def test_every_file_argument_is_marked_in_the_argument_table():
    """A flag whose help or metavar speaks of a file is a FileArg, so check_file_args sees it: a new output flag
    is refused over an input, or named for another format, without code of its own."""
    sub = next(a for a in parser()._actions if isinstance(a.choices, dict))
    seen = 0
    for name, command in sub.choices.items():
        for a in command._actions:
            if not a.option_strings or a.nargs == 0 or a.option_strings[0] in NOT_FILES:
                continue
            if NAMES_A_FILE.search(f"{a.help} {a.metavar or ''}") or a.dest == "out":
                assert isinstance(a.type, FileArg), f"{name} {a.option_strings[0]} names a file but is no FileArg"
                seen += 1
        assert [flag for flag, *_ in command.get_default("file_args")] == [
            a.option_strings[0] for a in command._actions if isinstance(a.type, FileArg)]
    assert seen >= 12


def test_check_file_args_reads_the_table(tmp_path):
    """A command with flags it has never seen: an output over an input, two outputs on one file, a wrong name."""
    table = [("--report", "report", FileArg("out", (".json",))), ("--data", "data", FileArg("in")),
             ("--log", "log", FileArg("out"))]
    same = str(tmp_path / "x.json")
    with pytest.raises(ValueError, match=r"^--report .*x.json is the --data file this command reads"):
        check_file_args(argparse.Namespace(file_args=table, report=same, data=same, log=None))
    with pytest.raises(ValueError, match=r"^--report and --log both name"):
        check_file_args(argparse.Namespace(file_args=table, report=same, data=None, log=same))
    with pytest.raises(ValueError, match=r"^--report .*r.html: the name says HTML, but --report writes JSON"):
        check_file_args(argparse.Namespace(file_args=table, report=str(tmp_path / "r.html"), data=None, log=None))
    check_file_args(argparse.Namespace(file_args=table, report=same, data=str(tmp_path / "d.json"), log=None))
    folder = [("--out", "out", FileArg("folder")), ("--data", "data", FileArg("in"))]
    with pytest.raises(ValueError, match=r"^--out .* is the --data file this command reads"):  # inside the folder
        check_file_args(argparse.Namespace(file_args=folder, out=str(tmp_path), data=same))

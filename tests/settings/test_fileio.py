"""csd_lib.fileio.write_atomic: a file is written whole or not at all."""
import os

import pytest

from csd_lib.fileio import write_atomic


def test_writes_utf8_text_and_creates_folders(tmp_path):
    p = tmp_path / "a" / "b" / "out.json"
    write_atomic(p, "größe ≥ 1\n")
    assert p.read_bytes() == "größe ≥ 1\n".encode("utf-8")
    assert sorted(x.name for x in p.parent.iterdir()) == ["out.json"]  # no temporary file left beside it


def test_replaces_old_content(tmp_path):
    p = tmp_path / "out.txt"
    write_atomic(p, "old")
    write_atomic(str(p), "new")  # a str path works too
    assert p.read_text(encoding="utf-8") == "new"


def test_a_crash_before_the_rename_leaves_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "out.txt"
    p.write_text("old content", encoding="utf-8")

    def crash(src, dst):
        raise OSError("power cut")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="power cut"):
        write_atomic(p, "new content")
    assert p.read_text(encoding="utf-8") == "old content"


def test_a_crash_while_writing_leaves_the_old_file(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text("old content", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(p, "half written \ud800")  # a lone surrogate cannot be encoded: the write fails midway
    assert p.read_text(encoding="utf-8") == "old content"

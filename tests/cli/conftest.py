"""Fixtures of the CLI tests."""
import pytest


@pytest.fixture
def no_loading(monkeypatch):
    """A family that loads fails the test: these checks come before any model loads."""
    def refuse(*a, **k):
        raise AssertionError("a family was loaded before the arguments were checked")
    monkeypatch.setattr("csd_lib.cli.args.load_family", refuse, raising=False)

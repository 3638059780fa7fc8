"""csd_lib.logs: the library's notes go to the current stderr, never stdout; set_verbosity filters them."""
import logging

import pytest

from csd_lib.logs import LEVELS, ROOT, set_verbosity

log = logging.getLogger("csd_lib.engine.some_module")  # any module's logger sits under the library's


@pytest.fixture(autouse=True)
def restore_level():
    before = logging.getLogger(ROOT).level
    yield
    logging.getLogger(ROOT).setLevel(before)


def test_notes_go_to_stderr_once_and_never_to_stdout(capsys):
    set_verbosity("info")
    log.info("a note")
    out, err = capsys.readouterr()
    assert out == "" and err == "a note\n"  # the message alone, one copy


def test_warning_keeps_warnings_and_errors_only(capsys):
    set_verbosity("warning")
    log.info("hidden")
    log.warning("shown")
    log.error("also shown")
    assert capsys.readouterr().err == "shown\nalso shown\n"


def test_debug_and_numeric_levels(capsys):
    set_verbosity("DEBUG")  # case does not matter
    log.debug("detail")
    assert capsys.readouterr().err == "detail\n"
    set_verbosity(logging.ERROR)
    log.warning("hidden")
    assert capsys.readouterr().err == ""
    assert logging.getLogger(ROOT).level == logging.ERROR


def test_unknown_level_names_the_choices():
    with pytest.raises(ValueError, match="unknown verbosity 'loud'; use one of debug, info, warning, error"):
        set_verbosity("loud")
    assert set(LEVELS) == {"debug", "info", "warning", "error"}


def test_application_logging_config_does_not_duplicate_notes(capsys):
    """An application that configures the root logger does not get a second copy of each note."""
    set_verbosity("info")
    root = logging.getLogger()
    h = logging.StreamHandler()  # bound to the current stderr
    root.addHandler(h)
    try:
        log.info("once")
    finally:
        root.removeHandler(h)
    assert capsys.readouterr().err == "once\n"

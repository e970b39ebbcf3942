"""The C++ side's log reaches Python's logging (logger "kp"), with the level
settable at run time."""

import logging
import threading

import pytest

import kp


@pytest.fixture
def restore_level():
    saved = kp.logger.level
    yield
    kp.logger.setLevel(saved)


def _warning_manager():
    """Makes a manager whose creation logs a warning (unknown extension)."""
    manager = kp.Manager(0, [], ["VK_KP_unknown_extension"])
    manager.destroy()


def test_warnings_reach_the_kp_logger(caplog, restore_level):
    with caplog.at_level(logging.WARNING, logger="kp"):
        _warning_manager()
    records = [r for r in caplog.records if r.name == "kp"]
    assert any("VK_KP_unknown_extension" in r.getMessage() for r in records)
    assert all(r.levelno == logging.WARNING for r in records
               if "VK_KP_unknown_extension" in r.getMessage())


def test_set_log_level_filters_on_the_cpp_side(caplog, restore_level):
    kp.set_log_level("error")
    assert kp.get_log_level() == logging.ERROR
    with caplog.at_level(logging.ERROR, logger="kp"):
        _warning_manager()
    assert not any("VK_KP_unknown_extension" in r.getMessage() for r in caplog.records)


def test_logger_set_level_sets_the_cpp_level(caplog, restore_level):
    logging.getLogger("kp").setLevel(logging.INFO)
    assert kp.get_log_level() == logging.INFO
    caplog.set_level(logging.INFO, logger="kp")
    manager = kp.Manager()
    manager.destroy()
    assert any(r.levelno == logging.INFO and "device" in r.getMessage()
               for r in caplog.records if r.name == "kp")


def test_trace_and_debug_levels(restore_level):
    kp.set_log_level(kp.TRACE)
    assert kp.get_log_level() == kp.TRACE
    assert logging.getLevelName(kp.TRACE) == "TRACE"
    kp.set_log_level(logging.DEBUG)
    assert kp.get_log_level() == logging.DEBUG
    kp.set_log_level("off")
    assert kp.get_log_level() > logging.CRITICAL


def test_notset_restores_the_default(restore_level):
    default = kp._DEFAULT_NATIVE_LEVEL
    kp.set_log_level("debug")
    kp.logger.setLevel(logging.NOTSET)
    assert kp.get_log_level() == default


def test_bad_level_raises(restore_level):
    with pytest.raises(ValueError, match="verbose"):
        kp.set_log_level("verbose")
    with pytest.raises(TypeError):
        kp.set_log_level(1.5)


def test_messages_from_other_threads_are_delivered(caplog, restore_level):
    with caplog.at_level(logging.WARNING, logger="kp"):
        thread = threading.Thread(target=_warning_manager)
        thread.start()
        thread.join()
        kp.flush_log()
    assert any("VK_KP_unknown_extension" in r.getMessage() for r in caplog.records)


def test_percent_signs_are_not_formatted(caplog, restore_level):
    with caplog.at_level(logging.WARNING, logger="kp"):
        manager = kp.Manager(0, [], ["VK_KP_100%_%s_%d"])
        manager.destroy()
    assert any("VK_KP_100%_%s_%d" in r.getMessage() for r in caplog.records)

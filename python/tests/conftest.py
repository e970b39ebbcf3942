"""pytest setup for the kp test suites.

Every Manager made by the tests enables the Khronos validation layer with
synchronization validation (set here, before kp creates any Manager), and a
test fails if any validation error reaches the "kp" logger: the C++ side logs
validation-layer errors at error level, prefixed "[validation]". A test that
provokes one on purpose is marked ``@pytest.mark.expect_validation_errors``.
"""

import faulthandler
import gc
import logging
import os
import pathlib
import sys

# Before kp creates a Manager: the layer list and the layer's settings are
# read at instance creation. Callers may override them.
os.environ.setdefault("KOMPUTE_ENV_DEBUG_LAYERS", "VK_LAYER_KHRONOS_validation")
os.environ.setdefault(
    "VK_LAYER_ENABLES", "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
)
# Newer layers (the settings framework) read it from here too, and count
# shader writes to storage buffers only with their SPIR-V analysis on.
os.environ.setdefault("VK_KHRONOS_VALIDATION_VALIDATE_SYNC", "true")
os.environ.setdefault("VK_KHRONOS_VALIDATION_SYNCVAL_SHADER_ACCESSES_HEURISTIC", "true")

import pytest  # noqa: E402

import kp  # noqa: E402

TESTS_DIR = pathlib.Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent.parent
sys.path.insert(0, str(TESTS_DIR))


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "expect_validation_errors: the test provokes Vulkan validation errors on purpose",
    )


# The per-test time limit (KP_TEST_TIMEOUT, seconds; unset or 0: none). A test
# that runs past it has every thread's Python stack printed and ends the
# process (faulthandler, from the standard library: it works while the main
# thread is blocked in C++ code, where a signal handler in Python would never
# run), so a hang on a GPU says where it is instead of eating the run's time.
_TEST_TIMEOUT = float(os.environ.get("KP_TEST_TIMEOUT", "0") or 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if _TEST_TIMEOUT > 0:
        sys.stderr.write(f"\n[kp-test-start] {item.nodeid}\n")
        sys.stderr.flush()
        faulthandler.dump_traceback_later(_TEST_TIMEOUT, exit=True)
    try:
        yield
    finally:
        if _TEST_TIMEOUT > 0:
            faulthandler.cancel_dump_traceback_later()


def pytest_report_header(config):
    layers = os.environ.get("KOMPUTE_ENV_DEBUG_LAYERS", "")
    return [f"kp {kp.__version__} from {pathlib.Path(kp.__file__).parent}",
            f"Vulkan layers: {layers or '(none)'}"]


class ValidationErrors(logging.Handler):
    """Collects the validation-layer errors that reach the "kp" logger."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.messages = []

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("[validation]"):
            self.messages.append(message)


_validation = ValidationErrors()
logging.getLogger("kp").addHandler(_validation)


@pytest.fixture(autouse=True)
def fail_on_validation_errors(request):
    """Fails the test if the validation layer reported an error during it
    (including while its objects were freed)."""
    kp.flush_log()
    _validation.messages.clear()
    yield _validation.messages
    gc.collect()
    kp.flush_log()
    messages = list(_validation.messages)
    _validation.messages.clear()
    if request.node.get_closest_marker("expect_validation_errors"):
        return
    if messages:
        pytest.fail(
            f"{len(messages)} Vulkan validation error(s):\n" + "\n".join(messages[:10]),
            pytrace=False,
        )


@pytest.fixture
def mgr():
    """A Manager on device 0, destroyed after the test."""
    manager = kp.Manager()
    yield manager
    manager.destroy()


@pytest.fixture(scope="session")
def device_properties():
    manager = kp.Manager()
    properties = manager.get_device_properties()
    manager.destroy()
    return properties


@pytest.fixture(scope="session")
def examples_dir():
    return REPO_ROOT / "examples" / "python"


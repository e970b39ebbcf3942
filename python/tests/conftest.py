"""pytest setup for the kp test suites.

Every Manager made by the tests enables the Khronos validation layer with
synchronization validation (set here, before kp creates any Manager), and a
test fails if any validation error reaches the "kp" logger: the C++ side logs
validation-layer errors at error level, prefixed "[validation]". A test that
provokes one on purpose is marked ``@pytest.mark.expect_validation_errors``.
"""

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

#!/usr/bin/env bash
# Tests the Python package kp the way a user gets it: in a fresh virtual
# environment, `pip install .[test]` (which builds the C++ library and the
# nanobind extension with scikit-build-core), a smoke import, then the pytest
# suites in python/tests with the Khronos validation layer on.
#
# Needs the Debian packages of scripts/install-deps.sh plus python3-venv, and
# PyPI (pip downloads scikit-build-core, nanobind, numpy and pytest, and for the
# LLM runner's tests gguf, sentencepiece, tokenizers, jinja2 and transformers,
# the reference for chat templates, and aiohttp and openai for the server).
#
# Environment:
#   PYTHON                     interpreter for the venv (default: python3)
#   VENV                       where to create it (default: a temporary dir,
#                              removed afterwards)
#   CMAKE_BUILD_PARALLEL_LEVEL build jobs (default: number of CPUs)
#   PYTEST_ARGS                extra arguments for pytest
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}

if [ -z "${VENV:-}" ]; then
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/kompute-python.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    VENV=$WORK/venv
fi

echo "=== fresh virtual environment in $VENV ($("$PYTHON" --version))"
if ! "$PYTHON" -m venv "$VENV"; then
    echo "test-python.sh: '$PYTHON -m venv' failed: install python3-venv" >&2
    exit 1
fi
VPY=$VENV/bin/python

echo "=== pip install .[test] (builds the library and the extension; $CMAKE_BUILD_PARALLEL_LEVEL jobs)"
start=$SECONDS
# The build runs in a temporary directory: nothing is left in the tree.
"$VPY" -m pip install "$ROOT[test]"
echo "installed in $((SECONDS - start))s"

# The tests and examples must use the installed package, not the source
# folder python/kp, so run from outside the tree.
cd "$VENV"

echo "=== smoke test"
"$VPY" -c "import kp; print(kp.__version__); print(kp.Manager().get_device_properties())"

echo "=== pytest python/tests"
export KOMPUTE_ENV_DEBUG_LAYERS=${KOMPUTE_ENV_DEBUG_LAYERS-VK_LAYER_KHRONOS_validation}
export VK_LAYER_ENABLES=${VK_LAYER_ENABLES-VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT}
# Bounded, so that a hang fails the run instead of stalling CI.
# shellcheck disable=SC2086
timeout "${PYTEST_TIMEOUT:-1200}" "$VPY" -m pytest "$ROOT/python/tests" --rootdir "$ROOT/python/tests" -p no:cacheprovider ${PYTEST_ARGS:-}

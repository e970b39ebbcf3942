#!/usr/bin/env bash
# Builds what runs on the GPU machine (Ubuntu 24.04, NVIDIA driver, no
# Vulkan SDK) into a bundle folder (the first argument, default .gpu-bundle;
# an absolute path lets a second worktree put its bundle into the checkout
# that the device tool sends): a shared libkompute.so that carries shaderc
# and SPIRV-Tools statically, the test binaries, the examples and
# kompute-bench and kompute-llm, stripped. The machine's own libstdc++ is newer than
# Debian 12's, so the C++ runtime is linked dynamically. libkompute links no
# Vulkan loader (it opens libvulkan.so.1 at run time): the device's comes
# with .gl (run-on-device.sh). The folder is packed into BUNDLE.tar.gz,
# what the device tool carries.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUNDLE=${1:-.gpu-bundle}
build=build-gpu
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DKOMPUTE_OPT_BUILD_TESTS=ON -DKOMPUTE_OPT_INSTALL=OFF \
    -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON \
    $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) > /dev/null
cmake --build "$build" -j"$(nproc)"
rm -rf "$BUNDLE" && mkdir -p "$BUNDLE"
# Every shared library of the tree (libkompute, libkompute_llm, ...).
find "$build" -maxdepth 3 -name 'lib*.so.0.9' -exec cp -L {} "$BUNDLE"/ \;
find "$build" -maxdepth 3 -type f -executable \( -name 'test_*' -o -name 'kompute_*' -o -name 'kompute-bench' -o -name 'kompute-kernel-probe' \
    -o -name 'kompute-llm' \) \
    -exec cp {} "$BUNDLE"/ \;
# Debug sections go; the libraries' and tools' symbol tables stay, so that
# a hung test's stacks (run_suites.py attaches a debugger) name Kompute's
# functions. The test binaries lose theirs (10 MiB together: the device
# tool sends 64 MiB), and the watchdog names the test that hung.
strip --strip-debug "$BUNDLE"/* 2>/dev/null || true
strip "$BUNDLE"/test_* 2>/dev/null || true
cp benchmarks/cuda/*.cu benchmarks/cuda/*.cuh tools/plot_bench.py tools/latency_table.py "$BUNDLE"/
# The pytest suites of this tree, so that the device runs this tree's tests.
cp -r python/tests "$BUNDLE"/python-tests
# The device scripts of this tree (the device tool sends main's checkout).
cp scripts/gpu/run-on-device.sh scripts/gpu/run_suites.py "$BUNDLE"/

# The Python module for that machine's Python 3.12 (Debian 12 has 3.11):
# built as a wheel by a local 3.12 interpreter (PYTHON312, default the
# pyenv one), unpacked into "$BUNDLE"/site, with the case-(i) script.
PYTHON312=${PYTHON312:-$HOME/.pyenv/versions/3.12.1/bin/python3.12}
if [ -x "$PYTHON312" ]; then
    rm -rf build-python-gpu/wheel && mkdir -p build-python-gpu/wheel
    # A build folder that stays, so that the next bundle rebuilds only what
    # changed.
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$PYTHON312" -m pip wheel --quiet --no-deps . -w build-python-gpu/wheel \
        -Cbuild-dir=build-python-gpu/build
    "$PYTHON312" -m zipfile -e build-python-gpu/wheel/kp-*-cp312-*.whl "$BUNDLE"/site
    strip "$BUNDLE"/site/kp/_kp*.so
    cp -r benchmarks/python "$BUNDLE"/bench-python
    # The test packages the device's Python lacks (it reaches no package
    # index): gguf (pure Python; the LLM runner's pytest suites write their
    # models with it, and the two modules it imports, yaml and tqdm, are
    # there), and the openai client with what it needs, for
    # test_llm_serve.py. aiohttp, jinja2 and transformers are there.
    "$PYTHON312" -m pip install --quiet --no-deps --target "$BUNDLE"/site-test gguf ||
        echo "bundle.sh: gguf could not be installed: the device skips the runner's pytest model tests" >&2
    "$PYTHON312" -m pip install --quiet --target "$BUNDLE"/site-test openai ||
        echo "bundle.sh: openai could not be installed: the device skips test_llm_serve.py" >&2
    rm -rf "$BUNDLE"/site-test/bin
    find "$BUNDLE"/site-test -name '__pycache__' -prune -exec rm -rf {} +
    find "$BUNDLE"/site-test -name '*.so' -exec strip {} +
else
    echo "bundle.sh: no Python 3.12 at $PYTHON312 (set PYTHON312): the bundle has no kp module" >&2
fi
# The folder travels packed (the device tool sends 64 MiB; packed it is a
# fifth of that): carry "$BUNDLE.tar.gz", which run-on-device.sh unpacks.
tar czf "$BUNDLE.tar.gz" -C "$(dirname "$BUNDLE")" "$(basename "$BUNDLE")"
du -sh "$BUNDLE" "$BUNDLE.tar.gz"

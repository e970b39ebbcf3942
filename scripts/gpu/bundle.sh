#!/usr/bin/env bash
# Builds what runs on the GPU machine (Ubuntu 24.04, NVIDIA driver, no
# Vulkan SDK) into .gpu-bundle/: a shared libkompute.so that carries shaderc
# and SPIRV-Tools statically, the test binaries, the examples and
# kompute-bench, stripped. The machine's own libstdc++ is newer than
# Debian 12's, so the C++ runtime is linked dynamically.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build-gpu
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DKOMPUTE_OPT_BUILD_TESTS=ON -DKOMPUTE_OPT_INSTALL=OFF \
    -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON > /dev/null
cmake --build "$build" -j"$(nproc)"
rm -rf .gpu-bundle && mkdir -p .gpu-bundle
cp -L "$build"/libkompute.so.0.9 .gpu-bundle/
find "$build" -maxdepth 3 -type f -executable \( -name 'test_*' -o -name 'kompute_*' -o -name 'kompute-bench' \) \
    -exec cp {} .gpu-bundle/ \;
strip .gpu-bundle/* 2>/dev/null || true
cp benchmarks/cuda/bandwidth.cu tools/plot_bench.py .gpu-bundle/

# The Python module for that machine's Python 3.12 (Debian 12 has 3.11):
# built as a wheel by a local 3.12 interpreter (PYTHON312, default the
# pyenv one), unpacked into .gpu-bundle/site, with the case-(i) script.
PYTHON312=${PYTHON312:-$HOME/.pyenv/versions/3.12.1/bin/python3.12}
if [ -x "$PYTHON312" ]; then
    rm -rf build-python-gpu/wheel && mkdir -p build-python-gpu/wheel
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$PYTHON312" -m pip wheel --quiet --no-deps . -w build-python-gpu/wheel
    "$PYTHON312" -m zipfile -e build-python-gpu/wheel/kp-*-cp312-*.whl .gpu-bundle/site
    strip .gpu-bundle/site/kp/_kp*.so
    cp -r benchmarks/python .gpu-bundle/bench-python
else
    echo "bundle.sh: no Python 3.12 at $PYTHON312 (set PYTHON312): the bundle has no kp module" >&2
fi
du -sh .gpu-bundle

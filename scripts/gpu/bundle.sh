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
du -sh .gpu-bundle

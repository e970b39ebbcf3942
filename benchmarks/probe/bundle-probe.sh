#!/usr/bin/env bash
# Builds what benchmarks/probe/matmul-on-device.sh (and probe-on-device.sh)
# run into a bundle folder (first argument, default
# /work/main/.gpu-bundle-matmul): the shared library, the matrix kernels'
# tests, kompute-bench, kompute-kernel-probe, the CUDA references and the
# scripts.
# (scripts/gpu/bundle.sh builds the whole suite; this builds only the probe.)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUNDLE=${1:-/work/main/.gpu-bundle-matmul}
build=build-gpu
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DKOMPUTE_OPT_BUILD_TESTS=ON -DKOMPUTE_OPT_INSTALL=OFF -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON \
    $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) > /dev/null
cmake --build "$build" --target kompute kompute-kernel-probe kompute-bench test_kernels_matmul test_coopmat_rewrite -j"$(nproc)"
rm -rf "$BUNDLE" && mkdir -p "$BUNDLE"
cp -L "$build"/libkompute.so.0.9 "$build"/benchmarks/kompute-kernel-probe "$build"/benchmarks/kompute-bench \
    "$build"/test/kernels/test_kernels_matmul "$build"/test/kernels/test_coopmat_rewrite "$BUNDLE"/
strip "$BUNDLE"/* 2>/dev/null || true
cp benchmarks/cuda/*.cu benchmarks/probe/*-on-device.sh "$BUNDLE"/
du -sh "$BUNDLE"

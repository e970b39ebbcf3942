#!/usr/bin/env bash
# Builds the concurrency tests (test/test_async.cpp: one Manager from eight
# threads, one sequence from two, asynchronous sequences and GPU-side
# dependencies) with ThreadSanitizer and runs them with the validation layer
# on. Any data race report stops the run with a failure.
#   scripts/test-tsan.sh [BUILD_DIR]   (default build-tsan)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-build-tsan}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DKOMPUTE_OPT_BUILD_TESTS=ON -DKOMPUTE_OPT_BUILD_EXAMPLES=OFF \
    -DKOMPUTE_OPT_BUILD_BENCHMARKS=OFF -DKOMPUTE_OPT_SANITIZE=thread
cmake --build "$dir" -j "$(nproc)" --target test_async
KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation \
VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT \
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    "$dir/test/test_async"

#!/usr/bin/env bash
# Builds the concurrency tests with ThreadSanitizer and runs them with the
# validation layer on: test/test_async.cpp (one Manager from eight threads,
# one sequence from two, asynchronous sequences and GPU-side dependencies)
# and test/test_lifetime.cpp (objects destroyed in every order, on other
# threads while the Manager is destroyed, and the randomized
# create/record/evaluate/destroy run), and test/test_loader.cpp (the Vulkan
# loader opened by threads that make their first Managers at once). Any data
# race report stops the run with a failure.
#   scripts/test-tsan.sh [BUILD_DIR]   (default build-tsan)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-build-tsan}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DKOMPUTE_OPT_BUILD_TESTS=ON -DKOMPUTE_OPT_BUILD_EXAMPLES=OFF \
    -DKOMPUTE_OPT_BUILD_BENCHMARKS=OFF -DKOMPUTE_OPT_SANITIZE=thread
cmake --build "$dir" -j "$(nproc)" --target test_async test_lifetime test_loader
export KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation
export VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
# Races inside lavapipe itself are suppressed (tsan-suppressions.txt says
# why).
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan-suppressions.txt"
timeout 900 "$dir/test/test_async"
timeout 900 "$dir/test/test_loader"
# Every destruction step (60 orders) and 4000 random steps: the full random
# run is in the validation-layer suite (CTest).
KOMPUTE_TEST_RANDOM_STEPS=4000 timeout 900 "$dir/test/test_lifetime"

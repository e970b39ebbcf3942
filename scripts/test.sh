#!/usr/bin/env bash
# Runs every test of Kompute, on whatever Vulkan driver is there (Mesa's
# lavapipe on machines without a GPU), with the Khronos validation layer on:
#   1. the test suite and the examples (Release, warnings as errors; the
#      benchmarks are built too)
#   2. the test suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. the installed package used by an outside program, through
#      find_package(kompute) and through pkg-config (static library)
#   4. a shared-library build, installed and used through find_package; the
#      installed kompute-info run without a Vulkan loader (it is opened at
#      run time: nothing links libvulkan)
#   5. the Python module kp, installed with pip in a fresh venv, and its
#      pytest suites
#   6. the concurrency tests under ThreadSanitizer, and a quick run of the
#      installed kompute-bench with --plot (refused without matplotlib, then
#      drawn with it)
#   7. the documentation site (scripts/docs.sh with DOCS_STRICT=1: Doxygen
#      errors and undocumented public names fail it), where doxygen is
#      installed (scripts/install-deps.sh --docs; CI installs it)
# Build folders: ${BUILD_PREFIX}-test, -asan, -shared (BUILD_PREFIX=build).
# TEST_TIMEOUT: seconds one test binary may run (600).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
JOBS=$(nproc)
BUILD_PREFIX=${BUILD_PREFIX:-build}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kompute-test.XXXXXX")

# --- Step bookkeeping and the closing summary ----------------------------------

# CPU seconds used by finished child processes: on a busy machine the wall
# time says little, the CPU time still compares.
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' /proc/$$/stat
}

SCRIPT_START=$SECONDS
STEP_NAME=""
STEP_START=0
STEP_CPU=0
SUMMARY=()
PASSED=0

begin_step() {
    STEP_NAME=$1
    STEP_START=$SECONDS
    STEP_CPU=$(cpu_seconds)
    echo
    echo "=== $STEP_NAME"
}

end_step() {
    SUMMARY+=("$(printf '  %-42s %5ss %6ss cpu  %s' "$STEP_NAME" $((SECONDS - STEP_START)) \
        $(($(cpu_seconds) - STEP_CPU)) "${1:-ok}")")
    STEP_NAME=""
}

finish() {
    local status=$?
    rm -rf "$WORK"
    echo
    echo "=== summary: $((SECONDS - SCRIPT_START))s in all, $(cpu_seconds)s of CPU"
    if [ ${#SUMMARY[@]} -gt 0 ]; then
        printf '%s\n' "${SUMMARY[@]}"
    fi
    if [ $status -ne 0 ]; then
        echo "  FAILED${STEP_NAME:+ in: $STEP_NAME} (exit status $status)"
        echo "test.sh: $PASSED passed, 1 failed"
    else
        echo "test.sh: $PASSED passed, 0 failed"
    fi
    exit $status
}
trap finish EXIT

# Configures and builds a tree: build DIR CMAKE_ARGS...
build() {
    local dir=$1
    shift
    local launcher=()
    if command -v ccache >/dev/null 2>&1; then
        launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    cmake -S "$ROOT" -B "$dir" "${launcher[@]}" "$@"
    cmake --build "$dir" -j "$JOBS"
}

# Runs a build's CTest suite; adds its count to PASSED; the summary gets
# CTest's own verdict line. A test binary that hangs (a driver deadlock, say)
# is stopped after TEST_TIMEOUT seconds instead of eating CI's time limit.
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
run_ctest() {
    local dir=$1 log
    log="$WORK/ctest-$(basename "$1").log"
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$JOBS" \
        --timeout "$TEST_TIMEOUT" 2>&1 | tee "$log"
    local total
    total=$(sed -nE 's/.*tests failed out of ([0-9]+).*/\1/p' "$log" | tail -n 1)
    PASSED=$((PASSED + ${total:-0}))
    CTEST_VERDICT=$(grep -E 'tests passed, .* tests failed out of' "$log" | tail -n 1)
}

# Runs every example program of a build (each prints its device and result).
run_examples() {
    local count=0 program
    for program in "$1"/examples/*/kompute_*; do
        if [ ! -f "$program" ] || [ ! -x "$program" ]; then
            continue
        fi
        echo "--- $program"
        "$program"
        count=$((count + 1))
        PASSED=$((PASSED + 1))
    done
    EXAMPLES_RUN=$count
}

# Builds test/package_consumer against an install prefix with
# find_package(kompute) and runs it: consume_cmake PREFIX BUILD_DIR
consume_cmake() {
    cmake -S "$ROOT/test/package_consumer" -B "$2" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$1"
    cmake --build "$2" -j "$JOBS"
    "$2/package_consumer"
    "$2/vulkan_caller"
    PASSED=$((PASSED + 2))
}

# --- Setup -----------------------------------------------------------------------

begin_step "install dependencies"
scripts/install-deps.sh
end_step

# Every Manager (tests, examples, consumers) enables the Khronos validation
# layer with synchronization validation. The tests also set this up themselves
# through CTest's ENVIRONMENT.
export KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation
export VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT

# --- 1. Test suite ---------------------------------------------------------------

STATIC_PREFIX="$WORK/install-static"
begin_step "build tests (Release, -Werror)"
build "$BUILD_PREFIX-test" -DCMAKE_BUILD_TYPE=Release \
    -DKOMPUTE_OPT_BUILD_TESTS=ON -DKOMPUTE_OPT_BUILD_EXAMPLES=ON \
    -DKOMPUTE_OPT_BUILD_BENCHMARKS=ON \
    -DKOMPUTE_OPT_WARNINGS_AS_ERRORS=ON \
    -DCMAKE_INSTALL_PREFIX="$STATIC_PREFIX"
end_step

begin_step "ctest"
run_ctest "$BUILD_PREFIX-test"
end_step "$CTEST_VERDICT"

begin_step "examples"
run_examples "$BUILD_PREFIX-test"
end_step "$EXAMPLES_RUN example(s) ran"

# --- 2. Sanitizers ---------------------------------------------------------------

# Debug with line tables only (-g1): enough for the sanitizers' stack traces,
# and quicker to build. The examples already ran above.
begin_step "build tests (ASan+UBSan, Debug)"
build "$BUILD_PREFIX-asan" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DKOMPUTE_OPT_BUILD_TESTS=ON -DKOMPUTE_OPT_BUILD_EXAMPLES=OFF \
    -DKOMPUTE_OPT_BUILD_BENCHMARKS=OFF -DKOMPUTE_OPT_SANITIZE=address,undefined
end_step

# The Vulkan driver, LLVM and the validation layer are not built with the
# sanitizers: scripts/sanitizers/ keeps them loaded until exit (so leak
# reports name them) and suppresses the leaks inside them that are not ours.
begin_step "ctest (ASan+UBSan)"
cc -shared -fPIC -O2 -o "$WORK/libkeep_libraries_loaded.so" \
    scripts/sanitizers/keep_libraries_loaded.c
LD_PRELOAD="$WORK/libkeep_libraries_loaded.so" \
ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
LSAN_OPTIONS=suppressions=$ROOT/scripts/sanitizers/lsan.supp:print_suppressions=0 \
    run_ctest "$BUILD_PREFIX-asan"
end_step "$CTEST_VERDICT"

# --- 3. Installed package (static library) ---------------------------------------

begin_step "install + find_package consumer (static)"
cmake --install "$BUILD_PREFIX-test" --prefix "$STATIC_PREFIX"
consume_cmake "$STATIC_PREFIX" "$WORK/consumer-static"
end_step

begin_step "pkg-config consumer (static)"
pc_file=$(find "$STATIC_PREFIX" -name kompute.pc -print -quit)
[ -n "$pc_file" ] || { echo "kompute.pc was not installed" >&2; exit 1; }
pc_flags=$(PKG_CONFIG_PATH=$(dirname "$pc_file") pkg-config --cflags --libs kompute)
echo "pkg-config --cflags --libs kompute: $pc_flags"
# shellcheck disable=SC2086 # the flags are meant to be split into words
g++ -o "$WORK/consumer-pkgconfig" "$ROOT/test/package_consumer/main.cpp" $pc_flags
"$WORK/consumer-pkgconfig"
# shellcheck disable=SC2086
g++ -o "$WORK/vulkan-caller-pkgconfig" "$ROOT/test/package_consumer/vulkan_caller.cpp" $pc_flags
"$WORK/vulkan-caller-pkgconfig"
PASSED=$((PASSED + 2))
end_step

# --- 4. Shared library -------------------------------------------------------------

SHARED_PREFIX="$WORK/install-shared"
begin_step "build + install shared library"
build "$BUILD_PREFIX-shared" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DKOMPUTE_OPT_BUILD_TESTS=OFF -DKOMPUTE_OPT_BUILD_EXAMPLES=OFF \
    -DKOMPUTE_OPT_BUILD_BENCHMARKS=OFF -DKOMPUTE_OPT_WARNINGS_AS_ERRORS=ON \
    -DCMAKE_INSTALL_PREFIX="$SHARED_PREFIX"
cmake --install "$BUILD_PREFIX-shared" --prefix "$SHARED_PREFIX"
end_step

begin_step "find_package consumer (shared)"
consume_cmake "$SHARED_PREFIX" "$WORK/consumer-shared"
# (ldd's output is captured first: grep -q would stop reading early, and
# pipefail would then count ldd's SIGPIPE as a failure.)
linked=$(ldd "$WORK/consumer-shared/package_consumer")
if ! grep -q "libkompute\.so" <<<"$linked"; then
    echo "the consumer is not linked against libkompute.so" >&2
    exit 1
fi
end_step

# --- The Vulkan loader, opened at run time --------------------------------------

# Nothing of Kompute links libvulkan (test_byov, test_capabilities and
# kompute-bench call the C API and link it themselves). The installed
# kompute-info, static and shared, run without a loader: with
# KOMPUTE_ENV_VULKAN_LOADER naming no file, and, where a mount namespace can
# be made, with the system's loader itself replaced by an empty file. Each
# must say "No Vulkan loader found" and exit with status 1.
begin_step "Vulkan loader at run time (kompute-info without it)"
shared_library=$(find "$SHARED_PREFIX" -name 'libkompute.so.*' -type f -print -quit)
[ -n "$shared_library" ] || { echo "libkompute.so was not installed" >&2; exit 1; }
for binary in "$shared_library" "$STATIC_PREFIX/bin/kompute-info" "$SHARED_PREFIX/bin/kompute-info" \
        "$WORK/consumer-static/package_consumer" "$WORK/consumer-pkgconfig" \
        "$WORK/consumer-shared/package_consumer" "$BUILD_PREFIX-test/test/test_tensor"; do
    needed=$(readelf -d "$binary" | grep NEEDED || true)
    if grep -q libvulkan <<<"$needed"; then
        printf '%s links the Vulkan loader:\n%s\n' "$binary" "$needed" >&2
        exit 1
    fi
done
echo "no NEEDED libvulkan: libkompute.so, kompute-info, the three consumers, test_tensor"
# Programs that call Vulkan themselves and link only Kompute get the loader
# from the package (CMake and pkg-config), as upstream's users did.
for binary in "$WORK/consumer-static/vulkan_caller" "$WORK/vulkan-caller-pkgconfig" \
        "$WORK/consumer-shared/vulkan_caller"; do
    needed=$(readelf -d "$binary" | grep NEEDED || true)
    if ! grep -q libvulkan <<<"$needed"; then
        printf '%s calls Vulkan but does not link the loader:\n%s\n' "$binary" "$needed" >&2
        exit 1
    fi
done
echo "NEEDED libvulkan: the three programs that call Vulkan themselves"
# without_loader FRAGMENT COMMAND...: COMMAND fails with status 1 saying
# "No Vulkan loader found" and FRAGMENT.
without_loader() {
    local fragment=$1 output status
    shift
    set +e
    output=$("$@" 2>&1)
    status=$?
    set -e
    echo "$output"
    if [ $status -ne 1 ] || ! grep -q "No Vulkan loader found" <<<"$output" ||
        ! grep -qF "$fragment" <<<"$output"; then
        echo "expected exit status 1 (got $status) and 'No Vulkan loader found', '$fragment'" >&2
        exit 1
    fi
}
# (The installed shared kompute-info finds libkompute.so through this.)
with_library=(env "LD_LIBRARY_PATH=$(dirname "$shared_library")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
without_loader "/nonexistent/libvulkan.so.1" \
    env KOMPUTE_ENV_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$STATIC_PREFIX/bin/kompute-info"
without_loader "/nonexistent/libvulkan.so.1" "${with_library[@]}" \
    KOMPUTE_ENV_VULKAN_LOADER=/nonexistent/libvulkan.so.1 "$SHARED_PREFIX/bin/kompute-info"
PASSED=$((PASSED + 2))
# The variable naming the loader's own file opens that file.
loader=$(readlink -f "$(ldconfig -p | awk '/libvulkan\.so\.1 /{ print $NF; exit }')")
report=$("${with_library[@]}" KOMPUTE_ENV_VULKAN_LOADER="$loader" "$SHARED_PREFIX/bin/kompute-info" --json)
grep -qF "\"vulkan_loader_library\": \"$loader\"" <<<"$report" ||
    { echo "kompute-info does not report $loader as the loader it opened" >&2; exit 1; }
if [ -f "$loader" ] && unshare --mount true 2>/dev/null; then
    without_loader "apt-get install libvulkan1" "${with_library[@]}" unshare --mount sh -c \
        'mount --bind /dev/null "$1" && exec "$2"' sh "$loader" "$SHARED_PREFIX/bin/kompute-info"
    PASSED=$((PASSED + 1))
    end_step
else
    end_step "ok (no mount namespace here: the system's loader stayed in place)"
fi

# --- 5. Python tests ---------------------------------------------------------------

# scripts/test-python.sh builds the kp module the way a user installs it
# (pip install . in a fresh venv: PyPI is needed) and runs pytest; a pytest
# run that collects no test exits 5 and fails this script.
begin_step "Python tests (pip install ., pytest)"
# The venv stays (in $WORK) for kompute-bench's Python case below.
# The LLM runner's tests also run the kompute-llm built in step 1.
KOMPUTE_LLM="$ROOT/$BUILD_PREFIX-test/llm/kompute-llm" \
    VENV="$WORK/venv" scripts/test-python.sh 2>&1 | tee "$WORK/pytest.log"
python_passed=$(sed -nE 's/^=+ (.* )?([0-9]+) passed.*/\2/p' "$WORK/pytest.log" | tail -n 1)
PASSED=$((PASSED + ${python_passed:-0}))
end_step "$(sed -nE 's/^=+ (.*(passed|failed).* in [^ ]+) =+$/\1/p' "$WORK/pytest.log" | tail -n 1)"

# --- 6. ThreadSanitizer and the benchmark sanity run ----------------------------

begin_step "concurrency tests under ThreadSanitizer"
scripts/test-tsan.sh "$BUILD_PREFIX-tsan"
PASSED=$((PASSED + 1))
end_step

# kompute-bench in quick mode: every case runs once on small sizes (no
# timing is judged here; docs/performance.md has the real figures). The
# installed program runs, with the scripts it installs: --plot first with an
# interpreter that lacks matplotlib (it must refuse at once and say how to
# get it), then for real with matplotlib in the test venv.
begin_step "kompute-bench --quick --plot (installed)"
BENCH="$STATIC_PREFIX/bin/kompute-bench"
printf '#!/bin/sh\nexec python3 -S "$@"\n' > "$WORK/python-without-site"
chmod +x "$WORK/python-without-site"
set +e
refusal=$(KOMPUTE_BENCH_PYTHON="$WORK/python-without-site" "$BENCH" --quick --plot "$WORK/none.png" 2>&1)
refused=$?
set -e
echo "$refusal"
if [ $refused -ne 2 ] || ! grep -q "pip install kp\[plot\]" <<<"$refusal"; then
    echo "kompute-bench --plot without matplotlib: expected exit status 2 and how to install it" >&2
    exit 1
fi
"$WORK/venv/bin/python" -m pip install -q matplotlib
# Case i runs the Python script with the venv's kp.
KOMPUTE_BENCH_PYTHON="$WORK/venv/bin/python" \
    "$BENCH" --quick --json "$WORK/bench.json" --plot "$WORK/bench.png"
[ -s "$WORK/bench.png" ] || { echo "kompute-bench --plot wrote no picture" >&2; exit 1; }
# Case a holds a warm eval() to no heap allocation only where the raw Vulkan
# round trips allocate nothing either: the validation layer allocates in
# every submit, so that check runs once more without it.
KOMPUTE_ENV_DEBUG_LAYERS= "$BENCH" --quick --filter a_eval_roundtrip
PASSED=$((PASSED + 3))
end_step

# --- 7. Documentation ------------------------------------------------------------

# The API reference and user guide, from the test venv's kp (seconds), with
# warnings as errors: every public name documented. doxygen is optional here
# (scripts/install-deps.sh --docs; .ci/run installs it): without it the step
# says so and is skipped.
begin_step "documentation (scripts/docs.sh)"
if command -v doxygen >/dev/null 2>&1; then
    DOCS_STRICT=1 PYTHON="$WORK/venv/bin/python" DOCS_DIR="$WORK/docs" scripts/docs.sh
    PASSED=$((PASSED + 1))
    end_step
else
    echo "doxygen is not installed (scripts/install-deps.sh --docs installs it): docs not built"
    end_step "skipped: no doxygen"
fi

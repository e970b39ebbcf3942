#!/usr/bin/env bash
# Builds Kompute (Release) and runs the demo programs, which print the device
# they ran on and their results.
#   BUILD_DIR   build folder (default: build)
set -euo pipefail

# The demo programs: examples/<name>/, binary <build>/examples/<name>/kompute_<name>.
DEMOS=(
    array_multiplication
    logistic_regression
)

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=$(nproc)

scripts/install-deps.sh

launcher=()
if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DKOMPUTE_OPT_BUILD_EXAMPLES=ON "${launcher[@]}"
cmake --build "$BUILD_DIR" -j "$JOBS"

for demo in "${DEMOS[@]}"; do
    echo
    echo "=== demo: $demo"
    "$BUILD_DIR/examples/$demo/kompute_$demo"
done
# The LLM runner on a tiny model it writes itself (random weights and a
# byte-level tokenizer: there is nothing to download), then its benchmark.
LLM="$BUILD_DIR/llm/kompute-llm"
MODEL="$BUILD_DIR/tiny-llama-q8_0.gguf"
echo
echo "=== demo: kompute-llm on a tiny generated model"
"$LLM" --random tiny:q8_0 --save "$MODEL"
"$LLM" --model "$MODEL" --prompt "Kompute runs Llama models on any GPU:" -n 24 --seed 1 --verbose
"$LLM" --random tiny:q8_0 --bench --bench-prompt 64 --bench-gen 16 --reps 3

echo
echo "demo: ${#DEMOS[@]} program(s) and kompute-llm ran successfully"

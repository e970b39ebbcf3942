#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gl (Vulkan loader
# and glvnd), .gl-extra (the validation layer package) and .gpu-bundle.tar.gz
# (see bundle.sh; GPU_BUNDLE names another bundle folder) carried along. Writes
# logs and results under $OUT.
#   scripts/gpu/run-on-device.sh [suites|bench|probe|latency|tests|tests-bf16|python-tests|examples|cuda|llm ...]
# latency: kompute-bench's cases a, b, c and i, each after 1 s of GPU work
# (the clock falls back when the GPU idles), and the CUDA latency reference,
# then a table of the figures (tools/latency_table.py).
# Run cuda before bench to see CUDA's GEMM and mat-vec figures in the bench's
# table (kompute-bench reads them from $OUT/cuda-matmul.txt).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
# libkompute opens the loader at run time (dlopen of libvulkan.so.1), which
# finds it through the ldconfig cache as the dynamic linker would, and
# through LD_LIBRARY_PATH where a loader is unpacked elsewhere.
ldconfig
if ! ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
# The validation layer, unpacked beside the tree rather than into /.
rm -rf /tmp/vvl && mkdir -p /tmp/vvl
for f in .gl-extra/*.deb; do dpkg -x "$f" /tmp/vvl; done
export VK_LAYER_PATH=/tmp/vvl/usr/share/vulkan/explicit_layer.d
B=${GPU_BUNDLE:-.gpu-bundle}
# bundle.sh packs the folder: the carried B.tar.gz is unpacked here, once
# per archive (a warm machine keeps the folder between calls).
if [ -f "$B.tar.gz" ] && ! [ "$B/.unpacked" -nt "$B.tar.gz" ]; then
    rm -rf "$B" && tar xzf "$B.tar.gz" -C "$(dirname "$B")" && touch "$B/.unpacked" ||
        { echo "could not unpack $B.tar.gz"; exit 1; }
fi
export LD_LIBRARY_PATH=$PWD/$B:/tmp/vvl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
# The Python module (bundle.sh), for kompute-bench's case i.
if [ -d $B/site/kp ]; then
    export PYTHONPATH=$PWD/$B/site${PYTHONPATH:+:$PYTHONPATH}
    export KOMPUTE_BENCH_PYTHON_SCRIPT=$PWD/$B/bench-python/eval_overhead.py
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(examples tests bench cuda)
for step in "${steps[@]}"; do
    case "$step" in
    examples)
        for e in array_multiplication logistic_regression; do
            timeout 60 $B/kompute_$e 2>&1 | tee -a "$OUT/examples.txt"
        done
        timeout 120 $B/kompute_matmul 2048 2>&1 | tee -a "$OUT/examples.txt"
        ;;
    tests)
        export KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation
        export VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
        # The validation layer of .gl-extra (1.4.309) does not know
        # VK_KHR_shader_bfloat16 and reports a device that enables it, and
        # every bf16 cooperative-matrix module, as errors: bf16 matrices stay
        # off under it (tests-bf16 runs them without the layer).
        export KOMPUTE_ENV_DISABLE=${KOMPUTE_ENV_DISABLE-bfloat16}
        # One log per binary would pass the device tool's 8 files: the
        # logs of the failed ones go into one file.
        pass=0; fail=0; logs=$(mktemp -d)
        : > "$OUT/tests-failed.log"
        for t in $B/test_*; do
            log="$logs/$(basename "$t").log"
            if timeout 300 "$t" --gtest_brief=1 > "$log" 2>&1; then
                pass=$((pass+1))
            else
                fail=$((fail+1)); echo "FAILED: $t"; tail -40 "$log"
                { echo "=== $t"; cat "$log"; } >> "$OUT/tests-failed.log"
            fi
        done
        echo "test binaries: $pass passed, $fail failed" | tee "$OUT/tests.txt"
        unset KOMPUTE_ENV_DEBUG_LAYERS VK_LAYER_ENABLES KOMPUTE_ENV_DISABLE
        ;;
    suites)
        # Every C++ test binary and every pytest file of the bundle, 8 at a
        # time, validation layer on (bf16 matrices off under it, as in the
        # tests step), each binary or file limited to SUITES_BINARY_TIMEOUT
        # seconds (420) and each test to SUITES_TEST_TIMEOUT (150: under the
        # layer, beside 7 other processes, the int-dot mat-vec modes' test
        # spends past 60 s creating pipelines, 48 s alone; docs/gpu-results.md);
        # a test
        # past its limit has every thread's stack printed (cuda-gdb attaches
        # to it). Writes SUITES_TAG-summary.txt (the table), -failed.log and
        # -logs.tar.gz into $OUT as it goes (scripts/gpu/run_suites.py).
        # About 4 minutes on the H200.
        PATH=$PATH:/usr/local/cuda/bin \
        KOMPUTE_LLM=$PWD/$B/kompute-llm \
        PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/$B/site-test \
        KOMPUTE_ENV_DISABLE=${KOMPUTE_ENV_DISABLE-bfloat16} \
        KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation \
        VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT \
            python3 "$(dirname "$0")"/run_suites.py "$B" "$OUT" --tag "${SUITES_TAG:-suites}" \
            --jobs "${SUITES_JOBS:-8}" --binary-timeout "${SUITES_BINARY_TIMEOUT:-420}" \
            --test-timeout "${SUITES_TEST_TIMEOUT:-150}" ${SUITES_ARGS:-}
        ;;
    tests-bf16)
        # The matrix kernels' suite with bf16 cooperative matrices on, without
        # the validation layer (see tests).
        KOMPUTE_TEST_VALIDATION=0 timeout 300 $B/test_kernels_matmul --gtest_brief=1 > "$OUT/test_kernels_matmul-bf16.log" 2>&1
        echo "test_kernels_matmul (bf16 on, no validation layer): rc $?" | tee -a "$OUT/tests.txt"
        tail -5 "$OUT/test_kernels_matmul-bf16.log"
        ;;
    python-tests)
        # The pytest suites against the bundle's kp, validation layer on
        # (bf16 matrices off under it, as in the tests step).
        KOMPUTE_ENV_DISABLE=${KOMPUTE_ENV_DISABLE-bfloat16} \
        KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation \
        VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT \
            timeout 300 python3 -m pytest -q -p no:cacheprovider $B/python-tests 2>&1 | tail -15 | tee "$OUT/python-tests.txt"
        ;;
    bench)
        # BENCH_ARGS: more options, e.g. "--filter g_".
        # The GPU's clocks and power every 100 ms while the suite runs.
        nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw \
            --format=csv -lms 100 > "$OUT/clocks.csv" 2>&1 &
        clocks=$!
        [ -f "$OUT/cuda-matmul.txt" ] && export KOMPUTE_BENCH_CUDA_RESULTS=$OUT/cuda-matmul.txt
        timeout 400 $B/kompute-bench ${BENCH_ARGS:-} --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
        kill $clocks 2>/dev/null; wait $clocks 2>/dev/null
        ;;
    latency)
        (cd /tmp && nvcc -O2 -arch=sm_90 "$OLDPWD/$B/latency.cu" -o cuda-latency) 2>&1 | tail -3
        nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw,utilization.gpu \
            --format=csv -lms 100 > "$OUT/clocks.csv" 2>&1 &
        clocks=$!
        /tmp/cuda-latency warm 1.5
        # Few files (the device tool returns 8): one log, one JSON per case
        # kept in /tmp and merged into latency.json.
        runs=$(mktemp -d)
        for case in a_eval b_one c_dispatch i_python; do
            /tmp/cuda-latency warm 1.0
            timeout 150 $B/kompute-bench --filter $case ${BENCH_ARGS:-} --json "$runs/$case.json" \
                >> "$OUT/latency.log" 2>&1 || { echo "kompute-bench --filter $case failed"; tail -20 "$OUT/latency.log"; }
        done
        (/tmp/cuda-latency && /tmp/cuda-latency block) 2>&1 | tee "$OUT/cuda-latency.txt"
        kill $clocks 2>/dev/null; wait $clocks 2>/dev/null
        python3 -c 'import json, sys; runs = [json.load(open(p)) for p in sys.argv[2:]]; runs[0]["measurements"] = [m for r in runs for m in r["measurements"]]; json.dump(runs[0], open(sys.argv[1], "w"), indent=1)' \
            "$OUT/latency.json" "$runs"/*.json
        python3 $B/latency_table.py "$OUT/latency.json" "$OUT/cuda-latency.txt" | tee "$OUT/latency-table.txt"
        ;;
    llm)
        # kompute-llm's llama-bench-style benchmark (pp512 and tg128) on the
        # Llama-3-8B shape with random weights, for each of LLM_TYPES (default
        # "f16 q4_0"; q8_0 as well: LLM_TYPES="f16 q8_0 q4_0"), median of
        # LLM_REPS (3) after a warm-up, JSON per type; the last type is also
        # profiled (GPU time per operation). Then the runner's suites: the C++
        # forward pass against its host reference and the pytest one against
        # NumPy (gguf from the bundle's site-test), validation layer on.
        # About 90 s on the H200 (most of it making and uploading the weights).
        types=(${LLM_TYPES:-f16 q4_0})
        for type in "${types[@]}"; do
            profile=()
            [ "$type" = "${types[${#types[@]}-1]}" ] && profile=(--profile)
            timeout ${LLM_TIMEOUT:-90} $B/kompute-llm --random llama-8b:$type --bench --reps ${LLM_REPS:-3} -v \
                "${profile[@]}" --json "$OUT/llm-$type.json" 2>&1 | tee -a "$OUT/llm.txt"
        done
        # bf16 matrices off under the validation layer, as in the tests step.
        export KOMPUTE_ENV_DISABLE=${KOMPUTE_ENV_DISABLE-bfloat16}
        KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation \
        VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT \
            timeout 60 $B/test_llm_model --gtest_brief=1 2>&1 | tail -20 | tee -a "$OUT/llm-tests.txt"
        KOMPUTE_LLM=$PWD/$B/kompute-llm PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/$B/site-test \
        KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation \
        VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT \
            timeout 120 python3 -m pytest -q -p no:cacheprovider -rs $B/python-tests/test_llm_model.py \
            $B/python-tests/test_kernels_attention.py 2>&1 | tail -15 | tee -a "$OUT/llm-tests.txt"
        unset KOMPUTE_ENV_DISABLE
        ;;
    probe)
        # kompute-kernel-probe (benchmarks/probe): every GEMM and mat-vec
        # variant, each checked against the host, timed with GPU timestamps
        # (PROBE_ARGS: e.g. "--filter matvec"; PROBE_SECONDS, default 200).
        # Its summary (the best row of each case) goes to the reply's tail.
        timeout "${PROBE_SECONDS:-200}" $B/kompute-kernel-probe ${PROBE_ARGS:-} > "$OUT/probe.txt" 2>&1
        echo "kompute-kernel-probe: rc $?"
        grep -A80 "^summary: best" "$OUT/probe.txt" | cut -c1-130
        ;;
    cuda)
        # The references of benchmarks/cuda: transfers and copies, then the
        # round trip and launch costs (CUDA polls while it waits by
        # default; "block" waits blocking, like a fence wait).
        (cd /tmp && nvcc -O2 -arch=sm_90 "$OLDPWD/$B/bandwidth.cu" -o cuda-bandwidth && ./cuda-bandwidth \
            && nvcc -O2 -arch=sm_90 "$OLDPWD/$B/latency.cu" -o cuda-latency \
            && ./cuda-latency warm 1.5 && ./cuda-latency && ./cuda-latency block) 2>&1 | tee "$OUT/cuda.txt"
        # cuBLAS GEMM, the mma.sync peak, mat-vec and read bandwidth: the
        # references of kompute-bench's gemm and matvec cases (run this step
        # before bench to see them in its table).
        (cd /tmp && nvcc -O3 -arch=sm_90 "$OLDPWD/$B/matmul.cu" -lcublas -o cuda-matmul && ./cuda-matmul) 2>&1 | tee "$OUT/cuda-matmul.txt"
        ;;
    esac
done

#!/usr/bin/env bash
# The matrix kernels' run on the GPU machine (device tool), from the
# repository root, with .gl, .gl-extra and the bundle folder carried
# (GPU_BUNDLE, default .gpu-bundle-matmul; made by bundle-probe.sh):
#   tests  the matrix kernels' suites with the validation layer on
#   probe  kompute-kernel-probe (PROBE_ARGS, e.g. "--filter gemm")
#   cuda   benchmarks/cuda/matmul.cu, built here (nvcc, cuBLAS)
#   bench  kompute-bench --filter gemm,matvec with CUDA's figures beside
# Logs under $OUT; the reply's tail gets the summaries.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
B=${GPU_BUNDLE:-.gpu-bundle-matmul}
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
rm -rf /tmp/vvl && mkdir -p /tmp/vvl
for f in .gl-extra/*.deb; do dpkg -x "$f" /tmp/vvl; done
export VK_LAYER_PATH=/tmp/vvl/usr/share/vulkan/explicit_layer.d
export LD_LIBRARY_PATH=$PWD/$B:/tmp/vvl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
(cd /tmp && nvcc -O3 -arch=sm_90 "$OLDPWD/$B/matmul.cu" -lcublas -o cuda-matmul) > "$OUT/nvcc.txt" 2>&1 &
nvcc=$!
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw --format=csv -lms 250 > "$OUT/clocks.csv" 2>&1 &
clocks=$!
SECONDS=0
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests probe cuda bench)
for step in "${steps[@]}"; do
    case "$step" in
    tests)
        for t in test_coopmat_rewrite test_kernels_matmul; do
            KOMPUTE_ENV_DEBUG_LAYERS=VK_LAYER_KHRONOS_validation \
            VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT \
                timeout "${TEST_SECONDS:-90}" "$B/$t" --gtest_brief=1 > "$OUT/$t.log" 2>&1
            echo "$t: rc $? after ${SECONDS}s"
        done
        ;;
    probe)
        timeout "${PROBE_SECONDS:-90}" "$B"/kompute-kernel-probe ${PROBE_ARGS:-} > "$OUT/probe.txt" 2>&1
        echo "probe: rc $? after ${SECONDS}s"
        ;;
    cuda)
        wait $nvcc
        timeout 60 /tmp/cuda-matmul > "$OUT/cuda.txt" 2>&1
        echo "cuda: rc $? after ${SECONDS}s"
        ;;
    bench)
        KOMPUTE_BENCH_CUDA_RESULTS=$OUT/cuda.txt timeout "${BENCH_SECONDS:-120}" "$B"/kompute-bench \
            --filter gemm,matvec --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
        echo "bench: rc $? after ${SECONDS}s"
        ;;
    esac
done
kill $clocks 2>/dev/null

echo "=== tests"
for t in test_coopmat_rewrite test_kernels_matmul; do
    grep -m 20 "FAILED\|Failure\|validation\|PASSED\|tests ran" "$OUT/$t.log" 2>/dev/null | cut -c1-300
done
echo "=== probe"
grep -m 10 "BAD\|failed" "$OUT/probe.txt" 2>/dev/null | cut -c1-300
sed -n '/^summary/,$p' "$OUT/probe.txt" 2>/dev/null | cut -c1-200
echo "=== cuda"
cat "$OUT/cuda.txt" 2>/dev/null
tail -3 "$OUT/nvcc.txt"
echo "=== bench"
grep -v "^running\|^wrote" "$OUT/bench.txt" 2>/dev/null | tail -45
